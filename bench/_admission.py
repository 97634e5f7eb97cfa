"""What admitting a run costs the app's handler: `dispatch`'s CPU per run."""

from __future__ import annotations

import time

from bench._agent import SCOPE
from bench._stores import fresh_store
from psych_runtime import AgentSpec, WorkflowSpec, dispatch


async def admission_cpu_us(
    url: str, spec: AgentSpec | WorkflowSpec, input: str, runs: int = 200
) -> float:
    """CPU microseconds of this process per `dispatch` of `spec`, the same spec object each
    time (as a handler holds its spec), after a few admissions that warm up the store."""
    async with fresh_store(url) as store:
        scoped = store.scoped(SCOPE)
        for _ in range(10):
            await dispatch(scoped, spec, input)
        started = time.process_time()
        for _ in range(runs):
            await dispatch(scoped, spec, input)
        return (time.process_time() - started) * 1e6 / runs

"""A worker process for the memory crash test: one turn remembers a fact about the run's user.

Run as ``python -m tests.integration.memory_crash_worker DB [FAULT]``: it serves every run of
`SPEC` in the SQLite file DB (runs and user memory in the one file) until SIGTERM; with FAULT
(a fault point) it kills itself with SIGKILL the first time it reaches that point. Leases are
short, so another worker takes a run over soon after this one dies.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys

import psych_runtime
from psych_runtime import AgentSpec, Leases, ModelRef, Runtime
from psych_runtime.testing import faults
from psych_store_sqlite import SQLiteStore, SQLiteUserMemory
from tests.integration._scripted import ByTurn, Calls

SPEC = AgentSpec(name="memory-crash", model=ModelRef(model="scripted"), memory=True, max_turns=4)

FACT = "Prefers tea, no sugar"

TURNS: list[Calls] = [[("remember", {"fact": FACT})], []]


async def main() -> None:
    if len(sys.argv) > 2:
        faults.arm(sys.argv[2])
    store = SQLiteStore(sys.argv[1])
    memory = SQLiteUserMemory(sys.argv[1])
    worker = psych_runtime.Worker(
        store,
        Runtime(
            model=ByTurn(TURNS),
            memory=memory,
            leases=Leases(ttl=dt.timedelta(seconds=2)),
        ),
        poll_interval=0.05,
    )
    print("ready", flush=True)
    try:
        await worker.run()
    finally:
        await memory.close()


if __name__ == "__main__":
    asyncio.run(main())

"""The benchmark agent: N tool calls, one per model turn, then an answer.

The model decides from the conversation alone, so any worker process can serve any turn.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from bench._listing import with_listing
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope, Usage, dispatch
from psych_runtime.ports import (
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    Store,
    ToolResultMessage,
)

SCOPE = Scope(tenant="bench")
"""The tenant every benchmark's runs belong to."""


def bench_spec(tool_calls: int) -> AgentSpec:
    """A spec whose runs make `tool_calls` calls of one tool."""
    return AgentSpec(
        name=f"bench-{tool_calls}",
        model=ModelRef(model="bench"),
        tools=(CodeTool(name="step"),),
        max_turns=tool_calls + 1,
    )


async def admit_runs(store: Store, runs: int, calls: int) -> list[str]:
    """Admit `runs` runs of the benchmark agent making `calls` calls each, for a worker; their
    ids, in order."""
    scoped = store.scoped(SCOPE)
    spec = bench_spec(calls)
    return [await dispatch(scoped, spec, f"run {index}") for index in range(runs)]


async def step(index: int) -> dict[str, int]:
    """One unit of work."""
    return {"index": index, "done": 1}


def step_returning(result_bytes: int) -> Callable[[int], Awaitable[object]]:
    """A `step` tool whose result is about `result_bytes` of JSON (rows of a listing, as a
    search or a database tool returns), for what a step costs with a result of that size;
    0: `step` itself."""
    return with_listing(step, result_bytes)


class StepModel:
    """Calls `step` until the run has made `calls` calls, then answers."""

    def __init__(self, calls: int) -> None:
        self.calls = calls

    async def complete(self, request: ModelRequest) -> ModelResponse:
        # The turn is read off the last tool result, so the model costs the same at any turn.
        last = request.messages[-1]
        turn = json.loads(last.content)["index"] + 1 if isinstance(last, ToolResultMessage) else 0
        if turn < self.calls:
            call = ModelToolCall(name="step", arguments=f'{{"index": {turn}}}')
            return ModelResponse(
                model="bench",
                tool_calls=(call,),
                usage=Usage(input=50, output=10),
                usage_source="provider",
            )
        return ModelResponse(
            model="bench",
            text="all steps done",
            usage=Usage(input=60, output=5),
            usage_source="provider",
        )

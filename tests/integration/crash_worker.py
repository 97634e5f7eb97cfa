"""A worker process for the crash test: tools that count their effects in a ledger file.

Run as ``python -m tests.integration.crash_worker STORE_URL LEDGER``. Fault points are armed
through the environment (``PSYCH_FAULTS``, read by `psych_runtime.testing.faults`) by the
driver that starts it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import sys

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, ToolContext, Usage
from psych_runtime.ports import AssistantMessage, ModelRequest, ModelResponse, ModelToolCall
from psych_runtime.testing.faults import arm_from_environment
from tests.integration._stores import open_store

SPEC = AgentSpec(
    name="crash-test",
    model=ModelRef(model="scripted"),
    tools=(CodeTool(name="safe_effect", safe_to_retry=True), CodeTool(name="unsafe_effect")),
    max_turns=5,
)

TURNS: list[list[tuple[str, str]]] = [
    [("safe_effect", "a"), ("unsafe_effect", "b")],
    [("unsafe_effect", "c")],
    [],
]


class ScriptedModel:
    """Answers from the conversation alone, so any process can serve any turn of any run."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        await asyncio.sleep(random.uniform(0, 0.01))
        calls = tuple(
            ModelToolCall(name=name, arguments=f'{{"label": "{label}"}}')
            for name, label in TURNS[turn]
        )
        text = None if calls else "done"
        return ModelResponse(
            model="scripted", text=text, tool_calls=calls, usage=Usage(), usage_source="provider"
        )


def _ledger(kind: str, ctx: ToolContext, label: str) -> None:
    line = f"{kind} {ctx.idempotency_key} {label} {ctx.attempt} {os.getpid()}\n"
    with open(sys.argv[2], "a", encoding="utf-8") as ledger:
        ledger.write(line)
        ledger.flush()
        os.fsync(ledger.fileno())


async def safe_effect(label: str, ctx: ToolContext) -> str:
    """An effect that may safely happen twice."""
    _ledger("safe", ctx, label)
    await asyncio.sleep(random.uniform(0, 0.02))
    return f"safe {label}"


async def unsafe_effect(label: str, ctx: ToolContext) -> str:
    """An effect that must never happen twice."""
    _ledger("unsafe", ctx, label)
    await asyncio.sleep(random.uniform(0, 0.02))
    return f"unsafe {label}"


async def main() -> None:
    store = open_store(sys.argv[1])
    worker = psych_runtime.Worker(
        store,
        psych_runtime.Runtime(
            model=ScriptedModel(),
            tools=[safe_effect, unsafe_effect],
            leases=psych_runtime.Leases(
                ttl=dt.timedelta(seconds=float(os.environ.get("CRASH_LEASE_TTL", "1.5"))),
                max_attempts=1000,
            ),
        ),
        concurrency=4,
        poll_interval=0.05,
    )
    print("ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    arm_from_environment()  # PSYCH_FAULTS, set by the driver that started this process
    asyncio.run(main())

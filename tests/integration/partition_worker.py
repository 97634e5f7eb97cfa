"""A worker process on a test host of the partition test: its tool writes each effect's start
to a ledger file with the wall-clock time, before the effect.

Run as ``python -m tests.integration.partition_worker STORE_URL LEDGER HOST``, inside the host's
network namespace; the store URL names the database through that host's link.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
import time

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, ToolContext, Usage
from psych_runtime.ports import AssistantMessage, ModelRequest, ModelResponse, ModelToolCall
from tests.integration._stores import open_store

LEASE_TTL = dt.timedelta(seconds=2)
TURNS = 4
"""Model turns that call `charge` before the answer: each run has four unsafe effects."""

SPEC = AgentSpec(
    name="partition-test",
    model=ModelRef(model="scripted"),
    tools=(CodeTool(name="charge"),),
    max_turns=TURNS + 2,
)


class ScriptedModel:
    """Answers from the conversation alone, so either host can serve any turn of any run."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        calls = (
            (ModelToolCall(name="charge", arguments=f'{{"step": {turn}}}'),) if turn < TURNS else ()
        )
        return ModelResponse(
            model="scripted",
            text=None if calls else "done",
            tool_calls=calls,
            usage=Usage(),
            usage_source="provider",
        )


async def charge(step: int, ctx: ToolContext) -> str:
    """An effect that must never happen twice, nor after its attempt's lease ended."""
    _write(f"{sys.argv[3]} {time.time():.6f} {ctx.idempotency_key} {ctx.attempt}\n")
    await asyncio.sleep(0.2)
    return f"charged step {step}"


def _write(line: str) -> None:
    # Synchronous on purpose: the line is on disk before the effect begins.
    with open(sys.argv[2], "a", encoding="utf-8") as ledger:
        ledger.write(line)
        ledger.flush()
        os.fsync(ledger.fileno())


async def main() -> None:
    worker = psych_runtime.Worker(
        open_store(sys.argv[1]),
        psych_runtime.Runtime(
            model=ScriptedModel(),
            tools=[charge],
            leases=psych_runtime.Leases(ttl=LEASE_TTL, max_attempts=1000),
        ),
        concurrency=4,
        poll_interval=0.1,
        worker_id=f"host-{sys.argv[3]}",
    )
    print("ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())

"""A worker for the steering-queue race tests: runs that work, wait for approval and answer,
while user messages on every queue arrive from another process.

python -m tests.integration.queue_worker STORE_URL

The model decides from the conversation alone, so any worker can serve any turn: its first
call asks for `work` (a safe tool that takes a moment), its second for `gated` (which a person
approves), and after that it answers each user message in turn with ``ack: <message>``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import sys

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope, Usage
from psych_runtime.ports import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    UserMessage,
)
from tests.integration._stores import open_store

SCOPE = Scope(tenant="queues")
SPEC = AgentSpec(
    name="queues",
    model=ModelRef(model="scripted"),
    tools=(
        CodeTool(name="work", safe_to_retry=True),
        CodeTool(name="gated", requires_approval=True),
    ),
    max_turns=50,
)


class QueueModel:
    """Work, then a gated call, then an answer to the latest user message."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(random.uniform(0, 0.03))  # a model takes a moment: races widen
        answers = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if answers < 2:
            name = "work" if answers == 0 else "gated"
            call = ModelToolCall(name=name, arguments=json.dumps({}))
            return ModelResponse(model="scripted", tool_calls=(call,), usage=Usage())
        last = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
        return ModelResponse(model="scripted", text=f"ack: {last.text}", usage=Usage())


async def work() -> str:
    """Take a moment."""
    await asyncio.sleep(random.uniform(0.01, 0.08))
    return "worked"


async def gated() -> str:
    """Something a person approves first."""
    return "approved work done"


async def main(url: str) -> None:
    store = open_store(url)
    await store.migrate()
    worker = psych_runtime.Worker(
        store,
        psych_runtime.Runtime(
            model=QueueModel(),
            tools=[work, gated],
            leases=psych_runtime.Leases(ttl=dt.timedelta(seconds=1.5)),
        ),
        poll_interval=0.02,
        concurrency=4,
    )
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

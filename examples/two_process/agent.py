"""The agent both processes share: its spec, its tool, and a model for the demo."""

from __future__ import annotations

import os

import psych_runtime
from psych_runtime import AgentSpec
from psych_runtime.ports import AssistantMessage, ModelRequest, ModelResponse, ModelToolCall
from psych_store_sqlite import SQLiteStore

DATABASE = os.environ.get("PSYCH_DEMO_DB", "psych-demo.sqlite")

spec = AgentSpec(
    name="support",
    instructions="Help the customer with their order.",
    model=psych_runtime.ModelRef(model="demo"),
    tools=(psych_runtime.CodeTool(name="lookup_order", safe_to_retry=True),),
)


async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


class DemoModel:
    """Looks the order up, then answers: decided from the conversation, so any worker can
    serve any turn (a real deployment uses a real model client)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turns = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turns == 0:
            call = ModelToolCall(name="lookup_order", arguments='{"order_id": "A1"}')
            return ModelResponse(model="demo", tool_calls=(call,), usage_source="missing")
        return ModelResponse(model="demo", text="A1 has shipped.", usage_source="missing")


def store() -> SQLiteStore:
    """The SQLite file the handler, the worker and the watcher share."""
    return SQLiteStore(DATABASE)

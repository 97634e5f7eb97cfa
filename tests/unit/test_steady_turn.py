"""A run's tools are resolved once per attempt when nothing can change them between model
calls (no MCP server or A2A peer, no policy), and before every model call otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from psych_runtime import (
    AgentSpec,
    AllowAll,
    CodeTool,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Worker,
    dispatch,
)
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import ToolRegistry, Turn

SPEC = AgentSpec(name="steady", model=ModelRef(model="fake"), tools=(CodeTool(name="lookup"),))
HOME = Scope(tenant="acme", principal="ann")


def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[Turn]:
    """Every turn `ToolRegistry.resolve_turn` resolves, in order."""
    seen: list[Turn] = []
    resolve_turn = ToolRegistry.resolve_turn

    async def counted(self: ToolRegistry, *args: Any, **kwargs: Any) -> Turn:
        turn = await resolve_turn(self, *args, **kwargs)
        seen.append(turn)
        return turn

    monkeypatch.setattr(ToolRegistry, "resolve_turn", counted)
    return seen


def three_turns() -> FakeModel:
    return (
        FakeModel()
        .turn(tool_calls=[("lookup", {"order_id": "A1"})])
        .turn(tool_calls=[("lookup", {"order_id": "A2"})])
        .turn(text="done")
    )


async def test_a_steady_turn_is_resolved_once_for_every_model_call_of_the_attempt(
    resolutions: list[Turn],
) -> None:
    store = MemoryStore()
    await dispatch(store.scoped(HOME), SPEC, "look twice")
    model = three_turns()
    await Worker(store, Runtime(model=model, tools=[lookup])).run_until_idle()
    assert len(model.requests) == 3
    assert [turn.steady for turn in resolutions] == [True]
    first = model.requests[0].tools
    assert [tool.name for tool in first] == ["lookup"]
    assert all(request.tools == first for request in model.requests)


async def test_with_a_policy_the_tools_are_resolved_before_every_model_call(
    resolutions: list[Turn],
) -> None:
    class Counting(AllowAll):
        """Allows everything, counting how often it is asked to narrow."""

        def __init__(self) -> None:
            self.asked = 0

        def narrow(self, scope: Scope, tools: Sequence[str]) -> tuple[str, ...]:
            self.asked += 1
            return tuple(tools)

    store = MemoryStore()
    policy = Counting()
    await dispatch(store.scoped(HOME, policy=policy), SPEC, "look twice")
    model = three_turns()
    await Worker(store, Runtime(model=model, tools=[lookup], policy=policy)).run_until_idle()
    assert len(model.requests) == 3
    assert [turn.steady for turn in resolutions] == [False] * 3
    assert policy.asked == 3

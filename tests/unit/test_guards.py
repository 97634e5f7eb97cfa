"""An agent spec's guards end a run cleanly, with a named reason: a deadline for the whole run,
a streak of failed tool calls, the same call asked for too many times."""

from __future__ import annotations

import asyncio
import datetime as dt
from contextlib import AbstractAsyncContextManager

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Scope
from psych_runtime.records import RunFailed, ToolCallFailed, ToolCallFinished, ToolCallSettled
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")


class Tools:
    def __init__(self) -> None:
        self.lookups: list[str] = []
        self.refunds: list[str] = []

    async def lookup(self, key: str) -> str:
        """Look a key up."""
        self.lookups.append(key)
        return f"value of {key}"

    async def boom(self) -> str:
        """Always fails."""
        raise RuntimeError("the backend is down")

    async def slow(self, seconds: float) -> str:
        """Takes a while."""
        await asyncio.sleep(seconds)
        return "slow done"

    async def refund(self, order: str) -> str:
        """Refund an order (a person approves first)."""
        self.refunds.append(order)
        return f"refunded {order}"


def spec(**guards: object) -> AgentSpec:
    return AgentSpec(
        name="guarded",
        model=ModelRef(model="fake"),
        tools=(
            CodeTool(name="lookup", safe_to_retry=True),
            CodeTool(name="boom"),
            CodeTool(name="slow"),
            CodeTool(name="refund", requires_approval=True),
        ),
        max_turns=20,
        **guards,
    )


def session(
    model: FakeModel, tools: Tools, store: MemoryStore | None = None
) -> AbstractAsyncContextManager[psych_runtime.Session]:
    return psych_runtime.session(
        model,
        tools=[tools.lookup, tools.boom, tools.slow, tools.refund],
        store=store or MemoryStore(),
        scope=SCOPE,
    )


async def test_the_same_call_asked_for_once_too_often_fails_the_run_before_it_starts() -> None:
    tools = Tools()
    model = (
        FakeModel()
        .turn(tool_calls=[("lookup", {"key": "a"})])
        .turn(tool_calls=[("lookup", {"key": "b"})])  # other arguments: another call
        .turn(tool_calls=[("lookup", {"key": "a"})])
        .turn(tool_calls=[("lookup", {"key": "a"})])
        .turn(text="never")
    )
    async with session(model, tools) as s:
        view = await s.ask(spec(max_identical_calls=2), "look")
        records = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "failed"
    failed = records[-1].body
    assert isinstance(failed, RunFailed) and failed.reason == "repeated_call"
    assert "'lookup'" in failed.error and "3 times" in failed.error
    assert "max_identical_calls=2" in failed.error and view.run_id in failed.error
    assert tools.lookups == ["a", "b", "a"]  # the third "a" never ran
    (closed,) = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert closed.reason == "cancelled" and "the run ended before the call began" in closed.error
    assert len(model.requests) == 4


async def test_a_streak_of_failed_calls_ends_the_run_and_a_success_starts_it_over() -> None:
    tools = Tools()
    model = (
        FakeModel()
        .turn(tool_calls=[("boom", {})])
        .turn(tool_calls=[("lookup", {"key": "a"})])
        .turn(tool_calls=[("boom", {})])
        .turn(tool_calls=[("boom", {})])
        .turn(text="never")
    )
    async with session(model, tools) as s:
        view = await s.ask(spec(max_failed_calls=2), "try")
        records = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "failed"
    failed = records[-1].body
    assert isinstance(failed, RunFailed) and failed.reason == "failed_calls"
    assert "2 tool calls in a row failed" in failed.error
    # The model was not asked again after the second failure in a row.
    assert len(model.requests) == 4
    assert [r.body.reason for r in records if isinstance(r.body, ToolCallFailed)] == [
        "error",
        "error",
        "error",
    ]


async def test_a_deadline_that_passes_during_a_call_ends_the_run_before_the_next_model_call() -> (
    None
):
    tools = Tools()
    model = FakeModel().turn(tool_calls=[("slow", {"seconds": 1.2})]).turn(text="never")
    async with session(model, tools) as s:
        view = await s.ask(spec(deadline=1), "go")
        records = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "failed"
    failed = records[-1].body
    assert isinstance(failed, RunFailed) and failed.reason == "deadline"
    assert "deadline=1 s" in failed.error
    # The call in flight was not cut off; the model was not called again.
    assert any(isinstance(r.body, ToolCallFinished) for r in records)
    assert len(model.requests) == 1


async def test_a_run_waiting_for_a_person_is_woken_at_its_deadline_and_ended() -> None:
    tools = Tools()
    store = MemoryStore()
    model = FakeModel().turn(tool_calls=[("refund", {"order": "B7"})]).turn(text="never")
    async with session(model, tools, store) as s:
        view = await s.ask(spec(deadline=1), "refund B7")
        assert view.status == "waiting"
        row = await store.get_run("acme", view.run_id)
        assert row is not None and row.runnable_at is not None
        admitted = (await psych_runtime.read_log(s.store, view.run_id))[0].at
        assert row.runnable_at == admitted + dt.timedelta(seconds=1)  # woken at the deadline
        status = await psych_runtime.status(s.store, view.run_id)
        assert status.waiting == "approval"
        await asyncio.sleep(max(0.0, (row.runnable_at - dt.datetime.now(dt.UTC)).total_seconds()))
        await asyncio.sleep(0.1)
        done = await s.drive(view.run_id)
        records = await psych_runtime.read_log(s.store, view.run_id)
    assert done.status == "failed"
    failed = records[-1].body
    assert isinstance(failed, RunFailed) and failed.reason == "deadline"
    (closed,) = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert closed.reason == "cancelled" and "ended before the call began" in closed.error
    assert not any(isinstance(r.body, ToolCallSettled) for r in records)
    assert tools.refunds == []


def test_guards_leave_the_version_of_a_spec_without_them_unchanged() -> None:
    plain = AgentSpec(name="a", model=ModelRef(model="m"))
    assert plain.version == AgentSpec(name="a", model=ModelRef(model="m"), deadline=None).version
    assert plain.version != AgentSpec(name="a", model=ModelRef(model="m"), deadline=30).version
    with pytest.raises(ValueError, match="greater than 0"):
        AgentSpec(name="a", model=ModelRef(model="m"), max_identical_calls=0)

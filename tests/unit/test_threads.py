"""Threads: ``dispatch(..., continues=run_id)`` carries a run's conversation into the next run,
and `thread` reads the chain back as one conversation."""

from __future__ import annotations

import datetime as dt

import pytest

import psych_core
import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Scope, WorkflowSpec
from psych_runtime.conversations import send, thread
from psych_runtime.errors import NotContinuable, RunFinished, RunNotFound
from psych_runtime.ports import ToolCall
from psych_runtime.records import (
    AttemptStarted,
    ModelCallFinished,
    Record,
    RunAdmitted,
    RunFailed,
    ToolCallStarted,
)
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.workflows import Workflow
from tests.unit._conversation import refund, texts

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="chat", model=ModelRef(model="fake"))
GATED = AgentSpec(
    name="chat",
    model=ModelRef(model="fake"),
    tools=(CodeTool(name="refund", requires_approval=True),),
)
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def test_a_continuation_carries_the_conversation_and_the_thread_reads_as_one() -> None:
    model = FakeModel().turn(text="Hello Ann.").turn(text="You said your name is Ann.")
    async with psych_runtime.session(model, scope=SCOPE) as s:
        first = await s.ask(SPEC, "Hi, I am Ann.")
        second = await s.ask(SPEC, "What is my name?", continues=first.run_id)
        whole = await thread(s.store, first.run_id)
        same = await thread(s.store, second.run_id)
        report = await psych_runtime.report(s.store, second.run_id)
    assert texts(model.requests[1].messages) == [
        ("user", "Hi, I am Ann."),
        ("assistant", "Hello Ann."),
        ("user", "What is my name?"),
    ]
    assert whole == same
    assert whole.run_ids == (first.run_id, second.run_id)
    assert [(m.run_id, texts([m.message])[0]) for m in whole.messages] == [
        (first.run_id, ("user", "Hi, I am Ann.")),
        (first.run_id, ("assistant", "Hello Ann.")),
        (second.run_id, ("user", "What is my name?")),
        (second.run_id, ("assistant", "You said your name is Ann.")),
    ]
    assert report.continues == first.run_id


async def test_a_run_is_continued_once_and_the_same_continuation_is_idempotent() -> None:
    model = FakeModel().turn(text="Hi.")
    store = MemoryStore()
    async with psych_runtime.session(model, store=store, scope=SCOPE) as s:
        first = await s.ask(SPEC, "hello")
        again = await psych_runtime.dispatch(s.store, SPEC, "next", continues=first.run_id)
        same = await psych_runtime.dispatch(s.store, SPEC, "next", continues=first.run_id)
        with pytest.raises(NotContinuable, match=f"run {again} continues it already") as other:
            await psych_runtime.dispatch(s.store, SPEC, "something else", continues=first.run_id)
    assert same == again and other.value.continuation == again
    assert len((await s.store.list_runs()).items) == 2


async def test_a_run_still_going_a_workflow_and_another_tenants_run_are_refused() -> None:
    store = MemoryStore()
    model = FakeModel().turn(tool_calls=[("refund", {"order": "B7"})])
    async with psych_runtime.session(model, store=store, scope=SCOPE, tools=[refund]) as s:
        waiting = await s.ask(GATED, "refund B7")
        assert waiting.status == "waiting"
        with pytest.raises(NotContinuable, match="it is still waiting") as going:
            await psych_runtime.dispatch(s.store, SPEC, "and?", continues=waiting.run_id)
        assert going.value.run_id == waiting.run_id
        other = store.scoped(Scope(tenant="globex"))
        with pytest.raises(RunNotFound):
            await psych_runtime.dispatch(other, SPEC, "and?", continues=waiting.run_id)
        with pytest.raises(RunNotFound):
            await thread(other, waiting.run_id)
        builder = Workflow("flow")
        builder.sleep("pause", 1)
        flow = builder.build()
        with pytest.raises(NotContinuable, match="is a workflow"):
            await psych_runtime.dispatch(s.store, flow, "{}", continues=waiting.run_id)
    assert isinstance(flow, WorkflowSpec)
    assert len((await s.store.list_runs()).items) == 1, "nothing was admitted"


async def test_next_run_messages_are_kept_for_the_continuation_in_order() -> None:
    model = FakeModel().turn(tool_calls=[("refund", {"order": "B7"})]).turn(text="On it.")
    async with psych_runtime.session(model, scope=SCOPE, tools=[refund]) as s:
        waiting = await s.ask(GATED, "refund B7")
        await psych_runtime.cancel(s.store, waiting.run_id, "changed my mind")
        await send(s.store, waiting.run_id, "Actually, replace it.", queue="next_run")
        await send(s.store, waiting.run_id, "In blue.", queue="next_run")
        stopped = await s.drive(waiting.run_id)
        assert stopped.status == "cancelled"
        kept = await thread(s.store, waiting.run_id)
        assert kept.next_run == ("Actually, replace it.", "In blue.")
        nxt = await s.ask(GATED, "Thanks.", continues=waiting.run_id)
        after = await thread(s.store, nxt.run_id)
    assert nxt.status == "completed"
    assert texts(model.requests[1].messages)[-3:] == [
        ("user", "Actually, replace it."),
        ("user", "In blue."),
        ("user", "Thanks."),
    ]
    # The cancelled call's result was carried with its call: never a call without a result.
    carried = texts(model.requests[1].messages)
    assert carried[:2] == [("user", "refund B7"), ("assistant", None)]
    assert carried[2][0] == "tool" and "cancelled" in str(carried[2][1])
    assert after.next_run == ()
    own = [texts([m.message])[0] for m in after.messages if m.run_id == nxt.run_id]
    assert own[:3] == [
        ("user", "Actually, replace it."),
        ("user", "In blue."),
        ("user", "Thanks."),
    ]


def test_a_run_that_ended_with_a_call_open_carries_nothing_of_that_call() -> None:
    call = ToolCall(call_id="2.0", name="refund", arguments="{}")
    bodies = [
        RunAdmitted(agent="chat", spec_version="v", input="refund", scope=SCOPE),
        AttemptStarted(worker_id="w"),
        ModelCallFinished(model="m", text="Refunding.", tool_calls=(call,)),
        ToolCallStarted(call_id="2.0", name="refund"),
        RunFailed(reason="attempts_exhausted", error="stopped"),
    ]
    records = [
        Record(run_id="r", seq=seq, attempt=min(seq, 1), at=AT, body=body)
        for seq, body in enumerate(bodies)
    ]
    state = psych_core.fold_all(psych_core.RunState.empty("r"), records)
    assert texts(psych_core.carried_history(state)) == [("user", "refund")]


async def test_a_run_that_has_ended_keeps_messages_for_its_next_run_until_continued() -> None:
    model = FakeModel().turn(tool_calls=[("refund", {"order": "B7"})]).turn(text="Exchanged.")
    async with psych_runtime.session(model, scope=SCOPE, tools=[refund]) as s:
        waiting = await s.ask(GATED, "refund B7")
        await psych_runtime.cancel(s.store, waiting.run_id, "the user pressed stop")
        assert (await s.drive(waiting.run_id)).status == "cancelled"
        # Stop, then type: the run has ended, and the message is kept for the next run.
        await send(s.store, waiting.run_id, "Exchange it instead.", queue="next_run")
        with pytest.raises(RunFinished):
            await send(s.store, waiting.run_id, "now!", queue="steer")
        assert (await thread(s.store, waiting.run_id)).next_run == ("Exchange it instead.",)
        nxt = await s.ask(GATED, "Thanks.", continues=waiting.run_id)
        with pytest.raises(RunFinished):
            await send(s.store, waiting.run_id, "one more", queue="next_run")
        after = await thread(s.store, waiting.run_id)
    assert nxt.status == "completed"
    assert texts(model.requests[1].messages)[-2:] == [
        ("user", "Exchange it instead."),
        ("user", "Thanks."),
    ]
    assert after.next_run == ()

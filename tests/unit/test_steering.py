"""Steering queues: `send(..., queue=...)` puts a user message where its intention says: before
the next model call (steer), after the model's answer (follow-up), or in the next run."""

from __future__ import annotations

import datetime as dt

import pytest

import psych_core
import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope
from psych_runtime.conversations import send
from psych_runtime.ports import ToolCall
from psych_runtime.records import (
    AttemptStarted,
    ModelCallFinished,
    Record,
    RunAdmitted,
    RunCompleted,
    SignalReceived,
    UserInput,
)
from psych_runtime.testing.fake_model import FakeModel
from tests.unit._conversation import refund, texts

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(
    name="shop",
    model=ModelRef(model="fake"),
    tools=(CodeTool(name="refund", requires_approval=True),),
)
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def test_a_steer_joins_after_the_open_calls_results_before_the_next_call() -> None:
    model = (
        FakeModel().turn(tool_calls=[("refund", {"order": "B7"})]).turn(text="Refunded B7 in EUR.")
    )
    async with psych_runtime.session(model, scope=SCOPE, tools=[refund]) as s:
        waiting = await s.ask(SPEC, "refund B7")
        await send(s.store, waiting.run_id, "Use EUR.", queue="steer")
        await psych_runtime.approve(s.store, waiting.run_id, "2.0", by="ann")
        done = await s.drive(waiting.run_id)
    assert done.status == "completed"
    assert texts(model.requests[1].messages) == [
        ("user", "refund B7"),
        ("assistant", None),
        ("tool", "refunded B7"),
        ("user", "Use EUR."),
    ]


async def test_a_follow_up_waits_for_the_answer_then_the_run_goes_on() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("refund", {"order": "B7"})])
        .turn(text="Refunded B7.")
        .turn(text="The tax was 2 EUR.")
    )
    async with psych_runtime.session(model, scope=SCOPE, tools=[refund]) as s:
        waiting = await s.ask(SPEC, "refund B7")
        await send(s.store, waiting.run_id, "And the tax?", queue="follow_up")
        await psych_runtime.approve(s.store, waiting.run_id, "2.0", by="ann")
        done = await s.drive(waiting.run_id)
        status = await psych_runtime.status(s.store, waiting.run_id)
    assert done.status == "completed" and done.text == "The tax was 2 EUR."
    assert ("user", "And the tax?") not in texts(model.requests[1].messages)
    assert texts(model.requests[2].messages)[-2:] == [
        ("assistant", "Refunded B7."),
        ("user", "And the tax?"),
    ]
    assert status.turns == 2


async def test_a_next_run_message_never_reaches_this_run() -> None:
    model = FakeModel().turn(tool_calls=[("refund", {"order": "B7"})]).turn(text="Refunded B7.")
    async with psych_runtime.session(model, scope=SCOPE, tools=[refund]) as s:
        waiting = await s.ask(SPEC, "refund B7")
        await send(s.store, waiting.run_id, "Next time, ask first.", queue="next_run")
        await psych_runtime.approve(s.store, waiting.run_id, "2.0", by="ann")
        done = await s.drive(waiting.run_id)
    assert done.status == "completed"
    assert all("ask first" not in str(text) for _, text in texts(model.requests[1].messages))


def _log(*bodies: object) -> list[Record]:
    return [
        Record(run_id="r", seq=seq, attempt=0 if seq == 0 else 1, at=AT, body=body)
        for seq, body in enumerate(bodies)
    ]


def test_a_follow_up_that_arrives_after_the_answer_starts_the_next_turn_at_once() -> None:
    records = _log(
        RunAdmitted(agent="shop", spec_version="v", input="hi", scope=SCOPE),
        AttemptStarted(worker_id="w"),
        ModelCallFinished(model="m", text="Hello."),
        SignalReceived(number=1, key="k", signal=UserInput(text="And?", queue="follow_up")),
    )
    state = psych_core.fold_all(psych_core.RunState.empty("r"), records)
    assert not state.answered and state.turns == 2 and state.follow_ups == ()
    assert texts(state.conversation.messages())[-1] == ("user", "And?")


def test_messages_keep_the_inbox_order_whatever_their_queue() -> None:
    call = ToolCall(call_id="2.0", name="refund", arguments="{}")
    records = _log(
        RunAdmitted(agent="shop", spec_version="v", input="hi", scope=SCOPE),
        AttemptStarted(worker_id="w"),
        ModelCallFinished(model="m", tool_calls=(call,)),
        psych_core.ToolCallStarted(call_id="2.0", name="refund"),
        SignalReceived(number=1, key="a", signal=UserInput(text="f1", queue="follow_up")),
        SignalReceived(number=2, key="b", signal=UserInput(text="n1", queue="next_run")),
        SignalReceived(number=3, key="c", signal=UserInput(text="f2", queue="follow_up")),
        SignalReceived(number=4, key="d", signal=UserInput(text="n2", queue="next_run")),
    )
    state = psych_core.fold_all(psych_core.RunState.empty("r"), records)
    assert state.follow_ups == ("f1", "f2") and state.next_run == ("n1", "n2")
    # A run cannot complete while follow-ups wait: the answer starts their turn instead.
    state = psych_core.fold(
        state,
        Record(
            run_id="r",
            seq=8,
            attempt=1,
            at=AT,
            body=psych_core.ToolCallFinished(call_id="2.0", result="ok"),
        ),
    )
    answered = psych_core.fold(
        state,
        Record(
            run_id="r", seq=9, attempt=1, at=AT, body=ModelCallFinished(model="m", text="Done.")
        ),
    )
    assert not answered.answered and answered.follow_ups == ()
    assert texts(answered.conversation.messages())[-3:] == [
        ("assistant", "Done."),
        ("user", "f1"),
        ("user", "f2"),
    ]
    with pytest.raises(psych_core.CorruptLog, match="before the model gave a final answer"):
        psych_core.fold(answered, Record(run_id="r", seq=10, attempt=1, at=AT, body=RunCompleted()))

"""The built-in ``ask_user`` tool: the model asks the user a question, the run waits holding no
worker, status shows the question, and `answer` gives it back as the call's result."""

from __future__ import annotations

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Scope
from psych_runtime.errors import InvalidAnswer
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import Question, ToolCallFailed
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="support", model=ModelRef(model="fake"), ask_user=True)


def results(model: FakeModel, turn: int) -> list[ToolResultMessage]:
    return [m for m in model.requests[turn].messages if isinstance(m, ToolResultMessage)]


async def test_a_question_with_options_waits_for_one_of_them() -> None:
    store = MemoryStore()
    question = {"question": "Refund or replace order B7?", "options": ["refund", "replace"]}
    model = FakeModel().turn(tool_calls=[("ask_user", question)]).turn(text="Replacing B7.")
    async with psych_runtime.session(model, store=store, scope=SCOPE) as s:
        view = await s.ask(SPEC, "B7 arrived broken")
        assert [t.name for t in model.requests[0].tools] == ["ask_user"]
        assert view.status == "waiting"
        status = await psych_runtime.status(s.store, view.run_id)
        assert status.waiting == "external"
        assert status.questions == (
            Question(call_id="2.0", question=question["question"], options=("refund", "replace")),
        )
        row = await store.get_run("acme", view.run_id)
        assert row is not None and row.lease_owner is None  # no worker held while it waits

        with pytest.raises(InvalidAnswer, match=r"one of \['refund', 'replace'\], not 'cash'"):
            await psych_runtime.answer(s.store, view.run_id, "2.0", "cash")
        await psych_runtime.answer(s.store, view.run_id, "2.0", "replace")
        done = await s.drive(view.run_id)
        after = await psych_runtime.status(s.store, view.run_id)
    assert done.status == "completed" and done.text == "Replacing B7."
    assert after.questions == ()
    (answered,) = results(model, 1)
    assert answered.content == "replace" and not answered.is_error


async def test_a_free_text_question_takes_any_answer() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("ask_user", {"question": "Which address?"})])
        .turn(text="Shipping to Main St 1.")
    )
    async with psych_runtime.session(model, scope=SCOPE) as s:
        view = await s.ask(SPEC, "ship it")
        (asked,) = (await psych_runtime.status(s.store, view.run_id)).questions
        assert asked.options == ()
        await psych_runtime.answer(s.store, view.run_id, asked.call_id, {"street": "Main St 1"})
        done = await s.drive(view.run_id)
    assert done.status == "completed"
    (answered,) = results(model, 1)
    assert "Main St 1" in answered.content


async def test_a_malformed_question_is_a_failed_call_the_model_reads() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("ask_user", {"question": "Which?", "options": ["only one"]})])
        .turn(text="I will decide myself.")
    )
    async with psych_runtime.session(model, scope=SCOPE) as s:
        view = await s.ask(SPEC, "go")
        records = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "completed"
    (failed,) = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert failed.reason == "invalid_arguments" and "2 to 20 options" in failed.error


def test_only_a_spec_that_enables_it_offers_it_and_no_own_tool_may_take_its_name() -> None:
    plain = AgentSpec(name="a", model=ModelRef(model="m"))
    assert plain.version == plain.model_copy(update={"ask_user": False}).version
    assert plain.version != AgentSpec(name="a", model=ModelRef(model="m"), ask_user=True).version
    with pytest.raises(ValueError, match="ask_user=True"):
        AgentSpec(
            name="a", model=ModelRef(model="m"), ask_user=True, tools=[CodeTool(name="ask_user")]
        )


async def test_a_question_cut_off_by_a_crash_is_asked_again_never_settled_unknown() -> None:
    import datetime as dt

    import psych_core
    from psych_runtime.records import AttemptStarted, Record, ToolCallStarted

    model = FakeModel().turn(tool_calls=[("ask_user", {"question": "Which size?"})])
    async with psych_runtime.session(model, scope=SCOPE) as s:
        view = await s.ask(SPEC, "order a shirt")
        records = await psych_runtime.read_log(s.store, view.run_id)
    (started,) = [r for r in records if isinstance(r.body, ToolCallStarted)]
    assert isinstance(started.body, ToolCallStarted)
    assert started.body.safe_to_retry is True  # recorded by the tool itself: not in the spec
    # A worker that died after the start, before the wait was recorded: the next attempt
    # asks again.
    cut = records[: records.index(started) + 1]
    state = psych_core.fold_all(psych_core.RunState.empty(view.run_id, SPEC), cut)
    later = Record(
        run_id=view.run_id,
        seq=state.next_seq,
        attempt=state.attempt + 1,
        at=started.at,
        body=AttemptStarted(worker_id="w2"),
    )
    state = psych_core.fold(state, later)
    action = psych_core.next_action(state, started.at + dt.timedelta(seconds=1))
    assert isinstance(action, psych_core.RetryCalls)
    assert [call.name for call in action.calls] == ["ask_user"]

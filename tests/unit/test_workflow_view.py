"""The step tree of a workflow run (`workflow_view_of`) at every status, the rows of
`Report.steps`, breakpoints in the planner, and which steps a replay copies: on simulated logs
(the runtime's own decisions, made-up effects)."""

from __future__ import annotations

from typing import Any

import pytest

from psych_core import (
    BREAKPOINT_TOOL,
    CodeTool,
    CorruptLog,
    ForeachStep,
    HumanStep,
    Lit,
    LoopStep,
    MapStep,
    ParallelStep,
    Ref,
    ReplayOf,
    Resume,
    Retry,
    RunState,
    SetStateStep,
    ToolStep,
    Truthy,
    WaitStep,
    WorkflowSpec,
    build_report,
    copied_steps,
    fold_all,
    replay_start,
    step_place,
    workflow_view_of,
)
from psych_core._waits import resume_target
from tests.unit._simulate_workflow import Fail, Late, Ok, Outcome, Simulation, call_ids, simulate

TOOL = CodeTool(name="work")
UNSAFE = CodeTool(name="send")

SPEC = WorkflowSpec(
    name="shop",
    steps=(
        ToolStep(name="create", tool=TOOL, arguments={"email": Ref("input.email")}),
        MapStep(name="skipped", when=Truthy(value=Lit(False)), output=Lit(1)),
        SetStateStep(name="count", values={"n": Lit(2)}),
        ForeachStep(
            name="orders",
            items=Lit([10, 20, 30]),
            concurrency=2,
            steps=(
                ToolStep(name="charge", tool=TOOL, arguments={"cents": Ref("item")}),
                MapStep(name="receipt", output=Ref("steps.charge.output")),
            ),
        ),
        ParallelStep(
            name="notify",
            branches={
                "mail": (ToolStep(name="mail", tool=UNSAFE, retry=Retry(backoff=5)),),
                "sms": (MapStep(name="sms", output=Lit("sent")),),
            },
        ),
        LoopStep(
            name="poll",
            max_iterations=2,
            steps=(ToolStep(name="check", tool=TOOL, arguments={"i": Ref("iteration")}),),
        ),
        WaitStep(name="shipped", event="shipped"),
    ),
)


def fails_first_mail(call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
    if call_id == "mail":
        return Fail(error="the mail server is down")
    return Ok({"call": call_id, **arguments})


def test_a_finished_run_shows_every_step_with_its_tries_items_and_iterations() -> None:
    run = simulate(SPEC, {"email": "a@example.com"}, script=fails_first_mail)
    view = workflow_view_of(SPEC, run.records)
    assert (view.status, view.workflow, view.spec_version) == ("completed", "shop", SPEC.version)
    top = {step.key: step for step in view.steps}
    assert list(top) == ["create", "skipped", "count", "orders", "notify", "poll", "shipped"]
    create = top["create"]
    assert (create.status, create.attempts, create.input) == (
        "completed",
        1,
        {"email": "a@example.com"},
    )
    assert create.output == {"call": "create", "email": "a@example.com"}
    assert create.started_at is not None and create.ended_at is not None
    assert top["skipped"].status == "skipped" and top["skipped"].tries == ()
    count = top["count"]
    assert (count.status, count.output, len(count.tries)) == ("completed", {"n": 2}, 1)
    orders = top["orders"]
    assert [(item.key, item.item, item.status) for item in orders.items] == [
        ("orders[0]", 10, "completed"),
        ("orders[1]", 20, "completed"),
        ("orders[2]", 30, "completed"),
    ]
    charge = orders.items[2].steps[0]
    assert (charge.key, charge.input, charge.status) == (
        "orders[2].charge",
        {"cents": 30},
        "completed",
    )
    assert orders.items[2].steps[1].output == charge.output
    notify = top["notify"]
    assert [(s.key, s.branch, s.status) for s in notify.steps] == [
        ("mail", "mail", "completed"),
        ("sms", "sms", "completed"),
    ]
    mail = notify.steps[0]
    assert mail.attempts == 2
    assert [(t.attempt, t.call_id, t.outcome) for t in mail.tries] == [
        (1, "mail", "failed"),
        (2, "mail#2", "succeeded"),
    ]
    assert "the mail server is down" in (mail.tries[0].error or "")
    poll = top["poll"]
    assert [(i.key, i.status, [s.key for s in i.steps]) for i in poll.items] == [
        ("poll[0]", "completed", ["poll[0].check"]),
        ("poll[1]", "completed", ["poll[1].check"]),
    ]
    assert top["shipped"].output == {"call": "shipped", "event": "shipped", "due_at": None}
    # One report row per try, in the order they started; the same rows as the view's.
    report = build_report(RunState.empty(run.run_id, SPEC), run.records)
    assert report.steps == view.tries()
    assert [(row.key, row.attempt) for row in report.steps if row.key == "mail"] == [
        ("mail", 1),
        ("mail", 2),
    ]
    assert {row.key for row in report.steps} >= {"create", "count", "orders[1].receipt", "sms"}


def test_each_prefix_shows_where_the_run_was() -> None:
    run = simulate(SPEC, {"email": "a@example.com"}, script=fails_first_mail)
    seen: dict[str, set[str]] = {}
    for end in range(1, len(run.records) + 1):
        for step in workflow_view_of(SPEC, run.records[:end]).walk():
            seen.setdefault(step.key, set()).add(step.status)
    assert seen["create"] >= {"pending", "running", "completed"}
    assert seen["mail"] >= {"pending", "running", "retrying", "completed"}
    assert seen["shipped"] >= {"pending", "waiting", "completed"}
    assert seen["orders"] >= {"pending", "running", "completed"}
    waiting = next(
        workflow_view_of(SPEC, run.records[:end]).step("shipped")
        for end in range(1, len(run.records) + 1)
        if workflow_view_of(SPEC, run.records[:end]).step("shipped").status == "waiting"  # type: ignore[union-attr]
    )
    assert waiting is not None and waiting.waiting_for == "event 'shipped'"
    retrying = next(
        view
        for end in range(1, len(run.records) + 1)
        if (view := workflow_view_of(SPEC, run.records[:end]).step("mail")) is not None
        and view.status == "retrying"
    )
    assert retrying.failure is not None and retrying.failure.kind == "error"
    assert retrying.waiting_for is not None and retrying.waiting_for.startswith("try 2 at ")


def test_a_failed_and_a_cancelled_step_show_why() -> None:
    def script(call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
        return Fail(error="declined") if call_id == "orders[1].charge" else Ok(call_id)

    run = simulate(SPEC, {"email": "a@example.com"}, script=script)
    view = workflow_view_of(SPEC, run.records)
    assert view.status == "failed" and "orders[1].charge" in (view.error or "")
    orders = view.step("orders")
    assert orders is not None and orders.status == "failed"
    assert [item.status for item in orders.items] == ["completed", "failed", "pending"]
    failed = orders.items[1].steps[0]
    assert failed.failure is not None and failed.failure.kind == "error"
    assert (view.step("notify") or orders).status == "pending"


def test_a_log_that_cannot_be_folded_is_refused_as_the_engine_would() -> None:
    run = simulate(SPEC, {"email": "a@example.com"})
    broken = [r for r in run.records if r.seq != 3]
    with pytest.raises(CorruptLog) as refused:
        workflow_view_of(SPEC, broken)
    assert refused.value.seq == 4 and refused.value.run_id == run.run_id


# -- breakpoints --------------------------------------------------------------------------------


def test_a_breakpoint_pauses_before_every_run_of_a_step_and_its_key_before_one() -> None:
    by_name = simulate(SPEC, {"email": "a"}, breakpoints=("charge",))
    assert [c for c in call_ids(by_name.records) if c.endswith("!")] == [
        "orders[0].charge!",
        "orders[1].charge!",
        "orders[2].charge!",
    ]
    by_key = simulate(SPEC, {"email": "a"}, breakpoints=("orders[1].charge", "poll"))
    assert [c for c in call_ids(by_key.records) if c.endswith("!")] == [
        "orders[1].charge!",
        "poll!",
    ]
    assert by_key.state.status == by_name.state.status == "completed"
    assert by_key.state.output == by_name.state.output


def test_a_paused_step_shows_paused_and_only_a_breakpoint_resume_ends_the_pause() -> None:
    spec = WorkflowSpec(
        name="pause",
        steps=(
            ParallelStep(
                name="both",
                branches={
                    "ask": (HumanStep(name="approve", question="ok?"),),
                    "go": (ToolStep(name="send", tool=UNSAFE),),
                },
            ),
        ),
    )
    run = Simulation(
        spec, None, breakpoints=("send",), script=lambda *_: Late(), continue_pauses=False
    )
    with pytest.raises(AssertionError, match="waits forever"):
        run.run()
    view = workflow_view_of(spec, run.records)
    send, approve = view.step("send"), view.step("approve")
    assert send is not None and approve is not None
    assert (send.status, send.waiting_for) == ("paused", "continue_run: paused at a breakpoint")
    assert (approve.status, approve.waiting_for) == ("waiting", "an answer to 'ok?'")
    # An answer finds the human step only; a continue finds the pause only.
    answer, why = resume_target(run.state, Resume(call_id="send", payload="x"))
    assert answer is None and "no call of this run is waiting under the name 'send'" in why
    plain, _ = resume_target(run.state, Resume(payload="x"))
    assert plain is not None and plain.call.call_id == "approve"
    go_on, _ = resume_target(run.state, Resume(breakpoint=True))
    assert go_on is not None and go_on.call.name == BREAKPOINT_TOOL
    nothing, why = resume_target(run.state, Resume(call_id="approve", breakpoint=True))
    assert nothing is None and "no call of this run is waiting under the name" in why


def test_breakpoints_and_replay_steps_are_named_by_name_or_whole_key() -> None:
    assert step_place(SPEC, "charge", what="breakpoint").around == (("orders", False),)
    assert step_place(SPEC, "orders[2].charge", what="breakpoint").step.name == "charge"
    with pytest.raises(ValueError, match="breakpoint 'nope' names no step of workflow 'shop'"):
        step_place(SPEC, "nope", what="breakpoint")
    with pytest.raises(ValueError, match=r"step 'charge' sits in orders; .*'orders\[0\]\.charge'"):
        step_place(SPEC, "poll[1].charge", what="from_step")
    with pytest.raises(ValueError, match="names no step"):
        step_place(SPEC, "orders[1]", what="from_step")
    assert replay_start(SPEC, "charge") == "orders[0].charge"
    assert replay_start(SPEC, "poll[1].check") == "poll[1].check"
    assert replay_start(SPEC, "notify") == "notify"


# -- what a replay copies -------------------------------------------------------------------------


def _copied(start: str) -> dict[str, Any]:
    run = simulate(SPEC, {"email": "a"}, script=fails_first_mail)
    return {step.key: step.output for step in copied_steps(SPEC, SPEC, run.records, start)}


def test_a_replay_copies_the_steps_before_its_start_in_tree_order() -> None:
    assert set(_copied("orders[1].receipt")) == {
        "create",
        "skipped",
        "count",
        "orders[0].charge",
        "orders[0].receipt",
        "orders[1].charge",
    }
    assert set(_copied("charge")) == {"create", "skipped", "count"}
    assert set(_copied("sms")) >= {"mail", "orders[2].receipt"} and "sms" not in _copied("sms")
    assert set(_copied("poll[1].check")) >= {"poll[0].check", "sms"}
    assert _copied("count")["create"] == {"call": "create", "email": "a"}
    assert _copied("create") == {}


def test_a_replay_runs_again_a_step_the_corrected_spec_changed_the_kind_of() -> None:
    run = simulate(SPEC, {"email": "a"})
    fixed = SPEC.model_copy(
        update={"steps": (MapStep(name="create", output=Lit("made")), *SPEC.steps[1:])}
    )
    start = replay_start(fixed, "shipped")
    copied = copied_steps(SPEC, fixed, run.records, start)
    assert next(step for step in copied if step.key == "create").kind == "tool"
    replayed = simulate(
        fixed,
        {"email": "a"},
        run_id="W2",
        replay_of=ReplayOf(run_id="W1", from_step=start, steps=copied),
    )
    view = workflow_view_of(fixed, replayed.records)
    create, charge = view.step("create"), view.step("orders[0].charge")
    assert create is not None and (create.status, create.output) == ("completed", "made")
    assert charge is not None and charge.status == "replayed" and charge.attempts == 0
    assert view.replay_of == "W1" and view.from_step == "shipped"
    state = fold_all(RunState.empty("W2", fixed), replayed.records)
    assert state.status == "completed"

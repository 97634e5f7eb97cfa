"""Every step kind, guard, retry, timeout and failure kind, on the reducer and the planner alone:
the logs are written by the simulator (the runtime's `decide`, scripted effects), and the
assertions read what the planner recorded (`StepsPlanned`) and how the run ended."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from psych_core import (
    AgentSpec,
    AgentStep,
    AllOf,
    AnyOf,
    BranchStep,
    Case,
    CodeTool,
    Compare,
    Exists,
    ForeachStep,
    HumanStep,
    Lit,
    LoopStep,
    MapStep,
    ModelRef,
    Not,
    Obj,
    ParallelStep,
    Ref,
    Retry,
    RunState,
    SetStateStep,
    SleepStep,
    StepsPlanned,
    ToolStep,
    Truthy,
    WaitStep,
    WorkflowSpec,
    WorkflowStep,
    fold_all,
)
from tests.unit._simulate_workflow import (
    T0,
    Fail,
    Late,
    Ok,
    Outcome,
    Simulation,
    Unknown,
    call_ids,
    plans,
    settled,
    simulate,
)

TOOL = CodeTool(name="work")
SAFE = CodeTool(name="safe_work", safe_to_retry=True)
AGENT = AgentSpec(name="writer", model=ModelRef(model="m"))


def tool(name: str, **arguments: Any) -> ToolStep:
    return ToolStep(name=name, tool=TOOL, arguments=arguments)


def flow(*steps: Any, **options: Any) -> WorkflowSpec:
    return WorkflowSpec(name="wf", steps=steps, **options)


def results(table: dict[str, Outcome]) -> Any:
    """A script: the outcome named for a call id (or its step), else a result naming it."""

    def script(call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
        if call_id in table:
            return table[call_id]
        return Ok({"call": call_id, **arguments})

    return script


def failure(sim: Simulation) -> str:
    assert sim.state.status == "failed", sim.state.status
    return f"{sim.state.failure_reason}: {sim.state.error}"


# -- tool steps, data flow and the workflow's output --------------------------------------------


def test_a_tool_step_is_a_call_named_by_its_memo_key_with_resolved_arguments() -> None:
    spec = flow(
        tool("create", email=Ref("input.email")),
        tool("welcome", user=Ref("steps.create.output.call"), fixed=Lit(3)),
    )
    sim = simulate(spec, {"email": "a@b.c"})
    assert call_ids(sim.records) == ["create", "welcome"]
    first = sim.records[2].body
    assert isinstance(first, StepsPlanned)
    assert first.calls[0].name == "work" and first.calls[0].arguments == '{"email":"a@b.c"}'
    assert sim.state.status == "completed"
    # The output is the last step's by default.
    assert sim.state.output == {"call": "welcome", "user": "create", "fixed": 3}


def test_the_workflow_output_is_resolved_when_every_step_has_settled() -> None:
    spec = flow(
        tool("a"),
        tool("b"),
        output=Obj(fields={"first": Ref("steps.a.output.call"), "n": Ref("input.n")}),
    )
    sim = simulate(spec, {"n": 7})
    assert sim.state.output == {"first": "a", "n": 7}
    assert sim.records[-1].body.model_dump() == {
        "type": "run_completed",
        "output": {"first": "a", "n": 7},
    }


def test_an_output_that_does_not_resolve_fails_the_run_naming_the_path() -> None:
    sim = simulate(flow(tool("a"), output=Ref("steps.a.output.nope")))
    assert failure(sim).startswith(
        "step_failed: run W1: workflow 'wf' could not resolve its output"
    )
    assert "'steps.a.output.nope'" in failure(sim) and "has no field 'nope'" in failure(sim)


def test_a_reference_that_does_not_resolve_fails_the_step_with_kind_reference() -> None:
    sim = simulate(flow(tool("a", x=Ref("input.user.email"))), {"user": "bob"})
    assert settled(sim.records)["a"] == ("failed", "reference")
    assert "input.user is a string (\"bob\"), which has no 'email'" in failure(sim)
    assert call_ids(sim.records) == []


# -- agent and workflow steps -------------------------------------------------------------------


def test_an_agent_step_is_a_child_run_whose_output_is_the_step_output() -> None:
    spec = flow(AgentStep(name="draft", agent=AGENT, input=Obj(fields={"t": Ref("input.t")})))
    sim = simulate(spec, {"t": "cats"}, script=results({"draft": Ok("A poem.")}))
    planned = sim.records[2].body
    assert isinstance(planned, StepsPlanned)
    assert planned.calls[0].name == "agent:draft"
    # The child's input is text: anything else is written as JSON.
    assert planned.calls[0].arguments == '{"input":"{\\"t\\":\\"cats\\"}"}'
    assert sim.state.output == "A poem."
    assert [r.body.type for r in sim.records].count("child_started") == 1


def test_a_workflow_step_checks_its_input_against_the_childs_input_schema() -> None:
    child = WorkflowSpec(
        name="child",
        steps=(tool("inner"),),
        input_schema={"type": "object", "required": ["n"]},
    )
    good = simulate(
        flow(WorkflowStep(name="sub", workflow=child, input=Obj(fields={"n": Lit(1)}))),
        script=results({"sub": Ok({"done": True})}),
    )
    assert good.state.output == {"done": True}
    assert good.records[2].body.calls[0].name == "workflow:sub"  # type: ignore[union-attr]
    bad = simulate(flow(WorkflowStep(name="sub", workflow=child, input=Lit({}))))
    assert settled(bad.records)["sub"] == ("failed", "error")
    assert "input_schema" in failure(bad) and "n" in failure(bad)


def test_a_child_that_fails_or_is_cancelled_fails_its_step_with_that_kind() -> None:
    spec = flow(
        AgentStep(name="a", agent=AGENT, input=Lit("x"), on_failure="continue"),
        AgentStep(name="b", agent=AGENT, input=Lit("y"), on_failure="continue"),
    )
    sim = simulate(spec, script=results({"a": Fail(), "b": Fail(reason="cancelled")}))
    assert settled(sim.records)["a"] == ("failed", "error")
    assert settled(sim.records)["b"] == ("failed", "cancelled")


def test_a_child_past_its_steps_timeout_fails_it_with_kind_timeout() -> None:
    sim = simulate(
        flow(AgentStep(name="slow", agent=AGENT, input=Lit("x"), timeout=60)),
        script=results({"slow": Late()}),
    )
    assert settled(sim.records)["slow"] == ("failed", "timeout")
    suspended = [r.body for r in sim.records if r.body.type == "run_suspended"]
    assert suspended[0].model_dump()["due_at"] == T0 + dt.timedelta(seconds=60)


# -- parallel and branch ------------------------------------------------------------------------


def test_parallel_branches_start_in_one_round_and_their_outputs_are_keyed_by_branch() -> None:
    spec = flow(
        ParallelStep(name="both", branches={"x": (tool("a"),), "y": (tool("b"), tool("c"))})
    )
    sim = simulate(spec)
    rounds = [
        [c.call_id for c in r.body.calls] for r in sim.records if r.body.type == "steps_planned"
    ]
    assert rounds[0] == ["a", "b"]
    assert sim.state.output == {"x": {"call": "a"}, "y": {"call": "c"}}


def test_a_failing_branch_fails_the_parallel_and_nothing_new_starts_in_it() -> None:
    spec = flow(
        ParallelStep(name="both", branches={"x": (tool("a"),), "y": (tool("b"), tool("c"))})
    )
    sim = simulate(spec, script=results({"a": Fail()}))
    assert "c" not in call_ids(sim.records)
    assert settled(sim.records)["both"] == ("failed", "error")
    assert failure(sim).startswith("step_failed: run W1: workflow 'wf' failed at step a (error)")


@pytest.mark.parametrize(
    ("n", "mode", "expected"),
    [
        (5, "first", "big"),
        (1, "first", "small"),
        (-1, "first", "neither"),
        (5, "all", ["big", "positive"]),
    ],
)
def test_a_branch_runs_the_first_or_every_case_that_holds_else_otherwise(
    n: int, mode: str, expected: Any
) -> None:
    spec = flow(
        BranchStep(
            name="route",
            mode=mode,
            cases=(
                Case(
                    when=Compare(left=Ref("input.n"), op="gt", right=Lit(3)),
                    steps=(MapStep(name="big", output=Lit("big")),),
                ),
                Case(
                    when=AllOf(
                        conditions=(
                            Compare(left=Ref("input.n"), op="gt", right=Lit(0)),
                            Not(condition=Compare(left=Ref("input.n"), op="eq", right=Lit(5))),
                        )
                    ),
                    steps=(MapStep(name="small", output=Lit("small")),),
                ),
                Case(
                    when=AnyOf(conditions=(Compare(left=Ref("input.n"), op="eq", right=Lit(5)),)),
                    steps=(MapStep(name="positive", output=Lit("positive")),),
                ),
            ),
            otherwise=(MapStep(name="neither", output=Lit("neither")),),
        )
    )
    sim = simulate(spec, {"n": n})
    assert sim.state.output == expected
    # Choosing and mapping need no effect: the whole run is one round.
    assert len(plans(sim.records)) == 1


def test_a_branch_with_no_case_that_holds_and_no_otherwise_outputs_null() -> None:
    spec = flow(
        BranchStep(
            name="route",
            cases=(Case(when=Truthy(value=Ref("input.go")), steps=(tool("a"),)),),
        ),
        MapStep(name="after", output=Ref("steps.route.output")),
    )
    sim = simulate(spec, {"go": False})
    assert sim.state.output is None and call_ids(sim.records) == []


def test_a_step_of_a_case_not_taken_does_not_resolve() -> None:
    spec = flow(
        BranchStep(
            name="route",
            cases=(Case(when=Truthy(value=Lit(False)), steps=(tool("a"),)),),
            otherwise=(tool("b"),),
        ),
        MapStep(name="after", output=Ref("steps.a.output")),
    )
    sim = simulate(spec)
    assert settled(sim.records)["after"] == ("failed", "reference")
    assert "step a has not run" in failure(sim)


# -- foreach ------------------------------------------------------------------------------------


def test_a_foreach_runs_at_most_concurrency_items_per_round_and_keeps_item_order() -> None:
    spec = flow(
        ForeachStep(
            name="orders",
            items=Ref("input.orders"),
            concurrency=2,
            steps=(tool("charge", order=Ref("item"), at=Ref("index")),),
        )
    )
    sim = simulate(spec, {"orders": ["a", "b", "c"]})
    rounds = [
        [c.call_id for c in r.body.calls] for r in sim.records if r.body.type == "steps_planned"
    ]
    assert rounds[:2] == [["orders[0].charge", "orders[1].charge"], ["orders[2].charge"]]
    assert sim.state.output == [
        {"call": f"orders[{i}].charge", "order": order, "at": i}
        for i, order in enumerate(["a", "b", "c"])
    ]


def test_a_foreach_of_nothing_outputs_an_empty_list_and_of_a_non_list_fails() -> None:
    assert (
        simulate(flow(ForeachStep(name="f", items=Lit([]), steps=(tool("a"),)))).state.output == []
    )
    sim = simulate(flow(ForeachStep(name="f", items=Lit({"a": 1}), steps=(tool("a"),))))
    assert settled(sim.records)["f"] == ("failed", "error")
    assert "its items are an object" in failure(sim)


def test_outside_a_foreach_its_steps_do_not_resolve_and_its_output_does() -> None:
    inner = ForeachStep(name="f", items=Lit([1, 2]), steps=(tool("a"),))
    sim = simulate(flow(inner, MapStep(name="all", output=Ref("steps.f.output"))))
    assert sim.state.output == [{"call": "f[0].a"}, {"call": "f[1].a"}]
    sim = simulate(flow(inner, MapStep(name="one", output=Ref("steps.a.output"))))
    assert "runs once per item of foreach 'f'" in failure(sim)


def test_an_item_that_fails_fails_the_foreach_and_no_further_item_starts() -> None:
    spec = flow(ForeachStep(name="f", items=Lit([1, 2, 3, 4]), concurrency=2, steps=(tool("a"),)))
    sim = simulate(spec, script=results({"f[1].a": Fail()}))
    assert call_ids(sim.records) == ["f[0].a", "f[1].a"]
    assert settled(sim.records)["f"] == ("failed", "error")


# -- loop ---------------------------------------------------------------------------------------


def test_a_loop_runs_until_its_condition_holds_and_outputs_the_last_iteration() -> None:
    spec = flow(
        LoopStep(
            name="poll",
            until=Compare(left=Ref("steps.check.output.n"), op="gte", right=Lit(2)),
            steps=(ToolStep(name="check", tool=TOOL, arguments={"n": Ref("iteration")}),),
        ),
        MapStep(name="last", output=Ref("steps.check.output.n")),
    )
    sim = simulate(spec)
    assert call_ids(sim.records) == ["poll[0].check", "poll[1].check", "poll[2].check"]
    # After the loop, a step inside it is its last iteration's.
    assert sim.state.output == 2
    assert settled(sim.records)["poll"] == ("completed", {"call": "poll[2].check", "n": 2})


def test_a_loop_runs_while_its_condition_holds_before_each_iteration() -> None:
    spec = flow(
        SetStateStep(name="start", values={"left": Lit(3)}),
        LoopStep(
            name="count",
            repeat_while=Compare(left=Ref("iteration"), op="lt", right=Ref("state.left")),
            steps=(SetStateStep(name="seen", values={"last": Ref("iteration")}),),
        ),
        MapStep(name="out", output=Ref("state.last")),
    )
    sim = simulate(spec)
    assert sim.state.output == 2
    assert len(plans(sim.records)) == 1


@pytest.mark.parametrize(("exhausted", "status"), [("fail", "failed"), ("stop", "completed")])
def test_a_loop_whose_condition_never_stops_it_is_exhausted(exhausted: str, status: str) -> None:
    spec = flow(
        LoopStep(
            name="spin",
            until=Truthy(value=Lit(False)),
            max_iterations=3,
            exhausted=exhausted,
            steps=(tool("a"),),
        )
    )
    sim = simulate(spec)
    assert len(call_ids(sim.records)) == 3
    assert sim.state.status == status
    if status == "failed":
        assert "ran max_iterations=3 times and its condition still asks for more" in failure(sim)


def test_a_loop_with_no_condition_runs_max_iterations_times() -> None:
    sim = simulate(flow(LoopStep(name="thrice", max_iterations=3, steps=(tool("a"),))))
    assert call_ids(sim.records) == ["thrice[0].a", "thrice[1].a", "thrice[2].a"]
    assert sim.state.status == "completed"


def test_a_loops_past_iterations_are_dropped_from_the_progress() -> None:
    spec = flow(LoopStep(name="l", max_iterations=50, steps=(tool("a"), tool("b"))))
    sim = simulate(spec)
    progress = sim.state.workflow
    assert progress is not None
    # Only the last iteration is kept (for the steps after the loop), plus the loop itself.
    assert sorted(progress.results) == ["l", "l[49].a", "l[49].b"]


# -- map, set_state -----------------------------------------------------------------------------


def test_map_and_set_state_are_decided_in_the_plan_with_no_call() -> None:
    spec = flow(
        SetStateStep(name="init", values={"count": Lit(1), "who": Ref("input.who")}),
        MapStep(name="greet", output=Obj(fields={"hi": Ref("state.who"), "n": Ref("state.count")})),
        MapStep(name="missing", output=Ref("state.nope"), on_failure="continue"),
    )
    sim = simulate(spec, {"who": "ann"})
    assert call_ids(sim.records) == []
    assert settled(sim.records)["greet"] == ("completed", {"hi": "ann", "n": 1})
    assert settled(sim.records)["missing"] == ("failed", "reference")
    assert sim.state.workflow is not None and sim.state.workflow.values == {
        "count": 1,
        "who": "ann",
    }


# -- sleep, wait, human -------------------------------------------------------------------------


def test_a_sleep_is_a_timed_wait_recorded_with_its_due_time() -> None:
    spec = flow(SleepStep(name="nap", seconds=90), tool("after"))
    sim = simulate(spec)
    planned = sim.records[2].body
    assert isinstance(planned, StepsPlanned)
    call = planned.calls[0]
    assert call.name == "psych:sleep" and call.due_at == T0 + dt.timedelta(seconds=90)
    assert settled(sim.records)["nap"][0] == "completed"
    assert sim.state.status == "completed"


def test_a_sleep_until_a_past_time_ends_at_once_and_an_invalid_time_fails() -> None:
    past = simulate(flow(SleepStep(name="nap", until=Lit("2020-01-01T00:00:00+00:00"))))
    assert call_ids(past.records) == [] and past.state.status == "completed"
    bad = simulate(flow(SleepStep(name="nap", until=Lit("tomorrow"))))
    assert "not an ISO 8601 time with an offset" in failure(bad)


def test_a_sleep_longer_than_its_timeout_fails_with_kind_timeout() -> None:
    sim = simulate(flow(SleepStep(name="nap", seconds=600, timeout=60)))
    assert settled(sim.records)["nap"] == ("failed", "timeout")


def test_a_wait_step_ends_with_its_events_payload() -> None:
    spec = flow(
        WaitStep(name="paid", event="payment"),
        MapStep(name="n", output=Ref("steps.paid.output.amount")),
    )
    sim = simulate(spec, script=results({"paid": Ok({"amount": 12})}))
    assert sim.state.output == 12


def test_a_wait_payload_that_breaks_its_schema_fails_with_kind_invalid_output() -> None:
    spec = flow(
        WaitStep(
            name="paid",
            event="payment",
            payload_schema={"type": "object", "required": ["amount"]},
        )
    )
    sim = simulate(spec, script=results({"paid": Ok({"cents": 12})}))
    assert settled(sim.records)["paid"] == ("failed", "invalid_output")
    assert "the payload of event 'payment' does not match its schema" in failure(sim)


def test_a_wait_that_times_out_fails_with_kind_timeout() -> None:
    sim = simulate(
        flow(WaitStep(name="paid", event="payment", timeout=30)), script=results({"paid": Late()})
    )
    assert settled(sim.records)["paid"] == ("failed", "timeout")


def test_a_human_step_asks_its_question_and_its_answer_is_checked() -> None:
    spec = flow(HumanStep(name="ok", question="Ship it?", answer_schema={"type": "boolean"}))
    sim = simulate(spec, script=results({"ok": Ok(True)}))
    planned = sim.records[2].body
    assert isinstance(planned, StepsPlanned)
    assert planned.calls[0].name == "psych:human" and "Ship it?" in planned.calls[0].arguments
    assert sim.state.output is True
    bad = simulate(spec, script=results({"ok": Ok("yes")}))
    assert settled(bad.records)["ok"] == ("failed", "invalid_output")


# -- guards -------------------------------------------------------------------------------------


def test_a_guard_that_does_not_hold_skips_the_step_and_one_that_breaks_fails_it() -> None:
    spec = flow(
        ToolStep(name="a", tool=TOOL, when=Compare(left=Ref("input.n"), op="gt", right=Lit(5))),
        ToolStep(name="b", tool=TOOL, when=Exists(ref=Ref("steps.a.output"))),
        MapStep(name="c", output=Ref("steps.a.status")),
    )
    sim = simulate(spec, {"n": 1})
    assert settled(sim.records)["a"] == ("skipped", None)
    # A skipped step settled with a null output, so a reference to it resolves.
    assert settled(sim.records)["b"][0] == "completed"
    assert sim.state.output == "skipped"
    broken = simulate(flow(ToolStep(name="a", tool=TOOL, when=Truthy(value=Ref("input.x.y")))), {})
    assert settled(broken.records)["a"] == ("failed", "reference")
    assert "its guard" in failure(broken)


# -- retries ------------------------------------------------------------------------------------


def test_a_retry_waits_its_backoff_in_a_sleep_call_then_tries_again() -> None:
    spec = flow(
        ToolStep(
            name="charge",
            tool=TOOL,
            retry=Retry(attempts=4, backoff=10, multiplier=3, cap=50),
        )
    )
    script = results({"charge": Fail(), "charge#2": Fail(), "charge#3": Fail()})
    sim = simulate(spec, script=script)
    assert call_ids(sim.records) == [
        "charge",
        "charge~2",
        "charge#2",
        "charge~3",
        "charge#3",
        "charge~4",
        "charge#4",
    ]
    retrying = [
        e
        for r in sim.records
        if isinstance(r.body, StepsPlanned)
        for e in r.body.events
        if e.type == "retrying"
    ]
    # 10 s, then 30 s, then 90 s capped at 50 s: each counted from when the try failed.
    waits = [(e.due_at - r) for e, r in zip(retrying, _failed_at(sim), strict=True)]  # type: ignore[operator]
    assert waits == [dt.timedelta(seconds=s) for s in (10, 30, 50)]
    assert sim.state.status == "completed"
    # Each try counts as a start; the waits between them do not.
    assert sim.state.workflow is not None and sim.state.workflow.starts == 4


def _failed_at(sim: Simulation) -> list[dt.datetime]:
    return [r.at for r in sim.records if r.body.type == "tool_call_failed"]


def test_a_retry_with_no_backoff_tries_again_in_the_same_round() -> None:
    spec = flow(ToolStep(name="a", tool=TOOL, retry=Retry(attempts=2, backoff=0)))
    sim = simulate(spec, script=results({"a": Fail()}))
    assert call_ids(sim.records) == ["a", "a#2"]


def test_a_retry_applies_only_to_its_failure_kinds_and_its_attempts() -> None:
    only_timeouts = flow(ToolStep(name="a", tool=TOOL, retry=Retry(attempts=3, on=("timeout",))))
    sim = simulate(only_timeouts, script=results({"a": Fail()}))
    assert call_ids(sim.records) == ["a"] and settled(sim.records)["a"] == ("failed", "error")
    twice = flow(ToolStep(name="a", tool=TOOL, retry=Retry(attempts=2, backoff=0)))
    sim = simulate(twice, script=results({"a": Fail(), "a#2": Fail(error="again")}))
    assert call_ids(sim.records) == ["a", "a#2"]
    assert "again" in failure(sim)


def test_a_container_takes_no_retry() -> None:
    with pytest.raises(ValueError, match="parallel step 'p' takes no retry"):
        flow(ParallelStep(name="p", branches={"a": (tool("a"),)}, retry=Retry()))


# -- container timeouts -------------------------------------------------------------------------


def test_a_containers_timeout_cuts_the_waits_inside_it_and_fails_it() -> None:
    spec = flow(
        ParallelStep(
            name="gather",
            timeout=60,
            branches={"a": (WaitStep(name="w", event="e"),), "b": (tool("t"),)},
        )
    )
    sim = simulate(spec, script=results({"w": Late()}))
    planned = sim.records[2].body
    assert isinstance(planned, StepsPlanned)
    wait = next(c for c in planned.calls if c.call_id == "w")
    assert wait.due_at == T0 + dt.timedelta(seconds=60)
    assert settled(sim.records)["gather"] == ("failed", "timeout")


# -- on_failure, output_schema, max_steps -------------------------------------------------------


def test_on_failure_continue_records_the_failure_and_goes_on() -> None:
    spec = flow(
        ToolStep(name="a", tool=TOOL, on_failure="continue"),
        MapStep(
            name="b",
            output=Obj(fields={"out": Ref("steps.a.output"), "why": Ref("steps.a.failure.kind")}),
        ),
    )
    sim = simulate(spec, script=results({"a": Fail()}))
    assert sim.state.output == {"out": None, "why": "error"}


def test_an_output_that_breaks_the_steps_schema_fails_with_kind_invalid_output() -> None:
    spec = flow(
        ToolStep(
            name="a",
            tool=TOOL,
            output_schema={"type": "object", "required": ["id"]},
        )
    )
    sim = simulate(spec)
    assert settled(sim.records)["a"] == ("failed", "invalid_output")
    assert "its output does not match its schema" in failure(sim)


def test_max_steps_bounds_the_step_starts_of_a_run() -> None:
    spec = flow(LoopStep(name="l", max_iterations=100, steps=(tool("a"),)), max_steps=5)
    sim = simulate(spec)
    assert len(call_ids(sim.records)) == 5
    assert sim.state.failure_reason == "max_steps"
    assert "reached max_steps=5 step starts before step l[5].a could start" in failure(sim)


# -- failure kinds that come from the call ------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "kind"),
    [
        (Fail(reason="error"), "error"),
        (Fail(reason="timeout"), "timeout"),
        (Fail(reason="invalid_arguments"), "error"),
        (Fail(reason="unknown_tool"), "denied"),
        (Fail(reason="cancelled"), "cancelled"),
        (Unknown(), "outcome_unknown"),
    ],
)
def test_a_calls_failure_is_the_steps_failure_kind(outcome: Outcome, kind: str) -> None:
    sim = simulate(flow(tool("a")), script=results({"a": outcome}))
    assert settled(sim.records)["a"] == ("failed", kind)
    assert f"failed at step a ({kind})" in failure(sim)


def test_a_denied_approval_fails_the_step_with_kind_denied() -> None:
    guarded = CodeTool(name="pay", requires_approval=True)
    spec = flow(ToolStep(name="pay", tool=guarded, arguments={"cents": Lit(5)}))
    denied = simulate(spec, script=results({"pay": Fail()}))
    kinds = [r.body.type for r in denied.records]
    assert "approval_requested" in kinds and "approval_decided" in kinds
    assert settled(denied.records)["pay"] == ("failed", "denied")
    approved = simulate(spec, script=lambda call_id, name, arguments: Ok("yes"))
    assert approved.state.status == "completed"


def test_a_crash_during_an_unsafe_call_is_outcome_unknown_and_a_safe_one_runs_again() -> None:
    from tests.unit._simulate_workflow import Crash

    unsafe = simulate(flow(tool("a")), script=results({"a": Crash()}))
    assert settled(unsafe.records)["a"] == ("failed", "outcome_unknown")
    assert [r.body.type for r in unsafe.records].count("tool_call_started") == 1
    safe = simulate(flow(ToolStep(name="a", tool=SAFE)), script=results({"a": Crash()}))
    assert safe.state.status == "completed"
    assert [r.body.type for r in safe.records].count("tool_call_started") == 2


# -- the fold -----------------------------------------------------------------------------------


def test_a_log_folds_to_the_same_progress_without_the_spec() -> None:
    spec = flow(
        ForeachStep(name="f", items=Lit([1, 2, 3]), concurrency=2, steps=(tool("a"),)),
        LoopStep(
            name="l",
            max_iterations=3,
            steps=(SetStateStep(name="s", values={"i": Ref("iteration")}),),
        ),
        WaitStep(name="w", event="go"),
    )
    sim = simulate(spec)
    bare = fold_all(RunState.empty("W1"), sim.records)
    assert bare.workflow == sim.state.workflow
    assert bare.output == sim.state.output and bare.status == "completed"

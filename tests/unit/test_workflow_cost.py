"""A step's cost is flat with the log: at iteration 1,000 of a long loop, planning visits the same
steps and the progress folded holds the same entries as at iteration 10. (Work is counted
here; the time it takes is measured in bench/.)"""

from __future__ import annotations

from psych_core import (
    CodeTool,
    ForeachStep,
    Lit,
    LoopStep,
    ParallelStep,
    Record,
    Ref,
    RunState,
    SetStateStep,
    StepsPlanned,
    ToolStep,
    WorkflowProgress,
    WorkflowSpec,
    fold,
    plan_round,
)
from tests.unit._simulate_workflow import T0, simulate

TOOL = CodeTool(name="work")

LONG = WorkflowSpec(
    name="long",
    max_steps=10_000,
    steps=(
        ToolStep(name="setup", tool=TOOL),
        LoopStep(
            name="poll",
            max_iterations=1_100,
            steps=(
                ToolStep(name="check", tool=TOOL, arguments={"i": Ref("iteration")}),
                ParallelStep(
                    name="fan",
                    branches={
                        "a": (ToolStep(name="left", tool=TOOL),),
                        "b": (SetStateStep(name="seen", values={"last": Ref("iteration")}),),
                    },
                ),
                ForeachStep(
                    name="items",
                    items=Lit([1, 2, 3]),
                    concurrency=3,
                    steps=(ToolStep(name="each", tool=TOOL, arguments={"x": Ref("item")}),),
                ),
            ),
        ),
    ),
)


def _states_before_plans(records: list[Record]) -> list[RunState]:
    """The state the planner saw before each `StepsPlanned` of the log."""
    state = RunState.empty("W1", LONG)
    before: list[RunState] = []
    for record in records:
        if isinstance(record.body, StepsPlanned):
            before.append(state)
        state = fold(state, record)
    return before


def _entries(progress: WorkflowProgress | None) -> int:
    assert progress is not None
    return sum(
        len(part)
        for part in (
            progress.results,
            progress.frames,
            progress.values,
            progress.retrying,
            progress.last_iteration,
            progress.events,
        )
    )


def _iteration_of(state: RunState) -> int | None:
    """The loop iteration whose `check` call ended in the round before this plan."""
    for call in state.calls:
        if call.call.call_id.startswith("poll[") and call.call.call_id.endswith("].check"):
            return int(call.call.call_id[len("poll[") : call.call.call_id.index("]")])
    return None


def test_planning_and_folding_at_iteration_1000_do_the_work_of_iteration_10() -> None:
    sim = simulate(LONG, max_records=200_000)
    assert sim.state.status == "completed"
    by_iteration = {
        number: state
        for state in _states_before_plans(sim.records)
        if (number := _iteration_of(state)) is not None
    }
    early, late = by_iteration[10], by_iteration[1_000]
    assert late.last_seq > 50 * early.last_seq  # the log is long by then
    early_plan = plan_round(LONG, early, T0)
    late_plan = plan_round(LONG, late, T0)
    # The walk visits the live steps only: the same number at both.
    assert early_plan.visited == late_plan.visited
    assert len(early_plan.events) == len(late_plan.events)
    assert len(early_plan.calls) == len(late_plan.calls)
    # What the fold keeps does not grow either.
    assert _entries(early.workflow) == _entries(late.workflow)
    assert len(early.calls) == len(late.calls)


STRAIGHT = WorkflowSpec(
    name="straight",
    max_steps=2_000,
    steps=tuple(
        ToolStep(name=f"s{index}", tool=TOOL, arguments={"i": Lit(index)}) for index in range(1_024)
    ),
)


def test_a_round_far_down_a_long_sequence_walks_no_more_than_one_near_its_start() -> None:
    sim = simulate(STRAIGHT, max_records=10_000)
    assert sim.state.status == "completed"
    state = RunState.empty("W1", STRAIGHT)
    visited: dict[int, int] = {}
    for record in sim.records:
        if isinstance(record.body, StepsPlanned) and record.body.calls:
            started = int(record.body.calls[0].call_id.removeprefix("s"))
            visited[started] = plan_round(STRAIGHT, state, T0).visited
        state = fold(state, record)
    # The settled steps before the next one are found by bisection, not walked one by one.
    assert visited[1_000] <= visited[20] + 2
    assert visited[1_000] <= 14

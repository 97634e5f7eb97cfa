"""Property tests of workflow logs: any prefix of any valid log folds, folding in chunks equals
folding the whole (with or without the spec), and a step's memo key, and so every plan, does
not depend on the order concurrent calls finish in, nor on crashes that re-run safe calls."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from psych_core import Record, RunState, ToolCall, WorkflowSpec, fold, fold_all
from tests.unit._simulate_workflow import Crash, Outcome, Simulation, plans, settled
from tests.unit._workflow_strategies import seeded_script, workflows

FOLDS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _simulate(data: st.DataObject, spec: WorkflowSpec, seed: int, crashes: bool) -> Simulation:
    def order(calls: list[ToolCall]) -> list[ToolCall]:
        return data.draw(st.permutations(calls), label="order")

    crashed = 0

    def crash_between() -> bool:
        # At most a few crashes, and rare ones: hypothesis shrinks a draw towards 0, no crash.
        nonlocal crashed
        if not crashes or crashed >= 4 or data.draw(st.integers(0, 14), label="crash") < 14:
            return False
        crashed += 1
        return True

    simulation = Simulation(
        spec, {"n": 1}, script=seeded_script(seed), order=order, crash_between=crash_between
    )
    simulation.run()
    return simulation


def _same(a: RunState, b: RunState) -> None:
    assert replace(a, conversation=b.conversation) == b


@FOLDS
@given(st.data(), workflows(), st.integers(0, 10_000), st.integers(1, 9))
def test_any_prefix_of_a_workflow_log_folds_and_chunks_fold_like_the_whole(
    data: st.DataObject, spec: WorkflowSpec, seed: int, chunk: int
) -> None:
    simulation = _simulate(data, spec, seed, crashes=True)
    records = simulation.records
    assert simulation.state.ended, "a simulated run always ends"
    whole = fold_all(RunState.empty("W1", spec), records)
    _same(whole, simulation.state)
    state = RunState.empty("W1", spec)
    for index, record in enumerate(records):
        state = fold(state, record)
        if index % 5 == 0:
            _same(fold_all(RunState.empty("W1", spec), records[: index + 1]), state)
    chunked = RunState.empty("W1", spec)
    for start in range(0, len(records), chunk):
        chunked = fold_all(chunked, records[start : start + chunk])
    _same(chunked, whole)
    # Without the spec (a status or a stream), the same progress and output.
    bare = fold_all(RunState.empty("W1"), records)
    assert bare.workflow == whole.workflow and bare.output == whole.output
    parsed = [Record.model_validate_json(r.model_dump_json()) for r in records]
    _same(fold_all(RunState.empty("W1", spec), parsed), whole)


@FOLDS
@given(st.data(), workflows(unsafe=False), st.integers(0, 10_000))
def test_plans_do_not_depend_on_the_order_calls_finish_in_nor_on_crashes(
    data: st.DataObject, spec: WorkflowSpec, seed: int
) -> None:
    calm = Simulation(spec, {"n": 1}, script=seeded_script(seed))
    calm.run()
    shuffled = _simulate(data, spec, seed, crashes=True)
    # Every round was planned alike, under the same memo keys, and ended alike.
    assert plans(shuffled.records) == plans(calm.records)
    assert shuffled.state.status == calm.state.status
    assert shuffled.state.output == calm.state.output
    assert shuffled.state.workflow is not None and calm.state.workflow is not None
    assert shuffled.state.workflow.results == calm.state.workflow.results


@FOLDS
@given(st.data(), workflows(), st.integers(0, 10_000))
def test_no_completed_step_runs_twice_and_an_unsafe_one_only_once(
    data: st.DataObject, spec: WorkflowSpec, seed: int
) -> None:
    base = seeded_script(seed)
    crashed: set[str] = set()

    def script(call_id: str, name: str, arguments: dict[str, object]) -> Outcome:
        # Some calls are cut off by a worker dying mid-call, at random.
        if name in ("safe", "unsafe") and data.draw(st.integers(0, 6), label="dies") == 6:
            crashed.add(call_id)
            return Crash()
        return base(call_id, name, arguments)

    simulation = Simulation(spec, {"n": 1}, script=script)
    simulation.run()
    records = simulation.records
    # A call is cut off when a new attempt starts between its start and its outcome: the
    # worker died with it in flight (every call of a round is started before any runs).
    starts: dict[str, int] = {}
    tools: dict[str, str] = {}
    open_calls: set[str] = set()
    cut_off: set[str] = set()
    for record in records:
        body = record.body
        match body.type:
            case "tool_call_started":
                starts[body.call_id] = starts.get(body.call_id, 0) + 1
                tools[body.call_id] = body.name
                open_calls.add(body.call_id)
            case "tool_call_finished" | "tool_call_failed" | "tool_call_settled":
                open_calls.discard(body.call_id)
            case "attempt_started":
                cut_off |= open_calls
            case _:
                pass
    for call_id, started in starts.items():
        # Started again only after a crash, and only when its tool is safe to retry.
        assert started == 1 or (call_id in cut_off and tools[call_id] != "unsafe"), call_id
    unknown = {r.body.call_id for r in records if r.body.type == "tool_call_settled"}
    assert unknown <= cut_off
    assert all(tools[call_id] == "unsafe" for call_id in unknown)
    assert crashed <= cut_off
    # Each step settled once: the planner never records a step twice.
    keys = [
        e.key
        for r in records
        if r.body.type == "steps_planned"
        for e in r.body.events
        if e.type in ("settled", "state_set")
    ]
    assert len(keys) == len(set(keys)) == len(settled(records))

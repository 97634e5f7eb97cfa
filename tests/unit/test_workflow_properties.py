"""Property tests of workflow logs: any prefix of any valid log folds, folding in chunks equals
folding the whole (with or without the spec), and a step's memo key, and so every plan, does
not depend on the order concurrent calls finish in, nor on crashes that re-run safe calls.
Pausing before every step changes nothing but the pauses; a replay from any step copies what
settled before it and ends alike; the step tree folds from any prefix and shows the progress
the engine holds."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from psych_core import (
    Record,
    ReplayOf,
    RunState,
    StepResult,
    ToolCall,
    WorkflowSpec,
    copied_steps,
    fold,
    fold_all,
    parse_call_id,
    replay_start,
    step_name,
    walk,
    workflow_view_of,
)
from tests.unit._simulate_workflow import Crash, Outcome, Simulation, call_ids, plans, settled
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


def _timeless(value: object) -> object:
    """`value` with the times a sleep step ends at left out: a run that paused slept later."""
    match value:
        case {"until": str()}:
            return "<a time>"
        case dict():
            return {key: _timeless(inner) for key, inner in value.items()}
        case list() | tuple():
            return [_timeless(inner) for inner in value]
        case StepResult(status=status, output=output, failure=failure):
            return (status, _timeless(output), failure)
        case _:
            return value


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


@FOLDS
@given(workflows(), st.integers(0, 10_000))
def test_pausing_before_every_step_changes_nothing_but_the_pauses(
    spec: WorkflowSpec, seed: int
) -> None:
    # No call fails: a failure inside a foreach or a parallel stops what has not started yet,
    # and pauses change what had started by then.
    script = seeded_script(seed, failures=1_000_000)
    calm = Simulation(spec, {"n": 1}, script=script)
    calm.run()
    stepped = Simulation(spec, {"n": 1}, script=script, step_mode=True)
    stepped.run()
    assert stepped.state.status == calm.state.status
    assert _timeless(stepped.state.output) == _timeless(calm.state.output)
    assert stepped.state.workflow is not None and calm.state.workflow is not None
    assert _timeless(stepped.state.workflow.results) == _timeless(calm.state.workflow.results)
    # Every step that started paused first, once, before its first try.
    planned = call_ids(stepped.records)
    paused = [c for c in planned if parse_call_id(c).pause]
    assert len(paused) == len(set(paused))
    for call_id in planned:
        parsed = parse_call_id(call_id)
        if parsed.is_try and parsed.attempt == 1:
            assert planned.index(f"{parsed.key}!") < planned.index(call_id), call_id
    assert sorted(c for c in planned if not c.endswith("!")) == sorted(call_ids(calm.records))


@FOLDS
@given(st.data(), workflows(), st.integers(0, 10_000))
def test_a_replay_copies_what_settled_before_its_step_and_ends_alike(
    data: st.DataObject, spec: WorkflowSpec, seed: int
) -> None:
    source = Simulation(spec, {"n": 1}, script=seeded_script(seed))
    source.run()
    leaves = [parse_call_id(c).key for c in call_ids(source.records)]
    leaves += [key for key in settled(source.records) if not key.endswith("]")]
    names = sorted({step_name(key) for key in leaves} | {step.name for step in walk(spec.steps)})
    start_name = data.draw(st.sampled_from(names), label="from_step")
    keyed = [key for key in leaves if step_name(key) == start_name]
    given_as = data.draw(st.sampled_from([start_name, *keyed]), label="given as")
    start = replay_start(spec, given_as)
    copied = copied_steps(spec, spec, source.records, start)
    replayed = Simulation(
        spec,
        {"n": 1},
        script=seeded_script(seed),
        run_id="W2",
        replay_of=ReplayOf(run_id="W1", from_step=start, steps=copied),
    )
    replayed.run()
    # Outcomes depend on the step's key alone, so the replay ends as the run it replays did
    # (but for the times its sleeps end at: it slept later).
    assert replayed.state.status == source.state.status
    assert _timeless(replayed.state.output) == _timeless(source.state.output)
    # Nothing copied ran again; every copied step settled as replayed, with its old result.
    again = {parse_call_id(c).key for c in call_ids(replayed.records)}
    assert not again & {step.key for step in copied}
    marked = {
        e.key: e
        for r in replayed.records
        if r.body.type == "steps_planned"
        for e in r.body.events
        if e.type in ("settled", "state_set") and e.replayed
    }
    reached = {key for key, _ in settled(replayed.records).items()}
    assert set(marked) == {step.key for step in copied} & reached
    before = settled(source.records)
    for key in marked:
        assert settled(replayed.records)[key] == before[key]
    # The view of either run folds, and shows the copied steps as replayed.
    view = workflow_view_of(spec, replayed.records)
    assert {v.key for v in view.walk() if v.status == "replayed"} == set(marked)


@FOLDS
@given(st.data(), workflows(), st.integers(0, 10_000))
def test_the_view_folds_every_prefix_and_agrees_with_the_progress(
    data: st.DataObject, spec: WorkflowSpec, seed: int
) -> None:
    simulation = _simulate(data, spec, seed, crashes=True)
    records = simulation.records
    for end in range(1, len(records) + 1, max(1, len(records) // 12)):
        workflow_view_of(spec, records[:end])
    view = workflow_view_of(spec, records)
    assert view.status == simulation.state.status
    assert view.output == simulation.state.output
    # Each live settled step shows the status and output the engine's progress holds.
    progress = simulation.state.workflow
    assert progress is not None
    shown = {v.key: v for v in view.walk()}
    for key, result in progress.results.items():
        if key.endswith("]"):
            continue
        assert shown[key].status == result.status, key
        assert shown[key].output == result.output, key
    # A try is a row of the report, for every call of a step planned.
    tries = {row.call_id for row in view.tries() if row.call_id is not None}
    assert tries == {c for c in call_ids(records) if parse_call_id(c).is_try}

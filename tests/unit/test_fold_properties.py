"""Property tests of the reducer on logs the simulator and the runtime write."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from psych_core import RunState, fold, fold_all, readable_status
from psych_runtime.errors import CorruptLog, FoldError
from psych_runtime.records import (
    ModelCallFinished,
    OutputRejected,
    Record,
    RunCompleted,
    SignalReceived,
    ToolCallFinished,
    UserInput,
)
from tests.unit._simulate import (
    SPEC,
    STRUCTURED_SPEC,
    T0,
    completed_log,
    messages_json,
    simulate,
)


def _same(a: RunState, b: RunState) -> None:
    assert replace(a, conversation=b.conversation) == b
    assert messages_json(a) == messages_json(b)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_prefix_of_a_valid_log_folds(data: st.DataObject) -> None:
    records = simulate(data)
    state = RunState.empty("R1", SPEC)
    for index, record in enumerate(records):
        # Folding from scratch any prefix gives the state folded so far.
        state = fold(state, record)
        if index % 7 == 0 or index == len(records) - 1:
            _same(fold_all(RunState.empty("R1", SPEC), records[: index + 1]), state)
    assert state.ended or len(records) >= 120


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(1, 10))
def test_folding_record_by_record_equals_folding_the_whole_log(
    data: st.DataObject, chunk: int
) -> None:
    records = simulate(data)
    whole = fold_all(RunState.empty("R1", SPEC), records)
    incremental = RunState.empty("R1", SPEC)
    for start in range(0, len(records), chunk):
        incremental = fold_all(incremental, records[start : start + chunk])
    _same(incremental, whole)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_log_read_back_from_json_folds_to_the_same_state(data: st.DataObject) -> None:
    records = simulate(data)
    parsed = [Record.model_validate_json(record.model_dump_json()) for record in records]
    assert parsed == records
    _same(
        fold_all(RunState.empty("R1", SPEC), parsed), fold_all(RunState.empty("R1", SPEC), records)
    )


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_record_out_of_place_is_an_error_naming_run_and_seq(data: st.DataObject) -> None:
    records = simulate(data)
    state = fold_all(RunState.empty("R1", SPEC), records[:-1])
    last = records[-1]
    with pytest.raises(
        CorruptLog, match=r"run R1, seq \d+: the log is corrupt: seq \d+ is missing"
    ):
        fold(state, last.model_copy(update={"seq": last.seq + 1}))
    with pytest.raises(CorruptLog, match=r"run R1, seq \d+: the log is corrupt: seq \d+ repeats"):
        fold(fold(state, last), last)


def test_records_after_the_end_and_unknown_calls_are_refused() -> None:
    log = completed_log()
    state = fold_all(RunState.empty("R1", SPEC), log)
    assert state.status == "completed"
    extra = Record(run_id="R1", seq=state.next_seq, attempt=1, at=T0, body=RunCompleted())
    with pytest.raises(FoldError, match="after the run ended"):
        fold(state, extra)
    running = fold_all(RunState.empty("R1", SPEC), log[:4])
    stray = Record(
        run_id="R1",
        seq=running.next_seq,
        attempt=1,
        at=T0,
        body=ToolCallFinished(call_id="99.0", result=None),
    )
    with pytest.raises(FoldError, match=r"run R1, seq 4: .*unknown call 99\.0"):
        fold(running, stray)


def test_a_log_must_start_with_run_admitted() -> None:
    log = completed_log()
    with pytest.raises(FoldError, match="log starts with attempt_started"):
        fold(RunState.empty("R1", SPEC), log[1].model_copy(update={"seq": 0}))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_logs_with_approvals_waits_children_and_signals_fold_every_way(
    data: st.DataObject,
) -> None:
    from tests.unit._simulate_signals import SPEC as FULL_SPEC
    from tests.unit._simulate_signals import Simulation

    records = Simulation(data).run()
    whole = fold_all(RunState.empty("R1", FULL_SPEC), records)
    parsed = [Record.model_validate_json(r.model_dump_json()) for r in records]
    _same(fold_all(RunState.empty("R1", FULL_SPEC), parsed), whole)
    half = len(records) // 2
    _same(
        fold_all(fold_all(RunState.empty("R1", FULL_SPEC), records[:half]), records[half:]), whole
    )
    # Every inbox entry moved in exactly once, in order.
    numbers = [getattr(r.body, "number", None) for r in records]
    moved = [n for n in numbers if n is not None]
    assert moved == list(range(1, len(moved) + 1))
    assert whole.inbox_seen == len(moved)


def _rejections_per_turn(records: list[Record]) -> list[list[OutputRejected]]:
    """The `OutputRejected` records of a log, grouped by the user message they answer."""
    turns: list[list[OutputRejected]] = [[]]
    for record in records:
        body = record.body
        if isinstance(body, SignalReceived) and isinstance(body.signal, UserInput):
            turns.append([])
        elif isinstance(body, OutputRejected):
            turns[-1].append(body)
    return turns


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(1, 10))
def test_logs_with_rejected_answers_fold_every_way(data: st.DataObject, chunk: int) -> None:
    records = simulate(data, spec=STRUCTURED_SPEC)
    whole = fold_all(RunState.empty("R1", STRUCTURED_SPEC), records)
    incremental = RunState.empty("R1", STRUCTURED_SPEC)
    for start in range(0, len(records), chunk):
        incremental = fold_all(incremental, records[start : start + chunk])
    _same(incremental, whole)
    parsed = [Record.model_validate_json(record.model_dump_json()) for record in records]
    _same(fold_all(RunState.empty("R1", STRUCTURED_SPEC), parsed), whole)
    # Tries are numbered 1, 2, ... and never exceed output_retries + 1.
    tries = [body.try_number for body in _rejections_per_turn(records)[0]]
    assert tries == list(range(1, len(tries) + 1))
    assert len(tries) <= STRUCTURED_SPEC.output_retries + 1
    if whole.status == "completed":
        assert whole.output == {"ok": True}
    if whole.failure_reason == "invalid_output":
        # Every answer was rejected, the last one too, and the error names each by its seq.
        answers = [r.seq for r in records if isinstance(r.body, ModelCallFinished)]
        rejected = [r.body.answer_seq for r in records if isinstance(r.body, OutputRejected)]
        assert rejected[-1] == answers[-1]
        assert all(f"seq {seq}: " in (whole.error or "") for seq in rejected)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rejected_answers_with_signals_fold_every_way(data: st.DataObject) -> None:
    from tests.unit._simulate_signals import STRUCTURED_SPEC as SIGNAL_SPEC
    from tests.unit._simulate_signals import Simulation

    records = Simulation(data, spec=SIGNAL_SPEC).run()
    whole = fold_all(RunState.empty("R1", SIGNAL_SPEC), records)
    parsed = [Record.model_validate_json(r.model_dump_json()) for r in records]
    _same(fold_all(RunState.empty("R1", SIGNAL_SPEC), parsed), whole)
    half = len(records) // 2
    _same(
        fold_all(fold_all(RunState.empty("R1", SIGNAL_SPEC), records[:half]), records[half:]),
        whole,
    )
    # A new user message starts its tries again from 1.
    for turn in _rejections_per_turn(records):
        assert [body.try_number for body in turn] == list(range(1, len(turn) + 1))
        assert len(turn) <= SIGNAL_SPEC.output_retries + 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(1, 10))
def test_logs_with_threads_queues_questions_and_compactions_fold_every_way(
    data: st.DataObject, chunk: int
) -> None:
    from psych_core import carried_history, own_messages
    from tests.unit._simulate_signals import CONVERSATION_SPEC, Simulation

    records = Simulation(data, spec=CONVERSATION_SPEC).run()
    whole = fold_all(RunState.empty("R1", CONVERSATION_SPEC), records)
    # Any prefix folds (a reader meets the log at any point), with or without the spec, and
    # reads as a status.
    reader = RunState.empty("R1")
    for end, record in enumerate(records, start=1):
        reader = fold(reader, record)
        if end % 9 == 0:
            assert readable_status("R1", records[:end]).status == reader.status
    incremental = RunState.empty("R1", CONVERSATION_SPEC)
    for start in range(0, len(records), chunk):
        incremental = fold_all(incremental, records[start : start + chunk])
    _same(incremental, whole)
    parsed = [Record.model_validate_json(r.model_dump_json()) for r in records]
    _same(fold_all(RunState.empty("R1", CONVERSATION_SPEC), parsed), whole)
    # Every inbox entry moved in exactly once, in order; each user message lands in exactly
    # one place: the conversation, a waiting queue, or the next run's.
    moved = [n for r in records if (n := getattr(r.body, "number", None)) is not None]
    assert moved == list(range(1, len(moved) + 1))
    sent = [
        r.body.signal
        for r in records
        if isinstance(r.body, SignalReceived) and isinstance(r.body.signal, UserInput)
    ]
    kept = [m.text for m in sent if m.queue == "next_run"]
    assert list(whole.next_run) == kept
    said = sum(
        1
        for m in (own.message for own in own_messages(whole))
        if getattr(m, "role", "") == "user" and getattr(m, "text", "") in ("also this", "and then")
    )
    waiting = len(whole.pending_input) + len(whole.follow_ups)
    assert said + waiting == len([m for m in sent if m.queue != "next_run"])
    # What a continuation would carry never parts a tool call from its result.
    open_ids: set[str] = set()
    for message in carried_history(whole):
        for call in getattr(message, "tool_calls", ()):
            open_ids.add(call.call_id)
        if getattr(message, "role", "") == "tool":
            open_ids.discard(message.call_id)  # type: ignore[union-attr]
    assert not open_ids
    # A compaction always keeps from the start of a user turn.
    messages = whole.conversation.messages()
    if whole.summary is not None:
        assert getattr(messages[whole.kept_from], "role", "") == "user"

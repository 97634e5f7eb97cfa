"""The timeline fold: logs written by hand, record by record, with the times chosen, and the bars,
marks and gaps a screen draws from them."""

from __future__ import annotations

import datetime as dt

from psych_playground.timeline import GAP_SECONDS, Timeline, fold_timeline
from psych_runtime import Scope
from psych_runtime.ports import ToolCall
from psych_runtime.records import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptStarted,
    Body,
    ModelCallFailed,
    ModelCallFinished,
    Record,
    Resume,
    RunAdmitted,
    RunCompleted,
    RunSuspended,
    SignalReceived,
    StepCall,
    StepSettled,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
)

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


class Log:
    """A run's log, written one record at a time, each `after` seconds past the one before."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.at = T0
        self.attempt = 0
        self.add(
            RunAdmitted(
                agent="support", spec_version="sha256:x", input="hi", scope=Scope(tenant="default")
            )
        )

    def add(self, body: Body, after: float = 0.0) -> Record:
        self.at += dt.timedelta(seconds=after)
        if isinstance(body, AttemptStarted):
            self.attempt += 1
        record = Record(
            run_id="R1", seq=len(self.records), attempt=self.attempt, at=self.at, body=body
        )
        self.records.append(record)
        return record

    def claim(self, after: float = 0.1) -> None:
        self.add(AttemptStarted(worker_id=f"w{self.attempt + 1}"), after)

    def model(self, after: float, text: str | None = None, *calls: str) -> None:
        seq = len(self.records)
        tool_calls = tuple(
            ToolCall(call_id=f"{seq}.{i}", name=name, arguments="{}")
            for i, name in enumerate(calls)
        )
        self.add(ModelCallFinished(model="demo", text=text, tool_calls=tool_calls), after)

    def fold(self, now: dt.datetime | None = None, *, agent: bool = True) -> Timeline:
        return fold_timeline(self.records, now=now or self.at, agent=agent)


def _bars(timeline: Timeline) -> list[tuple[str, str | None, int, int | None, int]]:
    return [(bar.kind, bar.outcome, bar.seq, bar.end_seq, bar.lane) for bar in timeline.bars]


def test_a_run_that_calls_a_tool_and_answers() -> None:
    log = Log()
    log.claim()
    log.model(2.0, None, "lookup_order")  # seq 2, call 2.0
    log.add(ToolCallStarted(call_id="2.0", name="lookup_order"), 0.01)
    log.add(ToolCallFinished(call_id="2.0", result={"ok": True}), 0.5)
    log.model(1.0, "Shipped.")
    log.add(RunCompleted(output="Shipped."), 0.01)
    timeline = log.fold()
    assert _bars(timeline) == [
        ("attempt", "completed", 1, 6, 0),
        ("model", "finished", 2, 2, 1),
        ("tool", "finished", 3, 4, 2),
        ("model", "finished", 5, 5, 1),
    ]
    model = timeline.bars[1]
    # A model call begins when the record before it was committed.
    assert (model.start, model.end) == (log.records[1].at, log.records[2].at)
    assert timeline.bars[2].label == "lookup_order 2.0"
    assert [(mark.kind, mark.seq, mark.label) for mark in timeline.marks] == [
        ("end", 6, "completed")
    ]
    assert (timeline.start, timeline.end) == (T0, log.at)
    assert timeline.gaps == []


def test_an_approval_wait_is_a_bar_and_an_idle_gap() -> None:
    log = Log()
    log.claim()
    log.model(1.0, None, "refund")  # seq 2
    log.add(ApprovalRequested(call_id="2.0", rule="amount gt 100"), 0.01)
    log.add(RunSuspended(reason="approval", calls=("2.0",)), 0.01)  # seq 4
    log.claim(600.0)  # woken ten minutes later: seq 5
    log.add(ApprovalDecided(number=1, call_id="2.0", approved=True, by="ann"), 0.01)
    log.add(ToolCallStarted(call_id="2.0", name="refund"), 0.01)
    log.add(ToolCallFinished(call_id="2.0", result={"refunded": 90}), 0.2)
    log.model(1.0, "Refunded.")
    log.add(RunCompleted(), 0.01)
    timeline = log.fold()
    kinds = [(bar.kind, bar.outcome) for bar in timeline.bars]
    assert kinds == [
        ("attempt", "suspended"),
        ("model", "finished"),
        ("approval", "approved"),
        ("attempt", "completed"),
        ("tool", "finished"),
        ("model", "finished"),
    ]
    approval = timeline.bars[2]
    assert (approval.label, approval.lane, approval.seq, approval.end_seq) == (
        "approve refund? (amount gt 100)",
        3,
        3,
        6,
    )
    [gap] = timeline.gaps
    assert (gap.start, gap.end) == (log.records[4].at, log.records[5].at)
    assert gap.seconds == 600.0


def test_a_crash_is_marked_and_the_call_it_cut_off_settles_unknown() -> None:
    log = Log()
    log.claim()
    log.model(1.0, None, "refund")
    log.add(ToolCallStarted(call_id="2.0", name="refund"), 0.01)  # seq 3; the worker dies
    log.claim(20.0)  # seq 4: another worker, once the lease expired
    log.add(ToolCallSettled(call_id="2.0", note="cut off by a crash"), 0.01)
    log.model(1.0, "Not sure it went through.")
    log.add(RunCompleted(), 0.01)
    timeline = log.fold()
    assert _bars(timeline) == [
        ("attempt", "lost", 1, 3, 0),
        ("model", "finished", 2, 2, 1),
        ("tool", "unknown", 3, None, 2),
        ("attempt", "completed", 4, 7, 0),
        ("model", "finished", 6, 6, 1),
    ]
    assert timeline.bars[2].end == log.records[3].at  # it was last seen there
    assert [(mark.kind, mark.seq) for mark in timeline.marks] == [
        ("crash", 4),
        ("unknown", 5),
        ("end", 7),
    ]
    crash = timeline.marks[0]
    assert crash.at == log.records[3].at
    assert "attempt 1 stopped without suspending or ending" in crash.label
    # No worker held the run for 20 s: not long enough to compress.
    assert GAP_SECONDS > 20
    assert timeline.gaps == []


def test_a_run_in_progress_has_open_bars_and_ends_now() -> None:
    log = Log()
    log.claim()
    log.model(1.0, None, "wait_a_bit")
    log.add(ToolCallStarted(call_id="2.0", name="wait_a_bit"), 0.01)
    now = log.at + dt.timedelta(seconds=5)
    timeline = log.fold(now)
    assert _bars(timeline) == [
        ("attempt", None, 1, None, 0),
        ("model", "finished", 2, 2, 1),
        ("tool", None, 3, None, 2),
    ]
    assert all(bar.end is None for bar in (timeline.bars[0], timeline.bars[2]))
    assert timeline.end == now
    log.add(ToolCallFinished(call_id="2.0", result=1), 1.0)
    # The tool has answered and the worker holds the run: its model is answering now.
    thinking = log.fold(now).bars[-1]
    assert (thinking.kind, thinking.label, thinking.end, thinking.seq) == (
        "model",
        "model call in progress",
        None,
        5,
    )
    assert thinking.start == log.at
    assert all(bar.label != "model call in progress" for bar in log.fold(now, agent=False).bars)


def test_a_refused_call_and_failed_model_tries() -> None:
    log = Log()
    log.claim()
    log.add(ModelCallFailed(model="demo", error="overloaded", status=529), 3.0)  # seq 2
    log.model(0.0, None, "nope")  # seq 3, same append
    log.add(ToolCallFailed(call_id="3.0", reason="unknown_tool", error="no tool nope"), 0.01)
    log.model(1.0, "Sorry.")
    log.add(RunCompleted(), 0.01)
    bars = log.fold().bars
    failed, answered, refused = bars[1], bars[2], bars[3]
    assert (failed.kind, failed.outcome, failed.label) == ("model", "failed", "demo: overloaded")
    assert failed.start == answered.start == log.records[1].at  # tries of one call share a start
    assert (refused.kind, refused.outcome, refused.start, refused.end) == (
        "tool",
        "failed",
        log.records[4].at,
        log.records[4].at,
    )


def test_a_question_to_the_user_waits_in_the_waits_lane() -> None:
    log = Log()
    log.claim()
    log.model(1.0, None, "ask_user")
    log.add(ToolCallStarted(call_id="2.0", name="ask_user"), 0.01)
    log.add(ToolCallWaiting(call_id="2.0", note="asked"), 0.01)
    log.add(RunSuspended(reason="external", calls=("2.0",)), 0.01)
    log.claim(45.0)
    signal = Resume(payload="yes", call_id="2.0")
    log.add(SignalReceived(number=1, key="answer:2.0", signal=signal), 0.01)  # seq 7
    log.add(ToolCallFinished(call_id="2.0", result="yes"), 0.01)
    timeline = log.fold()
    wait = next(bar for bar in timeline.bars if bar.kind == "wait")
    assert (wait.label, wait.outcome, wait.lane, wait.seq, wait.end_seq) == (
        "question to the user",
        "finished",
        3,
        4,
        8,
    )
    assert next(bar for bar in timeline.bars if bar.kind == "tool").outcome == "waiting"
    assert [(mark.kind, mark.label) for mark in timeline.marks] == [("signal", "answer to 2.0")]
    [gap] = timeline.gaps
    assert gap.seconds == 45.0


def test_a_workflows_steps_have_their_own_lane() -> None:
    log = Log()
    log.claim()
    call = StepCall(call_id="lookup", name="lookup_order", arguments="{}")
    log.add(StepsPlanned(calls=(call,), starts=1), 0.01)  # seq 2
    log.add(ToolCallStarted(call_id="lookup", name="lookup_order"), 0.01)
    log.add(ToolCallFinished(call_id="lookup", result={"ok": 1}), 0.3)
    settled = StepSettled(key="lookup", status="completed", output={"ok": 1})
    skipped = StepSettled(key="refund", status="skipped")
    log.add(StepsPlanned(events=(settled, skipped)), 0.01)  # seq 5
    log.add(RunCompleted(output={"ok": 1}), 0.01)
    timeline = log.fold(agent=False)
    steps = [(b.label, b.outcome, b.seq, b.end_seq) for b in timeline.bars if b.kind == "step"]
    assert steps == [("lookup (lookup_order)", "completed", 2, 4), ("refund", "skipped", 5, 5)]
    assert {bar.lane for bar in timeline.bars if bar.kind == "step"} == {4}

"""A run's timeline: its log folded into bars, marks and idle gaps, for a screen to draw. Pure.

Lanes, top to bottom:

    0  attempts    one bar per attempt, from its claim to its suspension or the run's end
    1  model       one bar per model call (and per failed try, and per compaction)
    2  tools       one bar per tool call, from its start to its outcome
    3  waits       approvals (requested to decided), waiting calls (a question, an external
                   wait), and suspensions that wait on no call (a workflow's sleep)
    4  steps       a workflow's steps, from the round that planned them to their outcome

A model call has no record of its start: the runtime calls the model right after the commit
before it, so its bar begins at the last record before its answer (failed tries of the same
call share that start). A bar whose end is None is still open.

Marks are instants: ``crash`` (an attempt that stopped without suspending or ending the run: a
crash or a lost lease), ``unknown`` (a call settled with its outcome unknown), ``signal``
(something the run was told: a user message, a cancel, a resume, an answer; or one it ignored)
and ``end`` (the run's final record).

Gaps are stretches longer than `GAP_SECONDS` in which no worker held the run (no attempt, model
or tool bar is open) and nothing was written: a run that waited a day for an approval draws its
seconds of work readably, with the day compressed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from psych_runtime.records import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptStarted,
    CompactionFailed,
    ConversationCompacted,
    ItemStarted,
    IterationStarted,
    ModelCallFailed,
    ModelCallFinished,
    Record,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunSuspended,
    SignalIgnored,
    SignalReceived,
    StateSet,
    StepEntered,
    StepSettled,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
)

GAP_SECONDS = 30.0
ASK_TOOL = "ask_user"

BarKind = Literal["model", "tool", "wait", "attempt", "approval", "step"]
MarkKind = Literal["crash", "unknown", "signal", "end"]
LANES: dict[BarKind, int] = {
    "attempt": 0,
    "model": 1,
    "tool": 2,
    "wait": 3,
    "approval": 3,
    "step": 4,
}
WORKING_LANES = frozenset({0, 1, 2})


class Bar(BaseModel):
    """Something that took time: `seq` is the record that began it, `end_seq` the one that
    ended it (None while open, like `end`)."""

    kind: BarKind
    label: str
    start: dt.datetime
    end: dt.datetime | None
    outcome: str | None
    seq: int
    end_seq: int | None
    lane: int


class Mark(BaseModel):
    """Something that happened at an instant, at record `seq`."""

    kind: MarkKind
    at: dt.datetime
    seq: int
    label: str


class Gap(BaseModel):
    """An idle stretch, for a screen to compress."""

    start: dt.datetime
    end: dt.datetime
    seconds: float


class Timeline(BaseModel):
    """A run's timeline: from its first record to its last (or to now, while it goes on)."""

    start: dt.datetime
    end: dt.datetime
    bars: list[Bar]
    marks: list[Mark]
    gaps: list[Gap]


@dataclass
class _Open:
    """A bar while the fold builds it."""

    kind: BarKind
    label: str
    start: dt.datetime
    seq: int
    end: dt.datetime | None = None
    outcome: str | None = None
    end_seq: int | None = None

    def close(self, at: dt.datetime, outcome: str | None, seq: int | None) -> None:
        self.end, self.outcome, self.end_seq = at, outcome, seq


def fold_timeline(records: Sequence[Record], *, now: dt.datetime, agent: bool = True) -> Timeline:
    """The timeline of the run whose log is `records` (at least its first record), at `now`.

    `agent` says whether it is an agent's run: while a worker holds one with no call open, its
    model is answering, and an open model bar says so.
    """
    if not records:
        raise ValueError("a run's timeline needs at least its first record")
    fold = _Fold(records[0])
    for record in records:
        fold.add(record)
    return fold.timeline(now=now, agent=agent)


class _Fold:
    """The fold's state: the bars so far, and those still open, by what will close them."""

    def __init__(self, first: Record) -> None:
        self.bars: list[_Open] = []
        self.marks: list[Mark] = []
        self.times: list[dt.datetime] = []
        self.attempt: _Open | None = None
        self.attempt_number = 0
        self.tools: dict[str, _Open] = {}  # open tool bars, by call id
        self.tool_bars: dict[str, _Open] = {}  # the latest tool bar of each call, open or not
        self.waits: dict[str, _Open] = {}  # open approval and wait bars, by call id
        self.steps: dict[str, _Open] = {}  # open step bars, by memo key or call id
        self.step_bars: dict[str, _Open] = {}  # the latest step bar of each key, open or not
        self.suspension: _Open | None = None
        self.names: dict[str, str] = {}  # the tool each call id calls
        self.failures: list[Record] = []  # failed model tries, until their call's end
        self.boundary = first.at  # when the next model call began: the last commit before it
        self.last = first
        self.ended: Record | None = None

    def add(self, record: Record) -> None:
        body = record.body
        if isinstance(body, AttemptStarted):
            self._attempt(record, body)
        elif isinstance(body, ModelCallFailed):
            self.failures.append(record)
        elif isinstance(body, ModelCallFinished):
            self._model(record, body.model, "finished")
            for call in body.tool_calls:
                self.names[call.call_id] = call.name
        elif isinstance(body, ConversationCompacted):
            self._model(record, f"{body.model}: compaction", "finished")
        elif isinstance(body, CompactionFailed):
            self._model(record, f"{body.model}: compaction", "failed")
        elif isinstance(body, ApprovalRequested):
            label = f"approve {self.names.get(body.call_id, body.call_id)}? ({body.rule})"
            self._open(self.waits, body.call_id, "approval", label, record)
        elif isinstance(body, ApprovalDecided):
            self._close(self.waits, body.call_id, record, "approved" if body.approved else "denied")
        elif isinstance(body, ToolCallStarted):
            self.names[body.call_id] = body.name
            bar = self._open(self.tools, body.call_id, "tool", self._call(body.call_id), record)
            self.tool_bars[body.call_id] = bar
        elif isinstance(body, ToolCallWaiting):
            self._close(self.tools, body.call_id, record, "waiting")
            asking = self.names.get(body.call_id) == ASK_TOOL
            label = "question to the user" if asking else f"{self._call(body.call_id)} waits"
            label += f": {body.note}" if body.note and not asking else ""
            self._open(self.waits, body.call_id, "wait", label, record)
        elif isinstance(body, ToolCallFinished):
            self._outcome(record, body.call_id, "finished")
        elif isinstance(body, ToolCallFailed):
            self._outcome(record, body.call_id, "denied" if body.reason == "denied" else "failed")
        elif isinstance(body, ToolCallSettled):
            self._outcome(record, body.call_id, "unknown")
            self._mark("unknown", record, f"{self._call(body.call_id)}: outcome unknown")
        elif isinstance(body, SignalReceived):
            self._mark("signal", record, _signal_label(body))
        elif isinstance(body, SignalIgnored):
            self._mark("signal", record, f"ignored: {body.reason}")
        elif isinstance(body, RunSuspended):
            self._suspended(record, body)
        elif isinstance(body, StepsPlanned):
            self._planned(record, body)
        elif isinstance(body, RunCompleted | RunFailed | RunCancelled):
            self._ended(record, body)
        if not isinstance(body, ModelCallFailed):
            self.boundary = record.at
        self.times.append(record.at)
        self.last = record

    def _call(self, call_id: str) -> str:
        return f"{self.names.get(call_id, 'call')} {call_id}"

    def _attempt(self, record: Record, body: AttemptStarted) -> None:
        if self.attempt is not None:
            # The attempt before neither suspended nor ended the run: it stopped (a crash, a
            # lease that expired) some time after its last record.
            stopped = self.last
            self.attempt.close(stopped.at, "lost", stopped.seq)
            for bar in self.tools.values():
                bar.close(stopped.at, "interrupted", None)
            self.tools.clear()
            label = (
                f"attempt {self.attempt_number} stopped without suspending or ending the run "
                "(a crash or a lost lease)"
            )
            self.marks.append(Mark(kind="crash", at=stopped.at, seq=record.seq, label=label))
        if self.suspension is not None:
            self.suspension.close(record.at, "woken", record.seq)
            self.suspension = None
        label = f"attempt {record.attempt} ({body.worker_id})"
        self.attempt = _Open("attempt", label, record.at, record.seq)
        self.attempt_number = record.attempt
        self.bars.append(self.attempt)

    def _model(self, record: Record, label: str, outcome: str) -> None:
        for failed in self.failures:
            assert isinstance(failed.body, ModelCallFailed)
            bar = _Open(
                "model", f"{failed.body.model}: {failed.body.error}", self.boundary, failed.seq
            )
            bar.close(failed.at, "failed", failed.seq)
            self.bars.append(bar)
        self.failures.clear()
        bar = _Open("model", label, self.boundary, record.seq)
        bar.close(record.at, outcome, record.seq)
        self.bars.append(bar)

    def _outcome(self, record: Record, call_id: str, outcome: str) -> None:
        self._close(self.waits, call_id, record, outcome)
        self._close(self.steps, call_id, record, outcome)
        if call_id in self.tools:
            self._close(self.tools, call_id, record, outcome)
        elif call_id in self.tool_bars:
            if outcome == "unknown":  # cut off by a crash, and now known to be unknown
                self.tool_bars[call_id].outcome = outcome
        elif call_id not in self.step_bars:
            # Refused before it began (denied, an unknown tool, bad arguments): an instant.
            bar = _Open("tool", self._call(call_id), record.at, record.seq)
            bar.close(record.at, outcome, record.seq)
            self.tool_bars[call_id] = bar
            self.bars.append(bar)

    def _suspended(self, record: Record, body: RunSuspended) -> None:
        if self.attempt is not None:
            self.attempt.close(record.at, "suspended", record.seq)
            self.attempt = None
        if not body.calls:
            label = f"suspended ({body.reason})"
            if body.due_at is not None:
                label = f"suspended until {body.due_at.isoformat()}"
            self.suspension = _Open("wait", label, record.at, record.seq)
            self.bars.append(self.suspension)

    def _planned(self, record: Record, body: StepsPlanned) -> None:
        for event in body.events:
            if isinstance(event, StepEntered):
                label = f"{event.kind} {event.key}"
                self.step_bars[event.key] = self._open(self.steps, event.key, "step", label, record)
            elif isinstance(event, ItemStarted | IterationStarted):
                index = event.index if isinstance(event, ItemStarted) else event.iteration
                key = f"{event.key}[{index}]"
                self.step_bars[key] = self._open(self.steps, key, "step", key, record)
            elif isinstance(event, StepSettled):
                self._settle_step(event.key, record, "replayed" if event.replayed else event.status)
            elif isinstance(event, StateSet):
                self._settle_step(event.key, record, "replayed" if event.replayed else "completed")
        for call in body.calls:
            self.names[call.call_id] = call.name
            label = f"{call.call_id} ({call.name})"
            self.step_bars[call.call_id] = self._open(
                self.steps, call.call_id, "step", label, record
            )

    def _settle_step(self, key: str, record: Record, outcome: str) -> None:
        if key in self.steps:
            self._close(self.steps, key, record, outcome)
        elif key in self.step_bars:
            # Its call ended it; the planner says how the step ended (a result that breaks the
            # step's output schema fails a step whose call finished).
            self.step_bars[key].outcome = outcome
        else:
            # Settled by the planner alone (a map, a guard that skipped it): an instant.
            bar = _Open("step", key, record.at, record.seq)
            bar.close(record.at, outcome, record.seq)
            self.step_bars[key] = bar
            self.bars.append(bar)

    def _ended(self, record: Record, body: RunCompleted | RunFailed | RunCancelled) -> None:
        status = {"run_completed": "completed", "run_failed": "failed"}.get(body.type, "cancelled")
        for bar in self.bars:
            if bar.end is None:
                bar.close(record.at, status if bar.kind == "attempt" else "ended", record.seq)
        self.attempt, self.suspension = None, None
        self.tools.clear()
        self.waits.clear()
        self.steps.clear()
        label = status
        if isinstance(body, RunFailed):
            label = f"failed ({body.reason}): {body.error}"
        elif isinstance(body, RunCancelled) and body.reason:
            label = f"cancelled: {body.reason}"
        self._mark("end", record, label)
        self.ended = record

    def _open(
        self, where: dict[str, _Open], key: str, kind: BarKind, label: str, record: Record
    ) -> _Open:
        bar = where.get(key)
        if bar is None:  # one already open (a step planned again) keeps its first start
            bar = _Open(kind, label, record.at, record.seq)
            where[key] = bar
            self.bars.append(bar)
        return bar

    def _close(self, where: dict[str, _Open], key: str, record: Record, outcome: str) -> None:
        bar = where.pop(key, None)
        if bar is not None:
            bar.close(record.at, outcome, record.seq)

    def _mark(self, kind: MarkKind, record: Record, label: str) -> None:
        self.marks.append(Mark(kind=kind, at=record.at, seq=record.seq, label=label))

    def timeline(self, *, now: dt.datetime, agent: bool) -> Timeline:
        drawn = list(self.bars)
        if self.ended is None and agent and self.attempt is not None and not self.tools:
            # A worker holds the run and no call is open: its model is answering.
            drawn.append(_Open("model", "model call in progress", self.boundary, self.last.seq + 1))
        start = self.times[0]
        end = self.last.at if self.ended is not None else max(now, self.last.at)
        bars = [
            Bar(
                kind=bar.kind,
                label=bar.label,
                start=bar.start,
                end=bar.end,
                outcome=bar.outcome,
                seq=bar.seq,
                end_seq=bar.end_seq,
                lane=LANES[bar.kind],
            )
            for bar in drawn
        ]
        gaps = idle_gaps(bars, self.times, start, end)
        return Timeline(start=start, end=end, bars=bars, marks=self.marks, gaps=gaps)


def idle_gaps(
    bars: Sequence[Bar], instants: Sequence[dt.datetime], start: dt.datetime, end: dt.datetime
) -> list[Gap]:
    """The stretches of [`start`, `end`] longer than `GAP_SECONDS` that no working bar (attempt,
    model, tool; open ones until `end`) and no instant falls in."""
    busy = [(bar.start, bar.end or end) for bar in bars if bar.lane in WORKING_LANES]
    busy += [(at, at) for at in instants]
    busy.sort()
    gaps: list[Gap] = []
    cursor = start
    for begin, finish in busy:
        if (begin - cursor).total_seconds() > GAP_SECONDS:
            gaps.append(_gap(cursor, begin))
        cursor = max(cursor, finish)
    if (end - cursor).total_seconds() > GAP_SECONDS:
        gaps.append(_gap(cursor, end))
    return gaps


def _gap(start: dt.datetime, end: dt.datetime) -> Gap:
    return Gap(start=start, end=end, seconds=(end - start).total_seconds())


def _signal_label(body: SignalReceived) -> str:
    signal = body.signal
    match signal.kind:
        case "user_input":
            return f"user message ({signal.queue})"
        case "cancel":
            return f"cancel: {signal.reason}" if signal.reason else "cancel"
        case "resume":
            if signal.event is not None:
                return f"event {signal.event}"
            if signal.breakpoint:
                return "continue"
            return f"answer to {signal.call_id}" if signal.call_id else "resume"
        case "child_ended":
            return f"child run {signal.child_run_id} ended ({signal.status})"
        case _:
            return signal.kind

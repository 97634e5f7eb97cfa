"""A workflow run's progress, folded from the events its `StepsPlanned` records carry.

`WorkflowProgress` is what the planner reads: each settled step's result by memo key, the
containers running, ``state.*``, the events that arrived before a step waited for them. It
holds only what is live: when a foreach item ends, what its steps left is dropped (its output
joins the foreach's list); when a loop starts an iteration, the one before it is dropped (the
last one stays, for the steps after the loop). So a step at iteration 1,000 of a loop folds and
plans like one at iteration 10: nothing here grows with the log, only with the spec (and a
foreach's outputs, which are its result).

The reducer and the planner apply events through the same `ProgressWriter`, so what the
planner saw while it planned is exactly what a reader folds afterwards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NoReturn

from pydantic import JsonValue

from psych_core._errors import CorruptLog
from psych_core._workflow_events import (
    EventTaken,
    ItemStarted,
    IterationStarted,
    StateSet,
    StepEntered,
    StepEvent,
    StepFailure,
    StepRetrying,
    StepSettled,
    StepStatus,
)
from psych_core._workflow_keys import indexed, split_index

ContainerKind = Literal["parallel", "branch", "foreach", "loop"]


@dataclass(frozen=True, slots=True)
class StepResult:
    """How a settled step ended: its output, or why it failed."""

    status: StepStatus
    output: JsonValue = None
    failure: StepFailure | None = None


@dataclass(frozen=True, slots=True, eq=False)
class ItemOutputs:
    """The outputs of a foreach's settled items, newest first: each item adds one link and
    shares the rest, so settling an item costs the same at item 1,000 as at item 10."""

    index: int
    output: JsonValue
    rest: ItemOutputs | None = None

    def ordered(self, count: int) -> list[JsonValue]:
        """The outputs by item index, for `count` items."""
        out: list[JsonValue] = [None] * count
        link: ItemOutputs | None = self
        while link is not None:
            out[link.index] = link.output
            link = link.rest
        return out

    def _pairs(self) -> list[tuple[int, JsonValue]]:
        pairs: list[tuple[int, JsonValue]] = []
        link: ItemOutputs | None = self
        while link is not None:
            pairs.append((link.index, link.output))
            link = link.rest
        return pairs

    def __eq__(self, other: object) -> bool:
        # Compared link by link in a loop: a chain of thousands would overflow the recursion
        # the generated comparison uses.
        if not isinstance(other, ItemOutputs):
            return NotImplemented
        return self._pairs() == other._pairs()

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class ContainerFrame:
    """A container step that started and has not settled.

    Attributes:
        kind: which container.
        due_at: when it times out.
        cases: a branch's chosen cases; `otherwise`: whether it chose its otherwise.
        items: a foreach's items.
        started: how many items (foreach) or iterations (loop) started.
        running: the foreach items started and not settled.
        done: how many items or iterations settled.
        outputs: the settled foreach items' outputs.
        last_output: the output of the loop's last settled iteration.
    """

    kind: ContainerKind
    due_at: dt.datetime | None = None
    cases: tuple[int, ...] = ()
    otherwise: bool = False
    items: tuple[JsonValue, ...] = ()
    started: int = 0
    running: tuple[int, ...] = ()
    done: int = 0
    outputs: ItemOutputs | None = None
    last_output: JsonValue = None


@dataclass(frozen=True, slots=True)
class WorkflowProgress:
    """A workflow run's progress: what its planner reads (see the module's docstring).

    Attributes:
        results: each settled step's result, by memo key (what is live: see above).
        frames: the containers started and not settled, by memo key.
        values: the workflow's named state (``state.NAME``).
        retrying: the steps that failed a try and will be tried again, by memo key.
        last_iteration: the last iteration each loop started, by the loop's memo key.
        events: named events that arrived before a wait step asked for them, oldest first.
        starts: step starts so far (against `WorkflowSpec.max_steps`).
        rounds: how many rounds were planned (`StepsPlanned` records).
        output: the workflow's output, once it completed.
    """

    results: Mapping[str, StepResult] = field(default_factory=dict)
    frames: Mapping[str, ContainerFrame] = field(default_factory=dict)
    values: Mapping[str, JsonValue] = field(default_factory=dict)
    retrying: Mapping[str, StepRetrying] = field(default_factory=dict)
    last_iteration: Mapping[str, int] = field(default_factory=dict)
    events: Mapping[str, tuple[JsonValue, ...]] = field(default_factory=dict)
    starts: int = 0
    rounds: int = 0
    output: JsonValue = None

    def result(self, key: str) -> StepResult | None:
        """The result of the settled step `key`, or None."""
        return self.results.get(key)

    def buffered(self, event: str, payload: JsonValue) -> WorkflowProgress:
        """This progress with `payload` kept for the next wait step asking for `event`."""
        events = dict(self.events)
        events[event] = (*events.get(event, ()), payload)
        return replace(self, events=events)


class ProgressWriter:
    """Applies planner events to a copy of a `WorkflowProgress`: for the reducer (one copy per
    record) and for the planner (its working copy while it plans).

    Raises `CorruptLog` (naming `run_id` and `seq`) for an event that does not fit.
    """

    def __init__(self, progress: WorkflowProgress, run_id: str, seq: int) -> None:
        self.run_id = run_id
        self.seq = seq
        self.results = dict(progress.results)
        self.frames = dict(progress.frames)
        self.values = dict(progress.values)
        self.retrying = dict(progress.retrying)
        self.last_iteration = dict(progress.last_iteration)
        self.events = dict(progress.events)
        self._base = progress

    def freeze(self, *, starts: int = 0, rounds: int = 0) -> WorkflowProgress:
        """The progress after the events applied, with `starts` step starts and `rounds`
        rounds added."""
        return replace(
            self._base,
            results=self.results,
            frames=self.frames,
            values=self.values,
            retrying=self.retrying,
            last_iteration=self.last_iteration,
            events=self.events,
            starts=self._base.starts + starts,
            rounds=self._base.rounds + rounds,
        )

    def apply(self, event: StepEvent) -> None:
        """Apply one event."""
        match event:
            case StepSettled():
                self._settled(event)
            case StateSet(key=key, values=values):
                self._unsettled(key, "state_set")
                self.results[key] = StepResult("completed", dict(values))
                self.values.update(values)
                self.retrying.pop(key, None)
            case StepEntered(key=key):
                self._unsettled(key, "entered")
                if key in self.frames:
                    self._corrupt(f"container step {key} entered twice")
                self.frames[key] = ContainerFrame(
                    kind=event.kind,
                    due_at=event.due_at,
                    cases=event.cases,
                    otherwise=event.otherwise,
                    items=event.items,
                )
            case ItemStarted(key=key, index=index):
                frame = self._frame(key, "foreach", event.type)
                if index != frame.started or index >= len(frame.items):
                    self._corrupt(
                        f"item {index} of foreach {key} started out of turn (next is "
                        f"{frame.started} of {len(frame.items)})"
                    )
                self.frames[key] = replace(
                    frame, started=index + 1, running=(*frame.running, index)
                )
            case IterationStarted(key=key, iteration=iteration):
                frame = self._frame(key, "loop", event.type)
                if iteration != frame.started or frame.done != frame.started:
                    self._corrupt(
                        f"iteration {iteration} of loop {key} started out of turn ("
                        f"{frame.started} started, {frame.done} ended)"
                    )
                if iteration > 0:
                    # The iteration before is over and no reference reaches it any more.
                    self._drop(indexed(key, iteration - 1) + ".")
                self.frames[key] = replace(frame, started=iteration + 1)
                self.last_iteration[key] = iteration
            case StepRetrying(key=key):
                self._unsettled(key, event.type)
                self.retrying[key] = event
            case EventTaken(name=name):
                waiting = self.events.get(name, ())
                if not waiting:
                    self._corrupt(f"step {event.key} took event {name!r}, but none arrived")
                if len(waiting) > 1:
                    self.events[name] = waiting[1:]
                else:
                    del self.events[name]

    def _settled(self, event: StepSettled) -> None:
        key = event.key
        split = split_index(key)
        frame = self.frames.get(split[0]) if split is not None else None
        if split is not None and frame is not None and frame.kind in ("foreach", "loop"):
            base, index = split
            if frame.kind == "foreach":
                if index not in frame.running:
                    self._corrupt(f"item {key} settled, but it is not running")
                outputs = frame.outputs
                if event.status == "completed":
                    outputs = ItemOutputs(index, event.output, outputs)
                self.frames[base] = replace(
                    frame,
                    running=tuple(i for i in frame.running if i != index),
                    done=frame.done + 1,
                    outputs=outputs,
                )
                self._drop(key + ".")
            else:
                if index != frame.started - 1 or frame.done != index:
                    self._corrupt(f"iteration {key} settled, but it is not the one running")
                self.frames[base] = replace(frame, done=frame.done + 1, last_output=event.output)
            return
        self._unsettled(key, event.type)
        self.frames.pop(key, None)
        self.results[key] = StepResult(event.status, event.output, event.failure)
        self.retrying.pop(key, None)

    def _unsettled(self, key: str, what: str) -> None:
        if key in self.results:
            self._corrupt(f"{what} for step {key}, which has already settled")

    def _frame(self, key: str, kind: ContainerKind, what: str) -> ContainerFrame:
        frame = self.frames.get(key)
        if frame is None or frame.kind != kind:
            self._corrupt(f"{what} for {key}, which is not a running {kind} step")
        return frame

    def _drop(self, prefix: str) -> None:
        mappings: tuple[MutableMapping[str, Any], ...] = (
            self.results,
            self.frames,
            self.retrying,
            self.last_iteration,
        )
        for mapping in mappings:
            for key in [key for key in mapping if key.startswith(prefix)]:
                del mapping[key]

    def _corrupt(self, problem: str) -> NoReturn:
        raise CorruptLog(self.run_id, self.seq, problem)


EMPTY_PROGRESS = WorkflowProgress()
"""The progress of a workflow run before its first round."""

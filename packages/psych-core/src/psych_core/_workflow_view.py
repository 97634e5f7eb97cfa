"""A workflow run's step tree, read back from its log: what `psych_runtime.workflow_view`
returns and `psych inspect` draws.

The log is folded by the reducer the engine uses (`fold`), record by record, so a log the
engine could not fold is refused here the same way (`CorruptLog`, naming the run and the seq);
beside it, each step's tries, times, inputs and outcomes are gathered from the records that
carry them (the `StepsPlanned` events and calls, and the results of the calls). The tree then
follows the spec: every step in its place, ``pending`` until the run reaches it; a foreach
with one entry per item, a loop one per iteration; a branch with the cases it chose.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from psych_core._fold import fold
from psych_core._records import (
    ApprovalDecided,
    ApprovalRequested,
    ChildStarted,
    Record,
    RunAdmitted,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallWaiting,
)
from psych_core._state import FINAL_STATUSES, RunState, RunStatusName
from psych_core._workflow_events import (
    ItemStarted,
    IterationStarted,
    StateSet,
    StepCall,
    StepEntered,
    StepFailure,
    StepRetrying,
    StepSettled,
)
from psych_core._workflow_keys import indexed, parse_call_id, step_name
from psych_core._workflow_spec import (
    CONTAINERS,
    HUMAN_TOOL,
    SLEEP_TOOL,
    WAIT_TOOL,
    BranchStep,
    ForeachStep,
    LoopStep,
    ParallelStep,
    Step,
    WorkflowSpec,
)

StepViewStatus = Literal[
    "pending",
    "running",
    "waiting",
    "paused",
    "retrying",
    "completed",
    "failed",
    "skipped",
    "replayed",
]
"""Where a step is: not reached yet (``pending``); started (``running``); waiting for an
event, an answer, a time, an approval (``waiting``); paused at a breakpoint (``paused``,
until `continue_run`); failed a try and waiting to try again (``retrying``); or settled
(``completed``, ``failed``, ``skipped`` by its guard, or ``replayed``: copied from the run
this one replays)."""

TryOutcome = Literal["running", "waiting", "succeeded", "failed", "unknown"]
"""How one try of a step went; ``unknown``: its worker stopped while it ran, and it may or may
not have taken effect."""

ItemStatus = Literal["pending", "running", "completed", "failed"]
"""Where a foreach item or a loop iteration is."""


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepTry(_View):
    """One try of a step: a row of `Report.steps`.

    Attributes:
        key: the step's memo key; `name` its name.
        attempt: 1 for the first try.
        call_id: the call the try made (``KEY``, ``KEY#2``, ...); None for a step that makes
            no call (map, set_state) and for a replayed one.
        input: the resolved arguments the try was started with (None for a step that makes
            no call).
        output: what it produced, when it succeeded; `error` why it failed.
    """

    key: str
    name: str
    attempt: int
    outcome: TryOutcome
    call_id: str | None = None
    input: JsonValue = None
    output: JsonValue = None
    error: str | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None


class StepView(_View):
    """One step of a workflow run, in its place in the tree.

    Attributes:
        key: its memo key (``orders[2].charge``); `name` and `kind` are the spec's.
        attempts: how many tries started.
        input: the last try's resolved arguments.
        output: what it produced, once settled (a container's output too).
        failure: why it failed, or why its last try failed while it is ``retrying``.
        waiting_for: what a ``waiting``, ``paused`` or ``retrying`` step waits for, in words.
        child_run_id: the child run of an agent or workflow step.
        branch: the parallel branch (its name) or the branch case (``case 0``,
            ``otherwise``) the step is in, for the steps directly inside one.
        steps: the steps inside a parallel, or a branch's chosen cases.
        items: a foreach's items or a loop's iterations, each with its steps.
        tries: each try, in order.
    """

    key: str
    name: str
    kind: str
    status: StepViewStatus
    attempts: int = 0
    input: JsonValue = None
    output: JsonValue = None
    failure: StepFailure | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    waiting_for: str | None = None
    child_run_id: str | None = None
    branch: str | None = None
    steps: tuple[StepView, ...] = ()
    items: tuple[ItemView, ...] = ()
    tries: tuple[StepTry, ...] = ()


class ItemView(_View):
    """One item of a foreach (`item` is its value) or one iteration of a loop.

    Attributes:
        key: ``KEY[i]``; its steps' keys start with it.
        steps: its steps, once it started.
    """

    key: str
    index: int
    status: ItemStatus
    item: JsonValue = None
    output: JsonValue = None
    failure: StepFailure | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    steps: tuple[StepView, ...] = ()


class WorkflowView(_View):
    """A workflow run's step tree: `psych_runtime.workflow_view`.

    Attributes:
        workflow: the workflow's name; `spec_version` the version the run follows.
        status: the run's status; `output` its output once completed; `error` why it failed.
        replay_of: the run this one replays, and `from_step` the key it runs again from.
        breakpoints: the steps its dispatch chose to pause before; `step_mode`: before each.
        steps: the top-level steps, in order, each with what is inside it.
    """

    run_id: str
    workflow: str
    spec_version: str
    status: RunStatusName
    output: JsonValue = None
    error: str | None = None
    replay_of: str | None = None
    from_step: str | None = None
    breakpoints: tuple[str, ...] = ()
    step_mode: bool = False
    steps: tuple[StepView, ...] = ()

    def walk(self) -> Iterator[StepView]:
        """Every step of the tree, depth first (an item's steps after their item's step)."""
        return _walk(self.steps)

    def step(self, key: str) -> StepView | None:
        """The step with memo key `key`, or None."""
        return next((view for view in self.walk() if view.key == key), None)

    def tries(self) -> tuple[StepTry, ...]:
        """Every try of every step, in the order they started."""
        rows = [row for view in self.walk() for row in view.tries]
        far = dt.datetime.max.replace(tzinfo=dt.UTC)
        return tuple(sorted(rows, key=lambda row: row.started_at or far))


def _walk(steps: tuple[StepView, ...]) -> Iterator[StepView]:
    for view in steps:
        yield view
        yield from _walk(view.steps)
        for item in view.items:
            yield from _walk(item.steps)


# -- gathering, record by record -------------------------------------------------------------


@dataclass
class _Try:
    attempt: int
    call_id: str
    name: str
    input: JsonValue
    started_at: dt.datetime
    outcome: TryOutcome = "running"
    output: JsonValue = None
    error: str | None = None
    ended_at: dt.datetime | None = None
    waiting: str | None = None


@dataclass
class _Info:
    started_at: dt.datetime | None = None
    settled: StepSettled | None = None
    settled_at: dt.datetime | None = None
    entered: StepEntered | None = None
    tries: dict[int, _Try] = field(default_factory=dict)
    retries: list[StepRetrying] = field(default_factory=list)
    retrying: StepRetrying | None = None
    paused: bool = False
    child_run_id: str | None = None
    iterations: int = 0


@dataclass
class _Item:
    started_at: dt.datetime
    settled: StepSettled | None = None
    ended_at: dt.datetime | None = None


class _Gatherer:
    def __init__(self, run_id: str, spec: WorkflowSpec) -> None:
        self.state = RunState.empty(run_id, spec)
        self.steps: dict[str, _Info] = {}
        self.items: dict[str, _Item] = {}
        self.calls: dict[str, StepCall] = {}

    def info(self, key: str) -> _Info:
        return self.steps.setdefault(key, _Info())

    def add(self, record: Record) -> None:
        self.state = fold(self.state, record)
        at = record.at
        match record.body:
            case StepsPlanned(events=events, calls=calls):
                for event in events:
                    self._event(event, at)
                for call in calls:
                    self._call(call, at)
            case ToolCallWaiting(call_id=call_id):
                self._try_of(call_id, lambda t: _set(t, outcome="waiting"))
            case ApprovalRequested(call_id=call_id):
                self._try_of(call_id, lambda t: _set(t, outcome="waiting", waiting="approval"))
            case ApprovalDecided(call_id=call_id):
                self._try_of(call_id, lambda t: _set(t, outcome="running", waiting=None))
            case ChildStarted(call_id=call_id, child_run_id=child):
                self.info(parse_call_id(call_id).key).child_run_id = child
            case ToolCallFinished(call_id=call_id, result=result):
                self._ended(call_id, at, "succeeded", output=result)
            case ToolCallFailed(call_id=call_id, reason=reason, error=error):
                self._ended(call_id, at, "failed", error=f"{reason}: {error}")
            case ToolCallSettled(call_id=call_id, note=note):
                self._ended(call_id, at, "unknown", error=note or "its worker stopped")
            case _:
                pass

    def _event(self, event: object, at: dt.datetime) -> None:
        match event:
            case StepSettled(key=key) if key.endswith("]"):
                item = self.items.get(key)
                if item is not None:
                    item.settled, item.ended_at = event, at
            case StepSettled(key=key):
                info = self.info(key)
                info.settled, info.settled_at = event, at
                info.started_at = info.started_at or at
                info.paused, info.retrying = False, None
            case StateSet(key=key, values=values, replayed=replayed):
                settled = StepSettled(
                    key=key, status="completed", output=dict(values), replayed=replayed
                )
                self._event(settled, at)
            case StepEntered(key=key):
                info = self.info(key)
                info.entered, info.paused = event, False
                info.started_at = info.started_at or at
            case ItemStarted(key=key, index=index) | IterationStarted(key=key, iteration=index):
                self.items[indexed(key, index)] = _Item(started_at=at)
                info = self.info(key)
                info.iterations = max(info.iterations, index + 1)
            case StepRetrying(key=key):
                info = self.info(key)
                info.retries.append(event)
                info.retrying = event
            case _:
                pass

    def _call(self, call: StepCall, at: dt.datetime) -> None:
        self.calls[call.call_id] = call
        parsed = parse_call_id(call.call_id)
        info = self.info(parsed.key)
        if parsed.pause:
            info.paused = True
            return
        if parsed.backoff:
            return
        try:
            arguments: JsonValue = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments
        info.tries[parsed.attempt] = _Try(
            parsed.attempt, call.call_id, call.name, arguments, started_at=at
        )
        info.started_at = info.started_at or at
        info.paused, info.retrying = False, None

    def _try_of(self, call_id: str, change: Callable[[_Try], None]) -> None:
        parsed = parse_call_id(call_id)
        info = self.steps.get(parsed.key)
        found = info.tries.get(parsed.attempt) if info is not None and parsed.is_try else None
        if found is not None:
            change(found)

    def _ended(
        self,
        call_id: str,
        at: dt.datetime,
        outcome: TryOutcome,
        *,
        output: JsonValue = None,
        error: str | None = None,
    ) -> None:
        parsed = parse_call_id(call_id)
        info = self.steps.get(parsed.key)
        if info is None:
            return
        if parsed.pause:
            info.paused = False
            return
        found = info.tries.get(parsed.attempt) if parsed.is_try else None
        if found is not None:
            _set(found, outcome=outcome, output=output, error=error, ended_at=at, waiting=None)


def _set(found: _Try, **changes: object) -> None:
    for name, value in changes.items():
        setattr(found, name, value)


# -- the tree ----------------------------------------------------------------------------------


def workflow_view_of(spec: WorkflowSpec, records: Sequence[Record]) -> WorkflowView:
    """The step tree of the workflow run whose whole log is `records`, for its `spec`.

    Raises `CorruptLog` (a `FoldError`) where the log cannot be folded, as the engine would.
    """
    run_id = records[0].run_id if records else ""
    gathered = _Gatherer(run_id, spec)
    for record in records:
        gathered.add(record)
    state = gathered.state
    admitted = records[0].body if records else None
    assert isinstance(admitted, RunAdmitted) or admitted is None
    replay = admitted.replay_of if admitted is not None else None
    return WorkflowView(
        run_id=run_id,
        workflow=spec.name,
        spec_version=admitted.spec_version if admitted is not None else spec.version,
        status=state.status,
        output=state.output,
        error=state.error,
        replay_of=replay.run_id if replay is not None else None,
        from_step=replay.from_step if replay is not None else None,
        breakpoints=admitted.breakpoints if admitted is not None else (),
        step_mode=admitted.step_mode if admitted is not None else False,
        steps=_Tree(gathered, state.status in FINAL_STATUSES).steps(spec.steps, ""),
    )


class _Tree:
    def __init__(self, gathered: _Gatherer, ended: bool) -> None:
        self.gathered = gathered
        self.ended = ended

    def steps(
        self, steps: tuple[Step, ...], prefix: str, branch: str | None = None
    ) -> tuple[StepView, ...]:
        return tuple(self.step(step, prefix + step.name, branch) for step in steps)

    def step(self, step: Step, key: str, branch: str | None) -> StepView:
        info = self.gathered.steps.get(key) or _Info()
        tries = () if isinstance(step, CONTAINERS) else _tries(key, info)
        last = info.tries[max(info.tries)] if info.tries else None
        status, waiting, failure = self._status(step, info, last)
        settled = info.settled
        inner, items = self._inside(step, key, info)
        return StepView(
            key=key,
            name=step.name,
            kind=step.kind,
            status=status,
            attempts=len(tries) if settled is None or not settled.replayed else 0,
            input=last.input if last is not None else None,
            output=settled.output if settled is not None else None,
            failure=failure,
            started_at=info.started_at,
            ended_at=info.settled_at,
            waiting_for=waiting,
            child_run_id=info.child_run_id,
            branch=branch,
            steps=inner,
            items=items,
            tries=tries,
        )

    def _status(
        self, step: Step, info: _Info, last: _Try | None
    ) -> tuple[StepViewStatus, str | None, StepFailure | None]:
        settled = info.settled
        if settled is not None:
            if settled.replayed:
                return "replayed", None, None
            return settled.status, None, settled.failure
        if info.paused:
            return "paused", "continue_run: paused at a breakpoint", None
        if info.retrying is not None:
            retrying = info.retrying
            when = f" at {retrying.due_at.isoformat()}" if retrying.due_at else ""
            return "retrying", f"try {retrying.attempt + 1}{when}", retrying.failure
        if info.entered is not None:
            return "running", None, None
        if last is None:
            return "pending", None, None
        if last.outcome == "waiting":
            return "waiting", self._waiting_for(last, info), None
        if last.outcome == "running":
            child = f"child run {info.child_run_id}" if info.child_run_id else None
            return "running", child, None
        if self.ended:
            # The run ended before the planner read this try: its outcome is the step's.
            if last.outcome == "succeeded":
                return "completed", None, None
            kind = "outcome_unknown" if last.outcome == "unknown" else "error"
            error = f"step {last.call_id}: {last.error}"
            return "failed", None, StepFailure(kind=kind, error=error, step=last.call_id)
        return "running", None, None

    def _waiting_for(self, last: _Try, info: _Info) -> str:
        if last.waiting is not None:
            return last.waiting
        arguments = last.input if isinstance(last.input, dict) else {}
        due = arguments.get("due_at")
        until = f" (until {due})" if isinstance(due, str) else ""
        if last.name == WAIT_TOOL:
            return f"event {arguments.get('event')!r}{until}"
        if last.name == HUMAN_TOOL:
            return f"an answer to {arguments.get('question')!r}{until}"
        if last.name == SLEEP_TOOL:
            return f"the time {arguments.get('until')}"
        if info.child_run_id is not None:
            return f"child run {info.child_run_id}"
        return f"a resume of call {last.call_id}"

    def _inside(
        self, step: Step, key: str, info: _Info
    ) -> tuple[tuple[StepView, ...], tuple[ItemView, ...]]:
        match step:
            case ParallelStep(branches=branches):
                inner = tuple(
                    view
                    for name, steps in branches.items()
                    for view in self.steps(steps, _prefix(key), name)
                )
                return inner, ()
            case BranchStep(cases=cases, otherwise=otherwise):
                entered = info.entered
                if entered is None:
                    return (), ()
                chosen = [(f"case {i}", cases[i].steps) for i in entered.cases]
                if entered.otherwise:
                    chosen.append(("otherwise", otherwise))
                inner = tuple(
                    view
                    for label, steps in chosen
                    for view in self.steps(steps, _prefix(key), label)
                )
                return inner, ()
            case ForeachStep(steps=steps):
                values = info.entered.items if info.entered is not None else ()
                return (), tuple(
                    self._item(key, index, steps, value) for index, value in enumerate(values)
                )
            case LoopStep(steps=steps):
                return (), tuple(
                    self._item(key, index, steps, None) for index in range(info.iterations)
                )
            case _:
                return (), ()

    def _item(self, key: str, index: int, steps: tuple[Step, ...], value: JsonValue) -> ItemView:
        item_key = indexed(key, index)
        found = self.gathered.items.get(item_key)
        if found is None:
            return ItemView(key=item_key, index=index, status="pending", item=value)
        settled = found.settled
        status: ItemStatus = "running"
        if settled is not None:
            status = "completed" if settled.status == "completed" else "failed"
        return ItemView(
            key=item_key,
            index=index,
            status=status,
            item=value,
            output=settled.output if settled is not None else None,
            failure=settled.failure if settled is not None else None,
            started_at=found.started_at,
            ended_at=found.ended_at,
            steps=self.steps(steps, item_key + "."),
        )


def _prefix(key: str) -> str:
    """The prefix of the steps directly inside the container `key`: a parallel's and a
    branch's steps sit beside it in the key (only foreach items and loop iterations add to
    it)."""
    return key[: len(key) - len(step_name(key))]


def _tries(key: str, info: _Info) -> tuple[StepTry, ...]:
    name = step_name(key)
    settled = info.settled
    if info.tries:
        return tuple(
            StepTry(
                key=key,
                name=name,
                attempt=found.attempt,
                outcome=found.outcome,
                call_id=found.call_id,
                input=found.input,
                output=found.output,
                error=found.error,
                started_at=found.started_at,
                ended_at=found.ended_at,
            )
            for _, found in sorted(info.tries.items())
        )
    if settled is None or settled.status == "skipped" or settled.replayed:
        return ()
    # A step that makes no call (map, set_state, or one that failed before it could make
    # one): its tries are its failed ones, then how it settled, all at the time it settled.
    at = info.settled_at
    rows = [
        StepTry(
            key=key,
            name=name,
            attempt=retry.attempt,
            outcome="failed",
            error=retry.failure.error,
            started_at=at,
            ended_at=at,
        )
        for retry in info.retries
    ]
    failure = settled.failure
    rows.append(
        StepTry(
            key=key,
            name=name,
            attempt=len(rows) + 1,
            outcome="succeeded" if settled.status == "completed" else "failed",
            output=settled.output,
            error=failure.error if failure is not None else None,
            started_at=at,
            ended_at=at,
        )
    )
    return tuple(rows)

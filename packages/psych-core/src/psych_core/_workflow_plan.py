"""The workflow planner: the next round of a workflow run, from its state and the time alone.

A workflow run alternates like an agent run, with the model replaced by this planner: when no
call of the last round is open, `plan_round` reads how each of them ended, walks the spec's
tree from the top, and decides everything that needs no effect (pure steps, guards, branch
choices, foreach items, loop iterations, retries, the reading of results against their schema)
and the calls of the next round: every step that is ready, at once. The runtime records it as
one `StepsPlanned`; the reducer applies its events to the same progress the planner worked on.

The walk visits the steps that are live (the current iteration of a loop, the running items of
a foreach, what is around them), never the settled past, so a round at iteration 1,000 of a
loop costs what a round at iteration 10 does.

Semantics the walk fixes:

- A sequence runs in order; a step that fails with ``on_failure="fail"`` fails it; with
  ``continue`` its output is null and the next step runs.
- A parallel, a branch in mode ``all`` and a foreach fail as soon as a step inside fails
  (after the round that found it): nothing new starts in them.
- A retry's wait between tries is a call of the built-in sleep (``KEY~N``), so the run holds
  no worker; a backoff of 0 starts the next try in the same round.
- A container's timeout is checked between rounds, and caps the waits and child runs inside it.
- A round makes at most `MAX_PLANNED` decisions; the rest are planned in the rounds after.
- A step that the run's dispatch chose to break before (`RunAdmitted.breakpoints`, or every
  step in `step_mode`) first makes a call of the built-in breakpoint (``KEY!``), which waits
  for `continue_run`; then the step starts (its guard read again).
- A run that replays another settles the steps it copied (`RunAdmitted.replay_of`) as
  ``replayed`` when the walk reaches them, of the same kind, instead of starting them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from psych_core._errors import CorruptLog
from psych_core._json_schema import validation_errors
from psych_core._records import RunAdmitted, ToolFailureReason
from psych_core._remembered import Remembered
from psych_core._state import CallOutcome, CallState, RunState
from psych_core._workflow_events import (
    CopiedStep,
    EventTaken,
    ItemStarted,
    IterationStarted,
    StateSet,
    StepCall,
    StepEntered,
    StepEvent,
    StepFailure,
    StepRetrying,
    StepSettled,
    state_set,
    step_completed,
)
from psych_core._workflow_keys import (
    backoff_call_id,
    indexed,
    parse_call_id,
    pause_call_id,
    try_call_id,
)
from psych_core._workflow_scope import ROOT, Scope, StepEnv, earliest, places
from psych_core._workflow_spec import (
    BREAKPOINT_TOOL,
    CONTAINERS,
    SLEEP_TOOL,
    AgentStep,
    BranchStep,
    FailureKind,
    ForeachStep,
    HumanStep,
    LoopStep,
    MapStep,
    ParallelStep,
    SetStateStep,
    SleepStep,
    Step,
    ToolStep,
    WaitStep,
    WorkflowSpec,
    WorkflowStep,
    call_name,
)
from psych_core._workflow_state import (
    EMPTY_PROGRESS,
    ContainerFrame,
    ProgressWriter,
    StepResult,
)
from psych_core._workflow_values import Unresolved, describe, holds, resolve

MAX_PLANNED = 256
"""The most events and calls one round records; a bigger round is planned over several."""

MAX_LISTED_ERRORS = 10
"""How many broken constraints of one output are named; the rest are counted."""


@dataclass(frozen=True, slots=True)
class End:
    """The workflow is over: completed with `output`, or failed with `reason` and `error`."""

    completed: bool
    output: JsonValue = None
    reason: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """What the planner decided: a round (`events`, `calls`, `starts`) or, when there is
    nothing left to decide, the `end`.

    Attributes:
        visited: how many steps the walk looked at: the planner's work, which stays flat as
            the log grows.
    """

    events: tuple[StepEvent, ...] = ()
    calls: tuple[StepCall, ...] = ()
    starts: int = 0
    end: End | None = None
    visited: int = 0


def plan_round(spec: WorkflowSpec, state: RunState, now: dt.datetime) -> Plan:
    """The next round of the workflow run in `state`, at time `now`.

    Call it only when no call of the last round is open. Pure: the same state and time give
    the same plan.
    """
    return _Planner(spec, state, now).plan()


# -- what the walk returns -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Done:
    output: JsonValue = None


@dataclass(frozen=True, slots=True)
class _Failed:
    failure: StepFailure


@dataclass(frozen=True, slots=True)
class _Running:
    pass


_Status = _Done | _Failed | _Running
_RUNNING = _Running()


class _LimitReached(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


# -- the planner -----------------------------------------------------------------------------------


@dataclass
class _Planner:
    spec: WorkflowSpec
    state: RunState
    now: dt.datetime
    events: list[StepEvent] = field(default_factory=list)
    calls: list[StepCall] = field(default_factory=list)
    pure_starts: int = 0
    visited: int = 0

    def __post_init__(self) -> None:
        progress = self.state.workflow or EMPTY_PROGRESS
        self.work = ProgressWriter(progress, self.state.run_id, self.state.next_seq)
        self.starts_before = progress.starts
        self.places = places(self.spec)
        admitted = self.state.admitted
        self.input = _input_of(admitted) if admitted is not None else None
        self.round: dict[str, CallState] = {
            parse_call_id(call.call.call_id).key: call for call in self.state.calls
        }
        self.copied: Mapping[str, CopiedStep] = _copied_of(admitted) if admitted else {}
        self.breakpoints = frozenset(admitted.breakpoints) if admitted is not None else frozenset()
        self.step_mode = admitted is not None and admitted.step_mode

    def _env(self, scope: Scope) -> StepEnv:
        work = self.work
        # The writer's own mappings: what the round decided so far is visible at once.
        return StepEnv(
            self.places, self.input, work.results, work.values, work.last_iteration, scope
        )

    # -- the plan ----------------------------------------------------------------------------

    def plan(self) -> Plan:
        try:
            status = self._sequence(self.spec.steps, ROOT)
        except _LimitReached as reached:
            return Plan(end=self._limit_end(reached.key), visited=self.visited)
        if self.events or self.calls:
            return Plan(
                events=tuple(self.events),
                calls=tuple(self.calls),
                starts=self._starts,
                visited=self.visited,
            )
        return Plan(end=self._end(status), visited=self.visited)

    def _end(self, status: _Status) -> End:
        run, name = self.state.run_id, self.spec.name
        match status:
            case _Done(output=output):
                if self.spec.output is None:
                    return End(True, output)
                try:
                    return End(True, resolve(self.spec.output, self._env(ROOT)))
                except Unresolved as exc:
                    return End(
                        False,
                        reason="step_failed",
                        error=f"run {run}: workflow {name!r} could not resolve its output "
                        f"(reference): {exc}; fix the workflow's output and dispatch again",
                    )
            case _Failed(failure=failure):
                return End(
                    False,
                    reason="step_failed",
                    error=f"run {run}: workflow {name!r} failed at step {failure.step} "
                    f"({failure.kind}): {failure.error}",
                )
            case _:
                return End(
                    False,
                    reason="workflow_stuck",
                    error=f"run {run}: workflow {name!r} has steps that are neither done nor "
                    "running, and nothing to start; this is a bug in psych: report it with "
                    "the run's log",
                )

    def _limit_end(self, key: str) -> End:
        return End(
            False,
            reason="max_steps",
            error=f"run {self.state.run_id}: workflow {self.spec.name!r} reached max_steps="
            f"{self.spec.max_steps} step starts before step {key} could start; raise "
            "max_steps, or check why its loops and retries run so often",
        )

    @property
    def _starts(self) -> int:
        tries = sum(1 for call in self.calls if parse_call_id(call.call_id).is_try)
        return self.pure_starts + tries

    @property
    def _full(self) -> bool:
        return len(self.events) + len(self.calls) >= MAX_PLANNED

    def _emit(self, event: StepEvent) -> None:
        self.work.apply(event)
        self.events.append(event)

    def _count_start(self, key: str) -> None:
        if self.starts_before + self._starts + 1 > self.spec.max_steps:
            raise _LimitReached(key)

    # -- sequences and steps ------------------------------------------------------------------

    def _sequence(self, steps: tuple[Step, ...], scope: Scope) -> _Status:
        output: JsonValue = None
        start = self._settled_prefix(steps, scope)
        if start:
            # The steps before `start` settled: go on after the last of them.
            last = steps[start - 1]
            status = _status_of(self.work.results[scope.key(last.name)])
            if isinstance(status, _Failed) and last.on_failure == "fail":
                return status
            output = status.output if isinstance(status, _Done) else None
        for step in steps[start:]:
            status = self._step(step, scope)
            match status:
                case _Running():
                    return status
                case _Failed() if step.on_failure == "fail":
                    return status
                case _Failed():
                    output = None
                case _Done(output=output):
                    pass
        return _Done(output)

    def _settled_prefix(self, steps: tuple[Step, ...], scope: Scope) -> int:
        """How many of a sequence's first steps have settled, found by bisection: a sequence
        starts a step only once the one before it has settled, and what settled stays in the
        progress until its whole item or iteration is dropped, so the settled steps are always
        a prefix. A round far down a long sequence costs what one near its start does."""
        results = self.work.results
        low, high = 0, len(steps)
        while low < high:
            middle = (low + high) // 2
            self.visited += 1
            if scope.key(steps[middle].name) in results:
                low = middle + 1
            else:
                high = middle
        return low

    def _step(self, step: Step, scope: Scope) -> _Status:
        key = scope.key(step.name)
        self.visited += 1
        result = self.work.results.get(key)
        if result is not None:
            return _status_of(result)
        if key in self.work.frames:
            return self._container(step, scope, key)
        call = self.round.get(key)
        if call is not None:
            return self._after_call(step, scope, key, call)
        if self._full:
            return _RUNNING
        copied = self.copied.get(key)
        if copied is not None and copied.kind == step.kind and not isinstance(step, CONTAINERS):
            return self._replayed(copied)
        return self._begin(step, scope, key)

    def _begin(self, step: Step, scope: Scope, key: str, *, paused: bool = False) -> _Status:
        if step.when is not None:
            try:
                guard = holds(step.when, self._env(scope))
            except Unresolved as exc:
                return self._settle_failed(key, _failure("reference", key, f"its guard: {exc}"))
            if not guard:
                self._emit(StepSettled(key=key, status="skipped"))
                return _Done(None)
        if not paused and (
            self.step_mode or key in self.breakpoints or step.name in self.breakpoints
        ):
            where: dict[str, JsonValue] = {"step": key, "kind": step.kind}
            self.calls.append(
                StepCall(call_id=pause_call_id(key), name=BREAKPOINT_TOOL, arguments=_json(where))
            )
            return _RUNNING
        if isinstance(step, CONTAINERS):
            return self._enter(step, scope, key)
        return self._try(step, scope, key, 1)

    def _replayed(self, copied: CopiedStep) -> _Status:
        """Settle a step from the run this one replays, as it settled there."""
        if copied.kind == "set_state" and isinstance(copied.output, dict):
            self._emit(StateSet(key=copied.key, values=copied.output, replayed=True))
        else:
            settled = StepSettled(
                key=copied.key, status=copied.status, output=copied.output, replayed=True
            )
            self._emit(settled)
        return _Done(copied.output if copied.status == "completed" else None)

    # -- leaf steps -----------------------------------------------------------------------------

    def _try(self, step: Step, scope: Scope, key: str, attempt: int) -> _Status:
        """Start try `attempt` of a step that does one thing."""
        self._count_start(key)
        env = self._env(scope)
        try:
            match step:
                case MapStep(output=output):
                    self.pure_starts += 1
                    return self._succeeded(step, scope, key, resolve(output, env), attempt)
                case SetStateStep(values=values):
                    self.pure_starts += 1
                    resolved = {name: resolve(value, env) for name, value in values.items()}
                    return self._succeeded(step, scope, key, resolved, attempt)
                case ToolStep(arguments=arguments):
                    resolved = {name: resolve(value, env) for name, value in arguments.items()}
                    self._call(key, attempt, step, resolved, None)
                case AgentStep(input=input):
                    value = resolve(input, env)
                    text = value if isinstance(value, str) else _json(value)
                    self._call(key, attempt, step, {"input": text}, self._due(step, scope))
                case WorkflowStep(input=input, workflow=workflow):
                    value = resolve(input, env)
                    problems = (
                        validation_errors(
                            workflow.input_schema, value, root="input", member="field"
                        )
                        if workflow.input_schema is not None
                        else []
                    )
                    if problems:
                        self.pure_starts += 1
                        error = (
                            f"its input does not match workflow {workflow.name!r}'s input_schema: "
                            f"{_listed(problems)}"
                        )
                        return self._fail(step, scope, key, _failure("error", key, error), attempt)
                    self._call(key, attempt, step, {"input": value}, self._due(step, scope))
                case SleepStep():
                    return self._sleep(step, scope, key, attempt, env)
                case WaitStep(event=event):
                    if self.work.events.get(event):
                        payload = self.work.events[event][0]
                        self.pure_starts += 1
                        self._emit(EventTaken(key=key, name=event))
                        done = CallOutcome("finished", payload)
                        return self._outcome(step, scope, key, attempt, done, None)
                    due = self._due(step, scope)
                    awaited: dict[str, JsonValue] = {"event": event, "due_at": _iso(due)}
                    self._call(key, attempt, step, awaited, due)
                case HumanStep(question=question, answer_schema=schema):
                    due = self._due(step, scope)
                    asked: dict[str, JsonValue] = {
                        "question": question,
                        "schema": schema,
                        "due_at": _iso(due),
                    }
                    self._call(key, attempt, step, asked, due)
                case _:  # pragma: no cover - containers are entered, not tried
                    raise AssertionError(step.kind)
        except Unresolved as exc:
            return self._fail(step, scope, key, _failure("reference", key, str(exc)), attempt)
        return _RUNNING

    def _sleep(
        self, step: SleepStep, scope: Scope, key: str, attempt: int, env: StepEnv
    ) -> _Status:
        if step.seconds is not None:
            until = self.now + dt.timedelta(seconds=step.seconds)
        else:
            assert step.until is not None
            value = resolve(step.until, env)
            parsed = _time(value)
            if parsed is None:
                self.pure_starts += 1
                error = f"its until is {describe(value)}, not an ISO 8601 time with an offset"
                return self._fail(step, scope, key, _failure("error", key, error), attempt)
            until = parsed
        if until <= self.now:
            self.pure_starts += 1
            return self._succeeded(step, scope, key, {"until": until.isoformat()}, attempt)
        due = earliest(until, self._due(step, scope))
        assert due is not None
        times: dict[str, JsonValue] = {"until": until.isoformat(), "due_at": due.isoformat()}
        self._call(key, attempt, step, times, due)
        return _RUNNING

    def _call(
        self,
        key: str,
        attempt: int,
        step: Step,
        arguments: dict[str, JsonValue],
        due: dt.datetime | None,
    ) -> None:
        name = call_name(step)
        assert name is not None
        call_id = try_call_id(key, attempt)
        self.calls.append(
            StepCall(call_id=call_id, name=name, arguments=_json(arguments), due_at=due)
        )

    def _due(self, step: Step, scope: Scope) -> dt.datetime | None:
        own = self.now + dt.timedelta(seconds=step.timeout) if step.timeout else None
        return earliest(own, scope.deadline)

    def _after_call(self, step: Step, scope: Scope, key: str, call: CallState) -> _Status:
        """Read how the last round's call of `step` ended."""
        parsed = parse_call_id(call.call.call_id)
        if parsed.backoff:
            # The wait before try N is over: try N starts now.
            return self._try(step, scope, key, parsed.attempt)
        outcome = call.outcome
        if outcome is None:
            raise CorruptLog(
                self.state.run_id,
                self.state.next_seq,
                f"call {call.call.call_id} has no outcome, but the next round is being planned",
            )
        if parsed.pause:
            if outcome.status == "finished":
                # Continued past the breakpoint: the step starts now.
                return self._begin(step, scope, key, paused=True)
            error = f"its breakpoint ended {outcome.status}: {outcome.error}"
            return self._settle_failed(key, _failure(_kind_of(outcome.reason), key, error))
        return self._outcome(step, scope, key, parsed.attempt, outcome, call)

    def _outcome(
        self,
        step: Step,
        scope: Scope,
        key: str,
        attempt: int,
        outcome: CallOutcome,
        call: CallState | None,
    ) -> _Status:
        match outcome.status:
            case "unknown":
                error = (
                    f"its outcome is unknown ({outcome.error}): it may or may not have taken "
                    "effect; check before running it again"
                )
                return self._fail(
                    step, scope, key, _failure("outcome_unknown", key, error), attempt
                )
            case "failed":
                kind = _kind_of(outcome.reason)
                error = f"{outcome.reason}: {outcome.error}"
                return self._fail(step, scope, key, _failure(kind, key, error), attempt)
        value = outcome.result
        problem: str | None = None
        match step:
            case SleepStep():
                arguments = json.loads(call.call.arguments) if call is not None else {}
                if arguments.get("due_at") != arguments.get("until"):
                    problem = f"its timeout passed at {arguments.get('due_at')} before its end"
                    return self._fail(step, scope, key, _failure("timeout", key, problem), attempt)
                value = {"until": arguments.get("until")}
            case WaitStep(payload_schema=schema) if schema is not None:
                problem = _broken(schema, value, f"the payload of event {step.event!r}")
            case HumanStep(answer_schema=schema) if schema is not None:
                problem = _broken(schema, value, "the answer")
            case _:
                pass
        if problem is not None:
            return self._fail(step, scope, key, _failure("invalid_output", key, problem), attempt)
        return self._succeeded(step, scope, key, value, attempt)

    def _succeeded(
        self, step: Step, scope: Scope, key: str, value: JsonValue, attempt: int
    ) -> _Status:
        if step.output_schema is not None:
            problem = _broken(step.output_schema, value, "its output")
            if problem is not None:
                failure = _failure("invalid_output", key, problem)
                return self._fail(step, scope, key, failure, attempt)
        if isinstance(step, SetStateStep):
            assert isinstance(value, dict)
            self._emit(state_set(key, value))
        else:
            self._emit(step_completed(key, value))
        return _Done(value)

    def _fail(
        self, step: Step, scope: Scope, key: str, failure: StepFailure, attempt: int
    ) -> _Status:
        retry = step.retry
        if retry is None or failure.kind not in retry.on or attempt >= retry.attempts:
            return self._settle_failed(key, failure)
        delay = min(retry.backoff * retry.multiplier ** (attempt - 1), retry.cap)
        if delay <= 0:
            self._emit(StepRetrying(key=key, attempt=attempt, failure=failure))
            return self._try(step, scope, key, attempt + 1)
        due = self.now + dt.timedelta(seconds=delay)
        self._emit(StepRetrying(key=key, attempt=attempt, failure=failure, due_at=due))
        times: dict[str, JsonValue] = {"until": due.isoformat(), "due_at": due.isoformat()}
        call_id = backoff_call_id(key, attempt + 1)
        self.calls.append(
            StepCall(call_id=call_id, name=SLEEP_TOOL, arguments=_json(times), due_at=due)
        )
        return _RUNNING

    def _settle_failed(self, key: str, failure: StepFailure) -> _Failed:
        self._emit(StepSettled(key=key, status="failed", failure=failure))
        return _Failed(failure)

    # -- containers -----------------------------------------------------------------------------

    def _enter(self, step: Step, scope: Scope, key: str) -> _Status:
        due = self.now + dt.timedelta(seconds=step.timeout) if step.timeout else None
        match step:
            case ParallelStep():
                self._emit(StepEntered(key=key, kind="parallel", due_at=due))
            case BranchStep(cases=cases, otherwise=otherwise, mode=mode):
                chosen: list[int] = []
                env = self._env(scope)
                for number, case in enumerate(cases):
                    try:
                        taken = holds(case.when, env)
                    except Unresolved as exc:
                        error = f"case {number}'s condition: {exc}"
                        return self._settle_failed(key, _failure("reference", key, error))
                    if taken:
                        chosen.append(number)
                        if mode == "first":
                            break
                if not chosen and not otherwise:
                    return self._succeeded(step, scope, key, None, 1)
                self._emit(
                    StepEntered(
                        key=key,
                        kind="branch",
                        cases=tuple(chosen),
                        otherwise=not chosen,
                        due_at=due,
                    )
                )
            case ForeachStep(items=items):
                try:
                    value = resolve(items, self._env(scope))
                except Unresolved as exc:
                    return self._settle_failed(key, _failure("reference", key, f"its items: {exc}"))
                if not isinstance(value, list):
                    error = f"its items are {describe(value)}, not a list"
                    return self._settle_failed(key, _failure("error", key, error))
                self._emit(StepEntered(key=key, kind="foreach", items=tuple(value), due_at=due))
            case LoopStep():
                self._emit(StepEntered(key=key, kind="loop", due_at=due))
            case _:  # pragma: no cover - only containers are entered
                raise AssertionError(step.kind)
        return self._container(step, scope, key)

    def _container(self, step: Step, scope: Scope, key: str) -> _Status:
        frame = self.work.frames[key]
        if frame.due_at is not None and frame.due_at <= self.now:
            error = f"it did not finish within its timeout of {step.timeout:g} s"
            return self._settle_failed(key, _failure("timeout", key, error))
        inner = scope.until(frame.due_at)
        match step:
            case ParallelStep(branches=branches):
                names = list(branches)
                statuses = self._together([branches[name] for name in names], inner)
                if isinstance(statuses, _Status):
                    return self._after_together(key, statuses)
                by_branch: dict[str, JsonValue] = {
                    name: s.output for name, s in zip(names, statuses, strict=True)
                }
                return self._succeeded(step, scope, key, by_branch, 1)
            case BranchStep(cases=cases, otherwise=otherwise, mode=mode):
                sequences = [cases[i].steps for i in frame.cases] if frame.cases else [otherwise]
                statuses = self._together(sequences, inner)
                if isinstance(statuses, _Status):
                    return self._after_together(key, statuses)
                ran: list[JsonValue] = [s.output for s in statuses]
                chosen: JsonValue = ran if mode == "all" else ran[0]
                return self._succeeded(step, scope, key, chosen, 1)
            case ForeachStep():
                return self._foreach(step, scope, key, inner)
            case LoopStep():
                return self._loop(step, scope, key, inner)
            case _:  # pragma: no cover - only containers have frames
                raise AssertionError(step.kind)

    def _together(self, sequences: list[tuple[Step, ...]], scope: Scope) -> list[_Done] | _Status:
        """Walk sequences that run at once; their outputs once all are done, else the
        first failure (after which nothing new starts in them), else running."""
        mark = len(self.calls)
        statuses = [self._sequence(steps, scope) for steps in sequences]
        for status in statuses:
            if isinstance(status, _Failed):
                del self.calls[mark:]
                return status
        if any(isinstance(status, _Running) for status in statuses):
            return _RUNNING
        return [status for status in statuses if isinstance(status, _Done)]

    def _after_together(self, key: str, status: _Status) -> _Status:
        if isinstance(status, _Failed):
            return self._settle_failed(key, status.failure)
        return status

    def _foreach(self, step: ForeachStep, scope: Scope, key: str, inner: Scope) -> _Status:
        mark = len(self.calls)
        failed: _Failed | None = None
        frame = self.work.frames[key]
        for index in sorted(frame.running):
            # Every running item is walked, so each reads how its last call ended.
            result = self._item(step, key, inner, frame, index)
            failed = failed or result
        while failed is None:
            frame = self.work.frames[key]
            if (
                frame.started >= len(frame.items)
                or len(frame.running) >= step.concurrency
                or self._full
            ):
                break
            self._emit(ItemStarted(key=key, index=frame.started))
            failed = self._item(step, key, inner, frame, frame.started)
        if failed is not None:
            del self.calls[mark:]
            return self._settle_failed(key, failed.failure)
        frame = self.work.frames[key]
        if frame.done < len(frame.items):
            return _RUNNING
        outputs = frame.outputs.ordered(len(frame.items)) if frame.outputs is not None else []
        return self._succeeded(step, scope, key, outputs, 1)

    def _item(
        self, step: ForeachStep, key: str, scope: Scope, frame: ContainerFrame, index: int
    ) -> _Failed | None:
        item_scope = scope.into(step.name, index, item=frame.items[index], foreach=True)
        status = self._sequence(step.steps, item_scope)
        match status:
            case _Done(output=output):
                self._emit(step_completed(indexed(key, index), output))
            case _Failed(failure=failure):
                self._emit(StepSettled(key=indexed(key, index), status="failed", failure=failure))
                return status
            case _:
                pass
        return None

    def _loop(self, step: LoopStep, scope: Scope, key: str, inner: Scope) -> _Status:
        while True:
            frame = self.work.frames[key]
            if frame.started > frame.done:
                number = frame.started - 1
                body = inner.into(step.name, number)
                status = self._sequence(step.steps, body)
                if isinstance(status, _Running):
                    return status
                if isinstance(status, _Failed):
                    failed = StepSettled(
                        key=indexed(key, number), status="failed", failure=status.failure
                    )
                    self._emit(failed)
                    return self._settle_failed(key, status.failure)
                stop = False
                if step.until is not None:
                    try:
                        stop = holds(step.until, self._env(body))
                    except Unresolved as exc:
                        failure = _failure("reference", key, f"its until: {exc}")
                        self._emit(
                            StepSettled(key=indexed(key, number), status="failed", failure=failure)
                        )
                        return self._settle_failed(key, failure)
                self._emit(step_completed(indexed(key, number), status.output))
                if stop:
                    return self._succeeded(step, scope, key, status.output, 1)
                continue
            number = frame.done
            if step.repeat_while is not None:
                try:
                    go = holds(step.repeat_while, self._env(inner.at_iteration(number)))
                except Unresolved as exc:
                    return self._settle_failed(
                        key, _failure("reference", key, f"its repeat_while: {exc}")
                    )
                if not go:
                    return self._succeeded(step, scope, key, frame.last_output, 1)
            if number >= step.max_iterations:
                if step.exhausted == "stop" or (step.until is None and step.repeat_while is None):
                    return self._succeeded(step, scope, key, frame.last_output, 1)
                error = (
                    f"it ran max_iterations={step.max_iterations} times and its condition still "
                    "asks for more; raise max_iterations, or set exhausted='stop'"
                )
                return self._settle_failed(key, _failure("error", key, error))
            if self._full:
                return _RUNNING
            self._emit(IterationStarted(key=key, iteration=number))


# -- small pieces ----------------------------------------------------------------------------------


def _status_of(result: StepResult) -> _Status:
    if result.status == "failed":
        assert result.failure is not None
        return _Failed(result.failure)
    return _Done(result.output)


def _failure(kind: FailureKind, key: str, error: str) -> StepFailure:
    return StepFailure(kind=kind, error=f"step {key}: {error}", step=key)


_KINDS: dict[str, FailureKind] = {
    "timeout": "timeout",
    "cancelled": "cancelled",
    "denied": "denied",
    # A tool the run is not offered: the policy took it away (a worker lacking it releases
    # the run instead of starting its calls).
    "unknown_tool": "denied",
}


def _kind_of(reason: ToolFailureReason | None) -> FailureKind:
    return _KINDS.get(reason or "", "error")


def _broken(schema: dict[str, JsonValue], value: JsonValue, what: str) -> str | None:
    errors = validation_errors(schema, value, root=what, member="field")
    if not errors:
        return None
    return f"{what} does not match its schema: {_listed(errors)}"


def _listed(errors: list[str]) -> str:
    listed = "; ".join(errors[:MAX_LISTED_ERRORS])
    more = len(errors) - MAX_LISTED_ERRORS
    return f"{listed}; and {more} more" if more > 0 else listed


def _iso(when: dt.datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def _time(value: JsonValue) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _copied(admitted: RunAdmitted) -> dict[str, CopiedStep]:
    replay = admitted.replay_of
    return {step.key: step for step in replay.steps} if replay is not None else {}


def _parsed_input(admitted: RunAdmitted) -> JsonValue:
    try:
        value: JsonValue = json.loads(admitted.input)
    except ValueError:
        value = admitted.input
    return value


_copied_of: Remembered[RunAdmitted, dict[str, CopiedStep]] = Remembered(_copied)
"""The steps a replaying run copies, by memo key, indexed once per admission."""

_input_of: Remembered[RunAdmitted, JsonValue] = Remembered(_parsed_input)
"""The run's input as JSON (its text when it is not JSON), parsed once per admission."""

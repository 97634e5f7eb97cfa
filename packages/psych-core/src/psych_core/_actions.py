"""`next_action(state, now)`: what a run does next, decided from its state and the time alone.

Actions are of two kinds. A *decision* only writes records (start a call, settle one, end the
run): the worker adds them to the batch it is building. An *effect* touches the world (call the
model, run tools): the worker commits its batch first, so a decision is always durable before
anything acts on it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from pydantic import JsonValue

from psych_core._compaction import cut_point
from psych_core._errors import SpecError
from psych_core._json_schema import OUTPUT_KEYWORDS, schema_problems, validation_errors
from psych_core._messages import ToolCall
from psych_core._quick_init import quick_init
from psych_core._records import StepsPlanned
from psych_core._spec import AgentSpec, AgentTool, WorkflowTool
from psych_core._state import CallPhase, CallState, RunState, WaitingReason, call_key
from psych_core._workflow_plan import plan_round
from psych_core._workflow_spec import BUILTIN_TOOLS, WorkflowSpec


@dataclass(frozen=True, slots=True)
class CallModel:
    """Effect: send the conversation to the model."""


@dataclass(frozen=True, slots=True)
class Compact:
    """Effect: summarise the conversation before `kept_from` (`AgentSpec.compaction`); the
    messages from `kept_from` on are kept as they are."""

    kept_from: int


@quick_init
@dataclass(frozen=True, slots=True)
class RunCalls:
    """Effect: run these calls, already recorded as started by this attempt."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class CollectChildren:
    """Effect: these calls' child runs ended; read each child's outcome and record it."""

    calls: tuple[CallState, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class StartCalls:
    """Decision: the model asked for these calls; record each as started, or refused."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class RetryCalls:
    """Decision: these calls of safe-to-retry tools were cut off by a crash; start them again."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class SettleCalls:
    """Decision: these calls were cut off by a crash and are not safe to retry: settle unknown."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class Complete:
    """Decision: the model gave its final answer (or the workflow's steps all settled, with
    this `output`); complete the run."""

    output: JsonValue = None


@dataclass(frozen=True, slots=True)
class PlanSteps:
    """Decision: a workflow's next round of steps, as its planner decided it; record it."""

    planned: StepsPlanned


@dataclass(frozen=True, slots=True)
class RejectOutput:
    """Decision: the final answer at seq `answer_seq` is not JSON, or breaks the spec's
    `output_type`; record why. The model is then told and asked again, unless the spec's
    `output_retries` (or `max_turns`) leave no try, and the run fails ``invalid_output``."""

    answer_seq: int
    error: str
    try_number: int


@dataclass(frozen=True, slots=True)
class Fail:
    """Decision: end the run as failed, for this reason."""

    reason: str
    error: str


@dataclass(frozen=True, slots=True)
class StartApproved:
    """Decision: these calls were approved; record each as started (with edited arguments)."""

    calls: tuple[CallState, ...]


@dataclass(frozen=True, slots=True)
class DenyCalls:
    """Decision: these calls were denied; answer each with who denied it and why."""

    calls: tuple[CallState, ...]


@dataclass(frozen=True, slots=True)
class FinishResumed:
    """Decision: the waits of these calls ended with a resume; their payload is the result."""

    calls: tuple[CallState, ...]


@dataclass(frozen=True, slots=True)
class Suspend:
    """Decision: nothing can happen until a signal arrives (or `due_at` passes)."""

    reason: WaitingReason
    calls: tuple[CallState, ...]
    due_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class CancelRun:
    """Decision: cancel the run. Calls that never began fail with reason ``cancelled``;
    calls that began (and were not finished) are settled unknown.

    With `failure` (a guard's reason: ``deadline``, ``repeated_call``), the run fails with
    that reason and `reason` as its error, its open calls closed the same way.
    """

    reason: str
    never_began: tuple[CallState, ...]
    began: tuple[CallState, ...]
    failure: str | None = None


@dataclass(frozen=True, slots=True)
class TimeOutWaits:
    """Decision: the timed waits of these calls passed their due time without a resume; each
    call finishes with a result saying it timed out."""

    calls: tuple[CallState, ...]


@dataclass(frozen=True, slots=True)
class TimeOutChildren:
    """Decision: the child runs of these workflow steps passed their step's timeout; each
    call fails with reason ``timeout`` and its child run is cancelled."""

    calls: tuple[CallState, ...]


@dataclass(frozen=True, slots=True)
class Finished:
    """Nothing to do in this attempt: the run has ended, or waits to be woken."""


Decision = (
    StartCalls
    | StartApproved
    | DenyCalls
    | FinishResumed
    | TimeOutWaits
    | TimeOutChildren
    | RetryCalls
    | SettleCalls
    | Suspend
    | CancelRun
    | RejectOutput
    | PlanSteps
    | Complete
    | Fail
)
"""The actions that only write records; the worker stages them into the batch it is building."""

Action = CallModel | Compact | RunCalls | CollectChildren | Decision | Finished
"""Anything `next_action` can return."""

Effect = CallModel | Compact | RunCalls | CollectChildren
"""The actions that touch the world; the worker commits its batch before each."""


def next_action(state: RunState, now: dt.datetime) -> Action:
    """What the run must do next, at time `now` (which decides whether a timed wait is over).

    Pure: the same state and time always give the same action.
    """
    if state.ended or state.status == "waiting":
        return Finished()
    spec = state.spec
    if spec is None:
        raise SpecError(f"run {state.run_id}: next_action needs the state built with its spec")
    if state.attempt == 0:
        raise SpecError(f"run {state.run_id}: next_action needs a claimed run (no attempt yet)")

    if state.cancel is None and isinstance(spec, AgentSpec):
        guarded = _guard(state, spec, now)
        if guarded is not None:
            return guarded
    on_calls = _calls_action(state, now)
    if on_calls is not None:
        return on_calls
    if isinstance(spec, WorkflowSpec):
        plan = plan_round(spec, state, now)
        if plan.end is None:
            return PlanSteps(StepsPlanned(events=plan.events, calls=plan.calls, starts=plan.starts))
        if plan.end.completed:
            return Complete(plan.end.output)
        return Fail(plan.end.reason, plan.end.error)
    return _agent_action(state, spec)


def _calls_action(state: RunState, now: dt.datetime) -> Action | None:
    """What the open calls of the current turn (or round) need, or None when none is open."""
    if state.cancel is not None:
        return CancelRun(state.cancel, *_open_by_beginning(state))
    # One pass sorts the calls by phase (in their order); this runs before every effect.
    phases: dict[CallPhase, list[CallState]] = {}
    for c in state.calls:
        phases.setdefault(c.phase, []).append(c)
    if phases.keys() <= {"done"}:
        # The common case between turns (or rounds): nothing below can apply.
        return None
    if "requested" in phases:
        return StartCalls(tuple([c.call for c in phases["requested"]]))
    if "denied" in phases:
        return DenyCalls(tuple(phases["denied"]))
    if "approved" in phases:
        return StartApproved(tuple(phases["approved"]))
    if "resumed" in phases:
        return FinishResumed(tuple(phases["resumed"]))
    started = phases.get("started", ())
    orphans = tuple([c for c in started if (c.started_attempt or 0) < state.attempt])
    if orphans:
        retry = tuple(c.call for c in orphans if _safe_to_retry(state, c))
        return RetryCalls(retry) if retry else SettleCalls(tuple(c.call for c in orphans))
    if started:
        return RunCalls(tuple([c.call for c in started]))
    if "child_ended" in phases:
        return CollectChildren(tuple(phases["child_ended"]))
    waiting = tuple(phases.get("waiting", ()))
    expired = tuple(c for c in waiting if c.due_at is not None and c.due_at <= now)
    if expired:
        return TimeOutWaits(expired)
    children = tuple(phases.get("child", ()))
    late = tuple(c for c in children if c.due_at is not None and c.due_at <= now)
    if late:
        return TimeOutChildren(late)
    # Whatever the run waits on first, it wakes at the earliest time any of its calls needs:
    # a wait that times out, or a workflow step's child past its timeout.
    due = _earliest_due((*waiting, *children))
    deadline = deadline_at(state)
    if deadline is not None and (due is None or deadline < due):
        due = deadline  # woken at its deadline, to end there
    awaiting = tuple(phases.get("awaiting_approval", ()))
    if awaiting:
        return Suspend("approval", awaiting, due)
    if waiting:
        return Suspend("external", waiting, due)
    if children:
        return Suspend("children", children, due)
    return None


def _agent_action(state: RunState, spec: AgentSpec) -> Action:
    """What an agent run does once no call is open: answer, ask again, or call the model."""
    if state.answered:
        problem = _output_problem(spec, state.last_text)
        if problem is None:
            return Complete()
        answer = state.last_model_seq if state.last_model_seq is not None else state.last_seq
        return RejectOutput(answer, problem, len(state.output_rejections) + 1)
    if _awaits_retry(state):
        tries = len(state.output_rejections)
        if tries > spec.output_retries:
            return Fail(
                "invalid_output",
                _rejected(
                    state,
                    spec,
                    f"output_retries={spec.output_retries} allows no further try",
                    "raise output_retries",
                ),
            )
        if state.turn_model_calls >= spec.max_turns:
            return Fail(
                "invalid_output",
                _rejected(
                    state,
                    spec,
                    f"max_turns={spec.max_turns} leaves no model call for another try",
                    "raise max_turns",
                ),
            )
    if spec.max_failed_calls is not None and state.failed_streak >= spec.max_failed_calls:
        return Fail(
            "failed_calls",
            f"run {state.run_id}: {state.failed_streak} tool calls in a row failed, reaching "
            f"AgentSpec {spec.name!r} max_failed_calls={spec.max_failed_calls}; read the "
            "failures in its log (report(...).tool_calls)",
        )
    if state.turn_model_calls >= spec.max_turns:
        return Fail(
            "max_turns",
            f"run {state.run_id}: the model was called {state.turn_model_calls} times without "
            f"a final answer, reaching AgentSpec {spec.name!r} max_turns={spec.max_turns}; "
            "raise max_turns or check why the model keeps calling tools",
        )
    compaction = spec.compaction
    if (
        compaction is not None
        and state.context_tokens is not None
        and state.context_tokens >= compaction.threshold_tokens
    ):
        kept_from = cut_point(state.conversation.messages(), state.kept_from, compaction.keep_turns)
        if kept_from is not None:
            return Compact(kept_from)
    return CallModel()


GUARD_REASONS = ("deadline", "repeated_call")
"""The reasons a guard of an `AgentSpec` ends a run with while calls may be open: its open
calls are closed as a cancel closes them, and its child runs are cancelled."""


def _guard(state: RunState, spec: AgentSpec, now: dt.datetime) -> Action | None:
    """The end a guard of `spec` puts to the run now (`deadline`, `max_identical_calls`), or
    None while they allow it to go on."""
    deadline = deadline_at(state)
    if deadline is not None and now >= deadline:
        return _ended_by(
            state,
            "deadline",
            f"run {state.run_id} passed its deadline ({deadline.isoformat()}: AgentSpec "
            f"{spec.name!r} deadline={spec.deadline:g} s from its admission)",
        )
    limit = spec.max_identical_calls
    if limit is not None:
        # Only the calls the model just asked for can have gone over: an earlier excess
        # ended the run before its calls started.
        for open_call in state.calls:
            times = state.call_counts.get(call_key(open_call.call), 0)
            if open_call.phase == "requested" and times > limit:
                return _ended_by(
                    state,
                    "repeated_call",
                    f"run {state.run_id}: the model asked for the same call of tool "
                    f"{open_call.call.name!r} (the same arguments) {times} times, more than "
                    f"AgentSpec {spec.name!r} max_identical_calls={limit}",
                )
    return None


def _ended_by(state: RunState, reason: str, error: str) -> Action:
    if not state.open_calls:
        return Fail(reason, error)
    return CancelRun(error, *_open_by_beginning(state), failure=reason)


def _open_by_beginning(state: RunState) -> tuple[tuple[CallState, ...], tuple[CallState, ...]]:
    """The open calls that never began, and those that began (their effect may have
    happened)."""
    began_phases = ("started", "child", "child_ended")
    began = tuple(c for c in state.calls if c.phase in began_phases)
    never = tuple(c for c in state.calls if c.phase not in (*began_phases, "done"))
    return never, began


def deadline_at(state: RunState) -> dt.datetime | None:
    """When an agent run's `AgentSpec.deadline` passes, or None when it has none."""
    spec = state.spec
    if not isinstance(spec, AgentSpec) or spec.deadline is None or state.admitted_at is None:
        return None
    return state.admitted_at + dt.timedelta(seconds=spec.deadline)


def _earliest_due(calls: tuple[CallState, ...]) -> dt.datetime | None:
    dues = [c.due_at for c in calls if c.due_at is not None]
    return min(dues) if dues else None


def _safe_to_retry(state: RunState, call: CallState) -> bool:
    if call.safe_to_retry is not None:
        # Recorded when it started (an MCP tool's annotations): what the tool says now does
        # not matter.
        return call.safe_to_retry
    name = call.call.name
    spec = state.spec
    if isinstance(spec, WorkflowSpec):
        # A step's child run is found again by its derived id, and a built-in wait only
        # computes the same wait again: starting either again after a crash is safe.
        if name in BUILTIN_TOOLS or name.startswith(("agent:", "workflow:")):
            return True
        step_tool = spec.tool(name)
        return step_tool is not None and step_tool.safe_to_retry
    tool = spec.tool(name) if spec is not None else None
    # A subagent call is always safe to start again: its child's id is derived from the call,
    # so starting it again finds the child created before the crash instead of a second one.
    return tool is not None and (tool.safe_to_retry or isinstance(tool, AgentTool | WorkflowTool))


MAX_LISTED_ERRORS = 10
"""How many broken constraints of one answer are named; the rest are counted."""


def _output_problem(spec: AgentSpec, text: str | None) -> str | None:
    """What is wrong with the final answer `text` under `spec.output_type`, or None."""
    schema = spec.output_type
    if schema is None:
        return None
    if not text or not text.strip():
        return "the answer is empty, not JSON"
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"the answer is not valid JSON ({exc})"
    if schema_problems(schema, keywords=OUTPUT_KEYWORDS):
        # A schema the validator cannot check exactly (a keyword outside OUTPUT_KEYWORDS, or
        # a malformed part) is held to being JSON only, as before output checking existed:
        # refusing it now would fail runs admitted under it.
        return None
    errors = validation_errors(schema, value, root="the answer", member="property")
    if not errors:
        return None
    listed = "; ".join(errors[:MAX_LISTED_ERRORS])
    more = len(errors) - MAX_LISTED_ERRORS
    if more > 0:
        listed += f"; and {more} more"
    return f"the answer does not match the output schema: {listed}"


def _awaits_retry(state: RunState) -> bool:
    """Whether the latest answer was rejected and the model has not been asked again yet."""
    return bool(state.output_rejections) and (
        state.output_rejections[-1][0] == state.last_model_seq
    )


def _rejected(state: RunState, spec: AgentSpec, why: str, fix: str) -> str:
    tries = " | ".join(f"seq {seq}: {error}" for seq, error in state.output_rejections)
    return (
        f"run {state.run_id}: AgentSpec {spec.name!r} asks for structured output, and the "
        f"model's answer was rejected {_times(len(state.output_rejections))}; {why}: "
        f"{tries}. Make the instructions ask for JSON that matches output_type, or {fix}"
    )


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")

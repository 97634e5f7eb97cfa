"""Turning the reducer's decisions into record bodies. No effects happen here.

The decisions themselves are the core's (`psych_core.Decision`, made by `next_action`); this
module only writes them down, with what needs the tools resolved for this turn (validating a
call's arguments, asking an approval rule).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from psych_core import (
    HUMAN_TOOL,
    SLEEP_TOOL,
    WAIT_TOOL,
    ApprovalRequested,
    ApprovalRule,
    ArgRule,
    Body,
    CallState,
    CancelRun,
    Complete,
    Decision,
    DenyCalls,
    Fail,
    FinishResumed,
    OutputRejected,
    PlanSteps,
    RejectOutput,
    RetryCalls,
    RunCancelled,
    RunFailed,
    RunSuspended,
    SettleCalls,
    StartApproved,
    StartCalls,
    Suspend,
    TimeOutChildren,
    TimeOutWaits,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    completed_run,
    finished_call,
)
from psych_runtime.tools import InvalidArguments, ResolvedTool

ApprovalCheck = Callable[[dict[str, Any]], bool]
"""A named approval rule a worker registers: True when the call's arguments need approval."""

SETTLED_BY_CRASH = "its attempt ended before the call reported; the tool is not safe to retry"
SETTLED_BY_CANCEL = "the run was cancelled while the call was running"


def decide(
    decision: Decision,
    tools: Mapping[str, ResolvedTool],
    *,
    rules: Mapping[str, ApprovalCheck],
    validated: MutableMapping[str, dict[str, Any]],
) -> list[Body]:
    """The records that carry out `decision`, given the tools resolved for this turn.

    The arguments of each call it starts are validated here, once: their parsed form is put in
    `validated` under the call id, for the attempt to run the call with.
    """
    match decision:
        case StartCalls(calls):
            return [_start_or_refuse(call, tools, rules, validated) for call in calls]
        case StartApproved(calls):
            return [_start_approved(state, tools, validated) for state in calls]
        case DenyCalls(calls):
            return [
                ToolCallFailed(
                    call_id=c.call.call_id, reason="denied", error=c.decision or "denied"
                )
                for c in calls
            ]
        case FinishResumed(calls):
            # The payloads came in validated records: JSON already.
            return [finished_call(c.call.call_id, c.payload) for c in calls]
        case RetryCalls(calls):
            return [ToolCallStarted(call_id=call.call_id, name=call.name) for call in calls]
        case SettleCalls(calls):
            return [ToolCallSettled(call_id=call.call_id, note=SETTLED_BY_CRASH) for call in calls]
        case TimeOutWaits(calls):
            return [_timed_out_wait(c) for c in calls]
        case TimeOutChildren(calls):
            return [
                ToolCallFailed(
                    call_id=c.call.call_id,
                    reason="timeout",
                    error=f"its child run {c.child_run_id} did not end by {_iso(c)}, the "
                    "step's timeout; the child run is cancelled",
                )
                for c in calls
            ]
        case PlanSteps(planned):
            return [planned]
        case Suspend(reason, calls, due_at):
            ids = tuple(c.call.call_id for c in calls)
            return [RunSuspended(reason=reason, due_at=due_at, calls=ids)]
        case CancelRun(reason, never_began, began, failure):
            why = f": {reason}" if reason else ""
            ended = "ended" if failure is not None else "was cancelled"
            bodies: list[Body] = [
                ToolCallFailed(
                    call_id=c.call.call_id,
                    reason="cancelled",
                    error=f"the run {ended} before the call began{why}",
                )
                for c in never_began
            ]
            note = SETTLED_BY_CANCEL if failure is None else f"the run ended{why}"
            bodies += [ToolCallSettled(call_id=c.call.call_id, note=note) for c in began]
            if failure is not None:
                return [*bodies, RunFailed(reason=failure, error=reason)]
            return [*bodies, RunCancelled(reason=reason)]
        case RejectOutput(answer_seq, error, try_number):
            return [OutputRejected(answer_seq=answer_seq, error=error, try_number=try_number)]
        case Complete(output):
            return [completed_run(output)]
        case Fail(reason, error):
            return [RunFailed(reason=reason, error=error)]


def approval_needed(
    rule: ApprovalRule, arguments: dict[str, Any], rules: Mapping[str, ApprovalCheck]
) -> str | None:
    """Why the call needs approval (the rule that asks, in words), or None."""
    match rule:
        case bool():
            return "requires_approval=True" if rule else None
        case ArgRule():
            if rule.matches(arguments):
                return f"{rule.path} {rule.op} {json.dumps(rule.value)}"
            return None
        case str():
            check = rules.get(rule)
            if check is None:
                # Fail safe: a rule this worker does not know can only ask for approval.
                return f"{rule} (not registered with this worker, so approval is required)"
            return rule if check(arguments) else None


def _start_or_refuse(
    call: ToolCall,
    tools: Mapping[str, ResolvedTool],
    rules: Mapping[str, ApprovalCheck],
    validated: MutableMapping[str, dict[str, Any]],
) -> Body:
    tool = tools.get(call.name)
    if tool is None:
        offered = ", ".join(sorted(tools)) or "none"
        return ToolCallFailed(
            call_id=call.call_id,
            reason="unknown_tool",
            error=f"there is no tool named {call.name!r} (available: {offered})",
        )
    try:
        arguments = tool.validate(call.arguments)
    except InvalidArguments as exc:
        return ToolCallFailed(
            call_id=call.call_id,
            reason="invalid_arguments",
            error=f"invalid arguments for tool {call.name!r}: {exc}",
        )
    validated[call.call_id] = arguments
    rule = tool.approval_rule(arguments)
    if rule is not False:
        raw = json.loads(call.arguments) if call.arguments.strip() else {}
        why = approval_needed(rule, raw, rules)
        if why is not None:
            return ApprovalRequested(call_id=call.call_id, rule=why)
    return _started(call, tool, arguments)


def _started(call: ToolCall, tool: ResolvedTool, arguments: dict[str, Any]) -> ToolCallStarted:
    # A tool that says for itself whether it may run again (an MCP tool, by its annotations)
    # has that recorded now: a crash during the call is judged by what was known at its start.
    safe = tool.recorded_safety(arguments)
    return ToolCallStarted(call_id=call.call_id, name=call.name, safe_to_retry=safe)


def _start_approved(
    state: CallState,
    tools: Mapping[str, ResolvedTool],
    validated: MutableMapping[str, dict[str, Any]],
) -> Body:
    call = state.call
    tool = tools.get(call.name)
    if tool is None:
        return ToolCallFailed(
            call_id=call.call_id,
            reason="unknown_tool",
            error=f"tool {call.name!r} is no longer available to this run",
        )
    try:
        arguments = tool.validate(state.effective_arguments)
    except InvalidArguments as exc:
        whose = "the approver's edited arguments" if state.arguments is not None else "arguments"
        return ToolCallFailed(
            call_id=call.call_id,
            reason="invalid_arguments",
            error=f"{whose} for tool {call.name!r} are invalid: {exc}",
        )
    validated[call.call_id] = arguments
    return _started(call, tool, arguments)


def _timed_out_wait(state: CallState) -> Body:
    due = _iso(state)
    call = state.call
    if call.name == SLEEP_TOOL:
        # A sleep (or a retry's wait) that reaches its time has done what it was for.
        return ToolCallFinished(call_id=call.call_id, result={"slept_until": due})
    if call.name in (WAIT_TOOL, HUMAN_TOOL):
        what = "no answer came" if call.name == HUMAN_TOOL else "the event did not come"
        return ToolCallFailed(
            call_id=call.call_id,
            reason="timeout",
            error=f"{what} by {due}, the step's timeout",
        )
    return ToolCallFinished(
        call_id=call.call_id,
        result={"resumed": False, "timed_out": True, "due_at": due},
    )


def _iso(state: CallState) -> str | None:
    return state.due_at.isoformat() if state.due_at else None

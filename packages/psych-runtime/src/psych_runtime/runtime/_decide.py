"""Turning the reducer's decisions into record bodies. No effects happen here."""

from __future__ import annotations

from collections.abc import Mapping

from psych_core import (
    Body,
    Complete,
    Fail,
    RetryCalls,
    RunCompleted,
    RunFailed,
    SettleCalls,
    StartCalls,
    ToolCall,
    ToolCallFailed,
    ToolCallSettled,
    ToolCallStarted,
)
from psych_runtime.tools import InvalidArguments, ResolvedTool

Decision = StartCalls | RetryCalls | SettleCalls | Complete | Fail

SETTLED_BY_CRASH = "its attempt ended before the call reported; the tool is not safe to retry"


def decide(decision: Decision, tools: Mapping[str, ResolvedTool]) -> list[Body]:
    """The records that carry out `decision`, given the tools resolved for this turn."""
    match decision:
        case StartCalls(calls):
            return [_start_or_refuse(call, tools) for call in calls]
        case RetryCalls(calls):
            return [ToolCallStarted(call_id=call.call_id, name=call.name) for call in calls]
        case SettleCalls(calls):
            return [ToolCallSettled(call_id=call.call_id, note=SETTLED_BY_CRASH) for call in calls]
        case Complete():
            return [RunCompleted()]
        case Fail(reason, error):
            return [RunFailed(reason=reason, error=error)]


def _start_or_refuse(call: ToolCall, tools: Mapping[str, ResolvedTool]) -> Body:
    tool = tools.get(call.name)
    if tool is None:
        offered = ", ".join(sorted(tools)) or "none"
        return ToolCallFailed(
            call_id=call.call_id,
            reason="unknown_tool",
            error=f"there is no tool named {call.name!r} (available: {offered})",
        )
    try:
        tool.function.validate(call.arguments)
    except InvalidArguments as exc:
        return ToolCallFailed(
            call_id=call.call_id,
            reason="invalid_arguments",
            error=f"invalid arguments for tool {call.name!r}: {exc}",
        )
    return ToolCallStarted(call_id=call.call_id, name=call.name)

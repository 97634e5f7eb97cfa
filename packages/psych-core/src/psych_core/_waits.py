"""Which waiting call a `Resume` ends: decided alike when the inbox entry is moved in
(`receive`) and when the reducer folds it."""

from __future__ import annotations

import json

from psych_core._messages import ToolCall
from psych_core._signals import Resume
from psych_core._state import CallState, RunState
from psych_core._workflow_keys import parse_call_id, step_name
from psych_core._workflow_spec import BREAKPOINT_TOOL, WAIT_TOOL, WaitStep, WorkflowSpec, walk


def wait_event(call: ToolCall) -> str | None:
    """The event a workflow's wait call waits for (None for any other call)."""
    if call.name != WAIT_TOOL:
        return None
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return None
    event = arguments.get("event") if isinstance(arguments, dict) else None
    return event if isinstance(event, str) else None


def resume_target(state: RunState, resume: Resume) -> tuple[CallState | None, str]:
    """The waiting call `resume` ends, or None and why none does.

    A resume naming a call (`Resume.call_id`) ends the waiting call with that id, else the one
    whose step key or step name it is, when only one is (so ``answer(..., "approve")`` finds
    ``orders[2].approve#2``). One naming an event ends the first call waiting for that event.
    One naming neither ends the first waiting call. A resume for a breakpoint
    (`Resume.breakpoint`) is aimed only at the pauses at breakpoints, and any other only at
    the other waiting calls.
    """
    waiting = [
        c
        for c in state.calls
        if c.phase == "waiting" and (c.call.name == BREAKPOINT_TOOL) == resume.breakpoint
    ]
    if resume.breakpoint and not waiting:
        return None, "no step of this run is paused at a breakpoint"
    if resume.call_id is not None:
        wanted = resume.call_id
        for match in (
            lambda c: c.call.call_id == wanted,
            lambda c: parse_call_id(c.call.call_id).key == wanted,
            lambda c: step_name(c.call.call_id) == wanted,
        ):
            found = [c for c in waiting if match(c)]
            if len(found) == 1:
                return found[0], ""
            if len(found) > 1:
                names = ", ".join(c.call.call_id for c in found)
                return None, f"{wanted!r} names several waiting calls ({names}); name one of them"
        return None, f"no call of this run is waiting under the name {wanted!r}"
    if resume.event is not None:
        for call in waiting:
            if wait_event(call.call) == resume.event:
                return call, ""
        return None, f"no step of this run waits for event {resume.event!r}"
    if waiting:
        return waiting[0], ""
    return None, "the run was not waiting for a resume"


def resume_targets(state: RunState, resume: Resume) -> tuple[tuple[CallState, ...], str]:
    """The waiting calls `resume` ends, or none and why: the one `resume_target` finds, or,
    for a resume for a breakpoint that names no step, every pause at a breakpoint (a round
    goes on only when all of its calls have ended)."""
    if resume.breakpoint and resume.call_id is None:
        paused = tuple(
            c for c in state.calls if c.phase == "waiting" and c.call.name == BREAKPOINT_TOOL
        )
        return paused, "" if paused else "no step of this run is paused at a breakpoint"
    target, why = resume_target(state, resume)
    return ((target,) if target is not None else ()), why


def buffers(state: RunState, resume: Resume) -> bool:
    """Whether a named event that no call waits for yet is kept for a later wait step: when the
    run is a workflow that has a wait step for it."""
    if resume.event is None or resume.call_id is not None or resume.breakpoint:
        return False
    spec = state.spec
    return isinstance(spec, WorkflowSpec) and any(
        isinstance(step, WaitStep) and step.event == resume.event for step in walk(spec.steps)
    )

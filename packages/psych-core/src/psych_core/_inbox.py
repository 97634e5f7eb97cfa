"""Moving an inbox entry into the log: which record it becomes, decided from the state alone."""

from __future__ import annotations

from psych_core._records import ApprovalDecided, Body, SignalIgnored, SignalReceived
from psych_core._signals import (
    Approve,
    Cancel,
    ChildEnded,
    Continued,
    Deny,
    InboxEntry,
    Resume,
    UserInput,
)
from psych_core._state import RunState
from psych_core._waits import buffers, resume_targets
from psych_core._workflow_spec import WorkflowSpec


def receive(state: RunState, entry: InboxEntry) -> Body:
    """The record that moves `entry` into the log of a run in `state`.

    A signal that no longer applies (a decision on a call that is not awaiting one, a resume
    when nothing waits, a second cancel, a user message to a workflow) becomes `SignalIgnored`
    with the reason: never an error, since the sender could not know. A workflow's named
    event that no wait step waits for yet is received, and kept for the step that will.
    """
    signal = entry.signal
    match signal:
        case Approve() | Deny():
            call = state.call(signal.call_id)
            if call is None or call.phase != "awaiting_approval":
                where = "is not a call of the current turn" if call is None else f"is {call.phase}"
                return _ignored(entry, f"call {signal.call_id} {where}, not awaiting approval")
            if isinstance(signal, Approve):
                return ApprovalDecided(
                    number=entry.number,
                    call_id=signal.call_id,
                    approved=True,
                    by=signal.by,
                    note=signal.note,
                    arguments=signal.arguments,
                )
            return ApprovalDecided(
                number=entry.number,
                call_id=signal.call_id,
                approved=False,
                by=signal.by,
                reason=signal.reason,
            )
        case Resume():
            targets, why = resume_targets(state, signal)
            if not targets and not buffers(state, signal):
                return _ignored(entry, why)
        case Cancel():
            if state.cancel is not None:
                return _ignored(entry, "the run is already being cancelled")
        case ChildEnded():
            call = state.call(signal.call_id)
            if call is None or call.phase not in ("started", "child"):
                return _ignored(entry, f"no call of this run waits for child {signal.child_run_id}")
        case UserInput():
            if state.workflow is not None or isinstance(state.spec, WorkflowSpec):
                return _ignored(entry, "a workflow run takes no user messages")
        case Continued():
            # Only an ended run's inbox holds one, and an ended run moves nothing in.
            return _ignored(entry, f"run {signal.continuation} continues this run")
    return SignalReceived(number=entry.number, key=entry.key, signal=signal)


def _ignored(entry: InboxEntry, reason: str) -> SignalIgnored:
    return SignalIgnored(number=entry.number, key=entry.key, reason=reason)

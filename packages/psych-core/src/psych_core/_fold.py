"""The reducer: `fold(state, record) -> state`, pure and total.

Every record type has a rule here. A record that does not fit the state (a gap in the seqs, a
finish for a call that never started, anything after the run ended) raises `CorruptLog` naming
the run and the seq; nothing is ever skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pydantic import JsonValue
from pydantic_core import PydanticSerializationError, to_json

from psych_core._errors import CorruptLog, FoldError, NewerLog
from psych_core._messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from psych_core._records import (
    SCHEMA_VERSION,
    ApprovalDecided,
    ApprovalRequested,
    AttemptStarted,
    ChildFinished,
    ChildStarted,
    CompactionFailed,
    ConversationCompacted,
    ModelCallFailed,
    ModelCallFinished,
    Offloaded,
    OutputRejected,
    Record,
    RunAdmitted,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunSuspended,
    SignalIgnored,
    SignalReceived,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
    ToolsUnavailable,
)
from psych_core._signals import Cancel, ChildEnded, Resume, UserInput
from psych_core._spec import AgentSpec
from psych_core._state import CallOutcome, CallPhase, CallState, RunState, call_key
from psych_core._usage import Usage
from psych_core._waits import resume_targets, wait_event
from psych_core._workflow_state import EMPTY_PROGRESS, ProgressWriter

if TYPE_CHECKING:
    from dataclasses import replace
else:
    from psych_core._evolve import evolve as replace

UNKNOWN_OUTCOME = (
    "The outcome of this call is unknown: the worker running it stopped before it reported a "
    "result. It may or may not have taken effect. Check its effect before calling it again."
)


def output_correction(error: str) -> str:
    """What the model is told after its final answer was rejected (`OutputRejected`)."""
    return (
        f"Your final answer was not accepted: {error}. Reply again with only the corrected "
        "answer: JSON that matches the required output schema, and no other text."
    )


def fold(state: RunState, record: Record) -> RunState:
    """The state after `record`.

    Raises `CorruptLog` when the record does not fit the log before it, and `NewerLog` when
    the log was written by a newer psych-core than this one.
    """
    if record.run_id != state.run_id:
        raise CorruptLog(state.run_id, record.seq, f"record belongs to run {record.run_id}")
    if record.seq != state.next_seq:
        if record.seq < state.next_seq:
            problem = f"seq {record.seq} repeats the log: expected seq {state.next_seq}"
        elif record.seq == state.next_seq + 1:
            problem = f"seq {state.next_seq} is missing"
        else:
            problem = f"seqs {state.next_seq} to {record.seq - 1} are missing"
        raise CorruptLog(state.run_id, record.seq, problem)
    if state.ended:
        raise CorruptLog(
            state.run_id, record.seq, f"{record.body.type} after the run ended ({state.status})"
        )
    body = record.body
    if state.admitted is None and not isinstance(body, RunAdmitted):
        raise CorruptLog(state.run_id, record.seq, f"log starts with {body.type}, not run_admitted")
    n = record.seq + 1
    match body:
        case RunAdmitted():
            return _admitted(state, record, body)
        case AttemptStarted():
            if record.attempt <= state.attempt:
                raise CorruptLog(
                    state.run_id,
                    record.seq,
                    f"attempt {record.attempt} started after attempt {state.attempt}",
                )
            return replace(
                state, next_seq=n, attempt=record.attempt, status="running", waiting=None
            )
        case ModelCallFinished():
            return _model_finished(state, record, body)
        case ModelCallFailed() | ToolsUnavailable():
            return replace(state, next_seq=n)
        case ToolCallStarted():
            return _tool_started(state, record, body)
        case StepsPlanned():
            return _steps_planned(state, record, body)
        case ToolCallFinished():
            done = _started_call(
                state, record, body.call_id, also=("waiting", "resumed", "child_ended")
            )
            outcome = CallOutcome("finished", body.result)
            content = render_result(body.result) if state.workflow is None else ""
            message = ToolResultMessage(body.call_id, done.call.name, content)
            return _settle(state, record, done, message, outcome, failed_streak=0)
        case ToolCallFailed():
            done = _open_call(state, record, body.call_id)
            text = f"Error ({body.reason}): {body.error}"
            message = ToolResultMessage(body.call_id, done.call.name, text, True)
            outcome = CallOutcome("failed", reason=body.reason, error=body.error)
            streak = state.failed_streak + 1
            return _settle(state, record, done, message, outcome, failed_streak=streak)
        case ToolCallSettled():
            done = _started_call(state, record, body.call_id, also=("child", "child_ended"))
            message = ToolResultMessage(body.call_id, done.call.name, UNKNOWN_OUTCOME, True)
            outcome = CallOutcome("unknown", error=body.note or "its worker stopped")
            return _settle(state, record, done, message, outcome)
        case ToolCallWaiting():
            current = _started_call(state, record, body.call_id)
            waiting = replace(current, phase="waiting", due_at=body.due_at)
            return _waiting(replace(state, next_seq=n), waiting)
        case ApprovalRequested():
            current = _open_call(state, record, body.call_id)
            if current.phase != "requested":
                raise CorruptLog(
                    state.run_id,
                    record.seq,
                    f"approval requested for call {body.call_id}, which is {current.phase}",
                )
            asked = replace(current, phase="awaiting_approval")
            return replace(state, next_seq=n, calls=_with_call(state, asked))
        case ApprovalDecided():
            state = _inbox_number(state, record, body.number)
            current = _open_call(state, record, body.call_id)
            if current.phase != "awaiting_approval":
                raise CorruptLog(
                    state.run_id,
                    record.seq,
                    f"decision on call {body.call_id}, which is "
                    f"{current.phase}, not awaiting approval",
                )
            if body.approved:
                edited = None if body.arguments is None else json.dumps(body.arguments)
                decided = replace(current, phase="approved", arguments=edited)
            else:
                why = f": {body.reason}" if body.reason else ""
                decided = replace(current, phase="denied", decision=f"denied by {body.by}{why}")
            return replace(state, next_seq=n, calls=_with_call(state, decided))
        case SignalReceived():
            return _signal(_inbox_number(state, record, body.number), record, body)
        case SignalIgnored():
            return replace(_inbox_number(state, record, body.number), next_seq=n)
        case ChildStarted():
            current = _started_call(state, record, body.call_id, also=("child_ended",))
            # A fast child may have ended (and its notice been moved in) before this record.
            phase: CallPhase = "child_ended" if current.phase == "child_ended" else "child"
            child = replace(current, phase=phase, child_run_id=body.child_run_id)
            return replace(state, next_seq=n, calls=_with_call(state, child))
        case ChildFinished():
            _started_call(state, record, body.call_id, only=("child_ended",))
            return replace(state, next_seq=n)
        case RunSuspended():
            return replace(
                state, next_seq=n, status="waiting", waiting=body.reason, due_at=body.due_at
            )
        case OutputRejected():
            return _output_rejected(state, record, body)
        case ConversationCompacted():
            return _compacted(state, record, body)
        case CompactionFailed():
            return replace(state, next_seq=n, context_tokens=None)
        case RunCompleted():
            if state.workflow is not None:
                if state.open_calls:
                    raise CorruptLog(
                        state.run_id, record.seq, "run_completed while a step's call is open"
                    )
                progress = replace(state.workflow, output=body.output)
                return replace(
                    state, next_seq=n, status="completed", waiting=None, workflow=progress
                )
            if not state.answered:
                raise CorruptLog(
                    state.run_id, record.seq, "run_completed before the model gave a final answer"
                )
            return replace(state, next_seq=n, status="completed", waiting=None)
        case RunFailed():
            return replace(
                state,
                next_seq=n,
                status="failed",
                waiting=None,
                failure_reason=body.reason,
                error=body.error,
            )
        case RunCancelled():
            return replace(
                state, next_seq=n, status="cancelled", waiting=None, error=body.reason or None
            )
        case Offloaded():
            # Not corrupt: this reader lacks the BlobStore that keeps the body. A worker
            # releases such a run for one that has it; it never fails the run for it.
            raise FoldError(
                state.run_id,
                record.seq,
                f"the {body.body_type} record is kept in blob {body.blob}; read the log through "
                "the OffloadingStore (with its BlobStore) that wrote it",
            )


def fold_all(state: RunState, records: Iterable[Record]) -> RunState:
    """Fold each record in order."""
    for record in records:
        state = fold(state, record)
    return state


def render_result(result: JsonValue) -> str:
    """A tool result as the model reads it: strings as they are, anything else as compact
    JSON (no space after a separator: fewer tokens), written by pydantic's serializer as the
    record's JSON is, with a NaN or an infinity as ``null`` as the record keeps it, so a run
    read back from its log tells the model what it was told live. At a fifth of the cost of
    ``json.dumps``, which wrote it before. A string holding a lone surrogate (which UTF-8
    cannot carry: the store refuses such a record and the call fails ``invalid_result``) is
    written by ``json.dumps`` instead."""
    if isinstance(result, str):
        return result
    try:
        return to_json(result, inf_nan_mode="null").decode()
    except PydanticSerializationError:
        return json.dumps(result, ensure_ascii=False)


def _admitted(state: RunState, record: Record, body: RunAdmitted) -> RunState:
    if record.seq != 0:
        raise CorruptLog(state.run_id, record.seq, "run_admitted after seq 0")
    if body.schema_version > SCHEMA_VERSION:
        raise NewerLog(
            state.run_id,
            record.seq,
            f"log schema version {body.schema_version} is newer than this package reads "
            f"({SCHEMA_VERSION}); upgrade psych-core",
        )
    if state.spec is not None and state.spec.version != body.spec_version:
        # The reader's mistake (folding with another spec), not the log's.
        raise FoldError(
            state.run_id,
            record.seq,
            f"run was admitted with spec {body.spec_version}, not {state.spec.version}",
        )
    conversation = state.conversation
    for message in body.history:
        conversation = conversation.add(message)
    for text in body.queued:
        conversation = conversation.add(UserMessage(text))
    return replace(
        state,
        next_seq=1,
        admitted=body,
        admitted_at=record.at,
        status="queued",
        context_tokens=body.history_tokens,
        conversation=conversation.add(UserMessage(body.input)),
        turns=1,
    )


def _model_finished(state: RunState, record: Record, body: ModelCallFinished) -> RunState:
    if state.workflow is not None:
        raise CorruptLog(state.run_id, record.seq, "model_call_finished in a workflow run")
    for open_call in state.calls:
        if open_call.phase != "done":
            raise CorruptLog(
                state.run_id,
                record.seq,
                f"model answered while call {open_call.call.call_id} is still open",
            )
    if state.answered:
        raise CorruptLog(state.run_id, record.seq, "model called again after its final answer")
    for index, call in enumerate(body.tool_calls):
        expected = f"{record.seq}.{index}"
        if call.call_id != expected:
            raise CorruptLog(
                state.run_id, record.seq, f"tool call {call.call_id!r} should be named {expected!r}"
            )
    usage = state.usage + body.usage if body.usage is not None else state.usage
    state = replace(
        state,
        call_counts=_counted(state, body.tool_calls),
        next_seq=record.seq + 1,
        conversation=state.conversation.add(AssistantMessage(body.text, body.tool_calls)),
        model_calls=state.model_calls + 1,
        turn_model_calls=state.turn_model_calls + 1,
        tool_calls=state.tool_calls + len(body.tool_calls),
        calls=tuple([CallState(call) for call in body.tool_calls]),
        last_text=body.text,
        last_model_seq=record.seq,
        answered=not body.tool_calls,
        usage=usage,
        context_tokens=None if body.usage is None else context_size(body.usage),
    )
    if state.answered and state.follow_ups:
        # Follow-ups waited for this answer: the run goes on with them instead of completing.
        for text in state.follow_ups:
            state = _new_turn(state, text)
        state = replace(state, follow_ups=())
    return state


def context_size(usage: Usage) -> int:
    """The conversation's size a call's usage measures: every input token (cached or not)
    and the output, which the next request carries too."""
    return usage.input + usage.cache_read + usage.cache_write + usage.cache_write_1h + usage.output


def _compacted(state: RunState, record: Record, body: ConversationCompacted) -> RunState:
    if state.workflow is not None or state.open_calls:
        raise CorruptLog(
            state.run_id, record.seq, "conversation_compacted while a tool call is open"
        )
    messages = state.conversation.messages()
    if not state.kept_from < body.kept_from < len(messages) or not isinstance(
        messages[body.kept_from], UserMessage
    ):
        raise CorruptLog(
            state.run_id,
            record.seq,
            f"conversation_compacted keeps from message {body.kept_from}, which does not open "
            f"a user turn after message {state.kept_from}",
        )
    usage = state.usage + body.usage if body.usage is not None else state.usage
    return replace(
        state,
        next_seq=record.seq + 1,
        summary=body.summary,
        kept_from=body.kept_from,
        context_tokens=None,
        usage=usage,
    )


def _counted(state: RunState, calls: tuple[ToolCall, ...]) -> Mapping[str, int]:
    """The state's call counts with `calls` counted in (`call_key`), when its spec guards
    against repeated calls (`AgentSpec.max_identical_calls`): only that guard reads them, and
    counting costs a canonical hash of each call and a copy of a map that grows with the run's
    distinct calls, at every model turn."""
    counts = state.call_counts
    spec = state.spec
    if not calls or not isinstance(spec, AgentSpec) or spec.max_identical_calls is None:
        return counts
    added = dict(counts)
    for call in calls:
        key = call_key(call)
        added[key] = added.get(key, 0) + 1
    return added


def _steps_planned(state: RunState, record: Record, body: StepsPlanned) -> RunState:
    if state.model_calls:
        raise CorruptLog(state.run_id, record.seq, "steps_planned in an agent run")
    for open_call in state.calls:
        if open_call.phase != "done":
            raise CorruptLog(
                state.run_id,
                record.seq,
                f"steps planned while call {open_call.call.call_id} of the last round is open",
            )
    writer = ProgressWriter(state.workflow or EMPTY_PROGRESS, state.run_id, record.seq)
    for event in body.events:
        writer.apply(event)
    ids = [call.call_id for call in body.calls]
    if len(set(ids)) != len(ids):
        raise CorruptLog(state.run_id, record.seq, "steps planned with a call id twice")
    calls = tuple(
        CallState(ToolCall(call_id=c.call_id, name=c.name, arguments=c.arguments), due_at=c.due_at)
        for c in body.calls
    )
    return replace(
        state,
        next_seq=record.seq + 1,
        workflow=writer.freeze(starts=body.starts, rounds=1),
        calls=calls,
        tool_calls=state.tool_calls + len(calls),
    )


def _waiting(state: RunState, call: CallState) -> RunState:
    """`call` waits; a workflow wait call whose event arrived before it waited ends at once."""
    event = wait_event(call.call) if state.workflow is not None else None
    buffered = state.workflow.events.get(event, ()) if state.workflow and event else ()
    if state.workflow is not None and event is not None and buffered:
        events = dict(state.workflow.events)
        if len(buffered) > 1:
            events[event] = buffered[1:]
        else:
            del events[event]
        resumed = replace(call, phase="resumed", payload=buffered[0])
        progress = replace(state.workflow, events=events)
        return replace(state, calls=_with_call(state, resumed), workflow=progress)
    return replace(state, calls=_with_call(state, call))


def _tool_started(state: RunState, record: Record, body: ToolCallStarted) -> RunState:
    current = state.call(body.call_id)
    if current is None:
        raise CorruptLog(state.run_id, record.seq, f"start of unknown call {body.call_id}")
    if current.call.name != body.name:
        raise CorruptLog(
            state.run_id,
            record.seq,
            f"call {body.call_id} is {current.call.name!r}, not {body.name!r}",
        )
    orphaned = current.phase == "started" and (current.started_attempt or 0) < record.attempt
    if current.phase not in ("requested", "approved") and not orphaned:
        raise CorruptLog(state.run_id, record.seq, f"call {body.call_id} started twice")
    started = replace(
        current,
        phase="started",
        started_attempt=record.attempt,
        starts=current.starts + 1,
        # A start after a crash (a safe call run again) keeps the safety first recorded.
        safe_to_retry=current.safe_to_retry if body.safe_to_retry is None else body.safe_to_retry,
    )
    return replace(state, next_seq=record.seq + 1, calls=_with_call(state, started))


def _open_call(state: RunState, record: Record, call_id: str) -> CallState:
    current = state.call(call_id)
    if current is None:
        raise CorruptLog(state.run_id, record.seq, f"{record.body.type} for unknown call {call_id}")
    if current.phase == "done":
        raise CorruptLog(state.run_id, record.seq, f"call {call_id} already has an outcome")
    return current


def _started_call(
    state: RunState,
    record: Record,
    call_id: str,
    also: tuple[str, ...] = (),
    only: tuple[str, ...] | None = None,
) -> CallState:
    current = _open_call(state, record, call_id)
    allowed = only if only is not None else ("started", *also)
    if current.phase not in allowed:
        raise CorruptLog(
            state.run_id, record.seq, f"{record.body.type} for call {call_id}, which never started"
        )
    return current


def _settle(
    state: RunState,
    record: Record,
    current: CallState,
    message: ToolResultMessage,
    outcome: CallOutcome,
    *,
    failed_streak: int | None = None,
) -> RunState:
    """The state with `current` done; `failed_streak` set when given (None keeps it)."""
    done = replace(current, phase="done", outcome=outcome)
    streak = state.failed_streak if failed_streak is None else failed_streak
    if state.workflow is not None:
        # A workflow has no conversation: its planner reads the outcome from the call.
        calls = _with_call(state, done)
        return replace(state, next_seq=record.seq + 1, calls=calls, failed_streak=streak)
    state = replace(
        state,
        next_seq=record.seq + 1,
        calls=_with_call(state, done),
        conversation=state.conversation.add(message),
        failed_streak=streak,
    )
    if state.pending_input and not state.open_calls:
        # Messages that arrived while calls were open join the conversation once every call
        # has its answer: a provider requires tool results right after the calls.
        for text in state.pending_input:
            state = _new_turn(state, text)
        state = replace(state, pending_input=())
    return state


def _new_turn(state: RunState, text: str) -> RunState:
    return replace(
        state,
        conversation=state.conversation.add(UserMessage(text)),
        turns=state.turns + 1,
        turn_model_calls=0,
        answered=False,
        output_rejections=(),
    )


def _output_rejected(state: RunState, record: Record, body: OutputRejected) -> RunState:
    if not state.answered:
        raise CorruptLog(
            state.run_id, record.seq, "output_rejected while no final answer awaits a decision"
        )
    if body.answer_seq != state.last_model_seq:
        raise CorruptLog(
            state.run_id,
            record.seq,
            f"output_rejected names the answer at seq {body.answer_seq}, but the final answer "
            f"is at seq {state.last_model_seq}",
        )
    expected = len(state.output_rejections) + 1
    if body.try_number != expected:
        raise CorruptLog(
            state.run_id,
            record.seq,
            f"output_rejected is try {body.try_number}, but this answer is try {expected}",
        )
    return replace(
        state,
        next_seq=record.seq + 1,
        conversation=state.conversation.add(UserMessage(output_correction(body.error))),
        answered=False,
        output_rejections=(*state.output_rejections, (body.answer_seq, body.error)),
    )


def _inbox_number(state: RunState, record: Record, number: int) -> RunState:
    if number <= state.inbox_seen:
        raise CorruptLog(
            state.run_id,
            record.seq,
            f"inbox entry {number} moved in again (entries up to {state.inbox_seen} are in)",
        )
    return replace(state, inbox_seen=number)


def _signal(state: RunState, record: Record, body: SignalReceived) -> RunState:
    n = record.seq + 1
    match body.signal:
        case Resume(payload=payload) as resume:
            targets, why = resume_targets(state, resume)
            if targets:
                for target in targets:
                    resumed = replace(target, phase="resumed", payload=payload)
                    state = replace(state, calls=_with_call(state, resumed))
                return replace(state, next_seq=n)
            if resume.event is not None and resume.call_id is None:
                # A workflow's event that came before its wait step waits: kept for it.
                progress = (state.workflow or EMPTY_PROGRESS).buffered(resume.event, payload)
                return replace(state, next_seq=n, workflow=progress)
            raise CorruptLog(state.run_id, record.seq, f"resume received, but {why}")
        case Cancel(reason=reason):
            return replace(state, next_seq=n, cancel=reason)
        case UserInput(text=text, queue="next_run"):
            return replace(state, next_seq=n, next_run=(*state.next_run, text))
        case UserInput(text=text, queue="follow_up"):
            if state.answered and not state.open_calls:
                return replace(_new_turn(state, text), next_seq=n)
            return replace(state, next_seq=n, follow_ups=(*state.follow_ups, text))
        case UserInput(text=text):
            if state.open_calls:
                return replace(state, next_seq=n, pending_input=(*state.pending_input, text))
            return replace(_new_turn(state, text), next_seq=n)
        case ChildEnded(child_run_id=child_id, call_id=call_id):
            current = state.call(call_id)
            if current is None or current.phase not in ("started", "child"):
                raise CorruptLog(
                    state.run_id, record.seq, f"child {child_id} ended for no running call"
                )
            ended = replace(current, phase="child_ended", child_run_id=child_id)
            return replace(state, next_seq=n, calls=_with_call(state, ended))
        case _:
            raise CorruptLog(
                state.run_id, record.seq, f"signal {body.signal.kind} cannot be received here"
            )


def _with_call(state: RunState, new: CallState) -> tuple[CallState, ...]:
    # A list comprehension is inlined (PEP 709); a generator is a frame per call.
    call_id = new.call.call_id
    return tuple([new if old.call.call_id == call_id else old for old in state.calls])

"""What a run's log says in OpenTelemetry's terms: planned spans and events, a fold of records.

A telemetry adapter turns these plans into its own spans; it never invents one. Each plan is
complete when it is made: a span is planned by the record that ends it (a model call's reply, a
tool call's outcome, the run's last record), with the times the log holds, ids derived from the
run (`psych_core._trace`), and the attributes of the OpenTelemetry GenAI semantic conventions.
The run's own span (``invoke_agent {agent}`` or ``invoke_workflow {workflow}``) is planned by
the record that ends the run and carries, as events, what happened to the run between its
other spans: attempts, suspensions, waits, approvals, signals.

`TraceView` is the little the fold keeps between records. A worker that claims a run folds
the log it read into a view (nothing is planned for records an earlier attempt committed),
then plans each commit of its own with `plan_batch`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from psych_core._records import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptStarted,
    ChildFinished,
    ChildStarted,
    CompactionFailed,
    ConversationCompacted,
    ModelCallFailed,
    ModelCallFinished,
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
from psych_core._trace import parse_traceparent, run_trace_id, span_id_of
from psych_core._usage import Usage
from psych_core._workflow_keys import step_name

AttributeValue = str | bool | int | float | tuple[str, ...]
"""A span or event attribute's value, as OpenTelemetry accepts them."""

Operation = Literal["invoke_agent", "invoke_workflow", "chat", "execute_tool"]

REQUIRED_ATTRIBUTES: Mapping[Operation, tuple[str, ...]] = {
    "invoke_agent": (
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.provider.name",
        "psych.run.id",
        "psych.run.status",
    ),
    "invoke_workflow": (
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "psych.run.id",
        "psych.run.status",
    ),
    "chat": (
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "psych.run.id",
        "psych.seq",
    ),
    "execute_tool": (
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "psych.run.id",
        "psych.tool.outcome",
    ),
}
"""The attributes every planned span of each operation carries."""

CONTENT_ATTRIBUTES = frozenset(
    {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
)
"""Attributes that hold what the run said (input, output, tool arguments and results): planned
only when the application opts in (``content=True``), from records already redacted."""

TRACE_MAP: Mapping[str, str] = {
    "run_admitted": "opens invoke_agent / invoke_workflow",
    "attempt_started": "event psych.attempt",
    "model_call_finished": "span chat",
    "model_call_failed": "span chat",
    "tool_call_started": "opens execute_tool",
    "tool_call_finished": "span execute_tool",
    "tool_call_failed": "span execute_tool",
    "tool_call_settled": "span execute_tool",
    "tool_call_waiting": "event psych.wait",
    "tools_unavailable": "event psych.tools.unavailable",
    "approval_requested": "event psych.approval.requested",
    "approval_decided": "event psych.approval.decided",
    "signal_received": "event psych.signal",
    "signal_ignored": "event psych.signal.ignored",
    "run_suspended": "event psych.suspended",
    "child_started": "event psych.child.started",
    "child_finished": "event psych.child.finished",
    "output_rejected": "event psych.output.rejected",
    "steps_planned": "event psych.steps.planned",
    "conversation_compacted": "span chat",
    "compaction_failed": "span chat",
    "run_completed": "span invoke_agent / invoke_workflow",
    "run_failed": "span invoke_agent / invoke_workflow",
    "run_cancelled": "span invoke_agent / invoke_workflow",
    "offloaded": "nothing: the store restores the body it stands for before it is read",
}
"""Every record type and what it becomes in a trace (a test checks none is missing)."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """Something that happened to a run at one moment (an OpenTelemetry span event)."""

    name: str
    at: dt.datetime
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlannedSpan:
    """A span the log says happened, complete: names, ids, times, attributes and events.

    Attributes:
        name: ``"{operation} {subject}"``: ``"chat gpt-4.1-mini"``, ``"execute_tool search"``.
        operation: its `gen_ai.operation.name`.
        trace_id: the run's trace (`run_trace_id`).
        span_id: derived from the run and what the span is (`span_id_of`).
        parent_id: the parent span's id; for a run's own span, its caller's span (a traced
            request's, or a parent run's tool call), None when it has none (a trace root).
        remote_parent: whether the parent was recorded from another trace context (the run's
            own span under a caller's span) rather than being a span of this run.
        sampled: the sampled flag of the run's caller (True when it has none): every span of
            a run carries it, so a sampler that follows its parent keeps or drops the run whole.
        start: when it began; end: when it ended.
        kind: ``client`` for a call to a model, ``internal`` otherwise.
        error: the `error.type` it ended with; None when it ended without one.
    """

    name: str
    operation: Operation
    trace_id: int
    span_id: int
    parent_id: int | None
    start: dt.datetime
    end: dt.datetime
    attributes: Mapping[str, AttributeValue]
    events: tuple[SpanEvent, ...] = ()
    kind: Literal["client", "internal"] = "internal"
    error: str | None = None
    remote_parent: bool = False
    sampled: bool = True


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What the plans need that the records do not hold.

    Attributes:
        provider: the `gen_ai.provider.name` of the model client (``"openai"``, ...).
        request_model: the model the run's spec asks for (`gen_ai.request.model`).
        content: whether to plan `CONTENT_ATTRIBUTES` (off unless the application opts in).
    """

    provider: str = "unknown"
    request_model: str | None = None
    content: bool = False


@dataclass(frozen=True, slots=True)
class OpenToolCall:
    """A tool call a run started and has not ended: its tool, when it (last) started, how many
    times it started, and the seq of that start."""

    name: str
    at: dt.datetime
    starts: int
    seq: int


@dataclass(frozen=True, slots=True)
class TraceView:
    """What the fold keeps between records of one run: the trace, when the run began, the tool
    calls started and not yet ended, and the run's events so far."""

    run_id: str
    trace_id: int
    parent_id: int | None = None
    sampled: bool = True
    agent: str = ""
    tenant: str = ""
    spec_version: str = ""
    admitted_at: dt.datetime | None = None
    last_at: dt.datetime | None = None
    workflow: bool = False
    suspended: bool = False
    attempts: int = 0
    input: str | None = None
    last_text: str | None = None
    open_calls: Mapping[str, OpenToolCall] = field(default_factory=dict)
    arguments: Mapping[str, str] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()

    @classmethod
    def empty(cls, run_id: str) -> TraceView:
        """The view before seq 0: the trace is the one derived from the run id until
        `RunAdmitted` says otherwise."""
        return cls(run_id=run_id, trace_id=run_trace_id(run_id, None))


def fold_view(view: TraceView, records: Sequence[Record], context: PlanContext) -> TraceView:
    """`view` after `records`, planning nothing (they were committed, and their spans emitted,
    by an earlier attempt)."""
    for record in records:
        view, _ = _step(view, record, context, started=view.last_at)
    return view


def plan_batch(
    view: TraceView, records: Sequence[Record], context: PlanContext
) -> tuple[TraceView, list[PlannedSpan]]:
    """`view` after one committed batch, and the spans the batch ended.

    A model call's span begins at the last record committed before the batch: the runtime
    calls the model right after that commit, and records the reply when it comes.
    """
    started = view.last_at
    planned: list[PlannedSpan] = []
    for record in records:
        view, span = _step(view, record, context, started=started)
        if span is not None:
            planned.append(span)
    return view, planned


def _step(
    view: TraceView, record: Record, context: PlanContext, *, started: dt.datetime | None
) -> tuple[TraceView, PlannedSpan | None]:
    body = record.body
    at = record.at
    span: PlannedSpan | None = None
    event: SpanEvent | None = None
    attributes: dict[str, AttributeValue]
    match body:
        case RunAdmitted():
            parent = parse_traceparent(body.traceparent)
            view = replace(
                view,
                trace_id=run_trace_id(view.run_id, body.traceparent),
                parent_id=parent.span_id if parent is not None else None,
                sampled=parent.sampled if parent is not None else True,
                agent=body.agent,
                tenant=body.scope.tenant,
                spec_version=body.spec_version,
                admitted_at=at,
                input=body.input if context.content else None,
            )
        case AttemptStarted(worker_id=worker):
            after = "admission" if view.attempts == 0 else "suspension"
            if view.attempts and not view.suspended:
                after = "interruption"  # crashed, lost its lease, or was drained
            attributes = {
                "psych.attempt": record.attempt,
                "psych.worker.id": worker,
                "psych.attempt.after": after,
            }
            event = SpanEvent("psych.attempt", at, attributes)
            view = replace(view, attempts=record.attempt, suspended=False)
        case ModelCallFinished() | ModelCallFailed():
            span = _chat(view, record, body, context, started or at)
            if isinstance(body, ModelCallFinished) and context.content:
                arguments = dict(view.arguments)
                arguments.update({call.call_id: call.arguments for call in body.tool_calls})
                view = replace(view, arguments=arguments, last_text=body.text)
        case ConversationCompacted() | CompactionFailed():
            span = _chat(view, record, body, context, started or at)
        case StepsPlanned():
            attributes = {
                "psych.steps.events": len(body.events),
                "psych.steps.calls": len(body.calls),
            }
            event = SpanEvent("psych.steps.planned", at, attributes)
            arguments = dict(view.arguments)
            if context.content:
                arguments.update({call.call_id: call.arguments for call in body.calls})
            view = replace(view, workflow=True, arguments=arguments)
        case ToolCallStarted(call_id=call_id, name=name):
            previous = view.open_calls.get(call_id)
            starts = previous.starts + 1 if previous is not None else 1
            opened = {**view.open_calls, call_id: OpenToolCall(name, at, starts, record.seq)}
            view = replace(view, open_calls=opened)
        case ToolCallFinished() | ToolCallFailed() | ToolCallSettled():
            span = _tool(view, record, body, context)
            view = replace(
                view,
                open_calls={k: v for k, v in view.open_calls.items() if k != body.call_id},
                arguments={k: v for k, v in view.arguments.items() if k != body.call_id},
            )
        case ToolCallWaiting(call_id=call_id, due_at=due_at):
            attributes = {"gen_ai.tool.call.id": call_id}
            if due_at is not None:
                attributes["psych.due_at"] = due_at.isoformat()
            event = SpanEvent("psych.wait", at, attributes)
        case ApprovalRequested(call_id=call_id, rule=rule):
            event = SpanEvent(
                "psych.approval.requested", at, {"gen_ai.tool.call.id": call_id, "psych.rule": rule}
            )
        case ApprovalDecided():
            attributes = {
                "gen_ai.tool.call.id": body.call_id,
                "psych.approved": body.approved,
                "psych.inbox.number": body.number,
                "psych.edited": body.arguments is not None,
            }
            event = SpanEvent("psych.approval.decided", at, attributes)
            if body.arguments is not None and context.content:
                edited = json.dumps(body.arguments, ensure_ascii=False)
                view = replace(view, arguments={**view.arguments, body.call_id: edited})
        case SignalReceived():
            attributes = {
                "psych.inbox.number": body.number,
                "psych.signal.key": body.key,
                "psych.signal.kind": body.signal.kind,
            }
            event = SpanEvent("psych.signal", at, attributes)
        case SignalIgnored():
            attributes = {"psych.inbox.number": body.number, "psych.signal.key": body.key}
            event = SpanEvent("psych.signal.ignored", at, attributes)
        case RunSuspended():
            attributes = {"psych.suspended.reason": body.reason, "psych.calls": body.calls}
            if body.due_at is not None:
                attributes["psych.due_at"] = body.due_at.isoformat()
            event = SpanEvent("psych.suspended", at, attributes)
            view = replace(view, suspended=True)
        case ChildStarted():
            attributes = {
                "gen_ai.tool.call.id": body.call_id,
                "psych.child.run_id": body.child_run_id,
            }
            event = SpanEvent("psych.child.started", at, attributes)
        case ChildFinished():
            attributes = {
                "gen_ai.tool.call.id": body.call_id,
                "psych.child.run_id": body.child_run_id,
                "psych.child.status": body.status,
            }
            event = SpanEvent("psych.child.finished", at, attributes)
        case ToolsUnavailable():
            event = SpanEvent("psych.tools.unavailable", at, {"psych.tool.source": body.source})
        case OutputRejected():
            attributes = {"psych.answer_seq": body.answer_seq, "psych.try": body.try_number}
            event = SpanEvent("psych.output.rejected", at, attributes)
        case RunCompleted() | RunFailed() | RunCancelled():
            span = _run(view, record, body, context)
        case _:
            pass  # an Offloaded body never reaches a fold: see TRACE_MAP
    if event is not None:
        view = replace(view, events=(*view.events, event))
    return replace(view, last_at=at), span


def _chat(
    view: TraceView,
    record: Record,
    body: ModelCallFinished | ModelCallFailed | ConversationCompacted | CompactionFailed,
    context: PlanContext,
    start: dt.datetime,
) -> PlannedSpan:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": context.provider,
        "gen_ai.request.model": context.request_model or body.model,
        "psych.run.id": view.run_id,
        "psych.seq": record.seq,
        "psych.attempt": record.attempt,
    }
    error: str | None = None
    if isinstance(body, ModelCallFailed | CompactionFailed):
        error = _model_error(body)
    else:
        attributes["gen_ai.response.model"] = body.model
        attributes["psych.usage.source"] = body.usage_source
        if body.usage is not None:
            attributes.update(_usage_attributes(body.usage))
        if body.cost is not None:
            attributes["psych.cost.amount"] = float(body.cost.amount)
            attributes["psych.cost.currency"] = body.cost.currency
            attributes["psych.cost.source"] = body.cost.source
    if isinstance(body, ConversationCompacted | CompactionFailed):
        attributes["psych.compaction"] = True
        attributes["gen_ai.request.model"] = body.model
    if isinstance(body, ModelCallFinished):
        if body.finish_reason is not None:
            attributes["gen_ai.response.finish_reasons"] = (body.finish_reason,)
        if context.content:
            attributes["gen_ai.output.messages"] = _output_messages(body)
    return PlannedSpan(
        name=f"chat {attributes['gen_ai.request.model']}",
        operation="chat",
        trace_id=view.trace_id,
        span_id=span_id_of(view.run_id, f"seq:{record.seq}"),
        parent_id=span_id_of(view.run_id, "run"),
        start=start,
        end=record.at,
        attributes=attributes,
        kind="client",
        error=error,
        sampled=view.sampled,  # a run is recorded or dropped whole, as its caller chose
    )


def _usage_attributes(usage: Usage) -> dict[str, AttributeValue]:
    """A reported usage in the GenAI conventions: input counts the whole prompt (cached and
    uncached), with the cached parts also on their own."""
    whole_input = usage.input + usage.cache_read + usage.cache_write + usage.cache_write_1h
    attributes: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": whole_input,
        "gen_ai.usage.output_tokens": usage.output,
    }
    if usage.cache_read:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read
    if usage.cache_write or usage.cache_write_1h:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = (
            usage.cache_write + usage.cache_write_1h
        )
    return attributes


def _model_error(body: ModelCallFailed | CompactionFailed) -> str:
    if isinstance(body, ModelCallFailed) and body.status is not None:
        return str(body.status)
    return "model_error"


def _output_messages(body: ModelCallFinished) -> str:
    parts: list[dict[str, object]] = []
    if body.text:
        parts.append({"type": "text", "content": body.text})
    for call in body.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    message = {"role": "assistant", "parts": parts, "finish_reason": body.finish_reason}
    return json.dumps([message], ensure_ascii=False)


def _tool(
    view: TraceView,
    record: Record,
    body: ToolCallFinished | ToolCallFailed | ToolCallSettled,
    context: PlanContext,
) -> PlannedSpan:
    opened = view.open_calls.get(body.call_id)
    name = opened.name if opened is not None else "unknown"
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": body.call_id,
        "gen_ai.tool.type": "function",
        "psych.run.id": view.run_id,
        "psych.seq": record.seq,
        "psych.attempt": record.attempt,
    }
    if opened is not None:
        attributes["psych.tool.starts"] = opened.starts
    if view.workflow:
        attributes["psych.step"] = step_name(body.call_id)
    error: str | None = None
    match body:
        case ToolCallFinished(result=result):
            attributes["psych.tool.outcome"] = "finished"
            if context.content:
                attributes["gen_ai.tool.call.result"] = json.dumps(result, ensure_ascii=False)
        case ToolCallFailed(reason=reason):
            attributes["psych.tool.outcome"] = "failed"
            error = reason
        case ToolCallSettled():
            attributes["psych.tool.outcome"] = "unknown"
    if context.content and body.call_id in view.arguments:
        attributes["gen_ai.tool.call.arguments"] = view.arguments[body.call_id]
    return PlannedSpan(
        name=f"execute_tool {name}",
        operation="execute_tool",
        trace_id=view.trace_id,
        span_id=span_id_of(view.run_id, f"call:{body.call_id}"),
        parent_id=span_id_of(view.run_id, "run"),
        start=opened.at if opened is not None else record.at,
        end=record.at,
        attributes=attributes,
        error=error,
        sampled=view.sampled,
    )


def _run(
    view: TraceView,
    record: Record,
    body: RunCompleted | RunFailed | RunCancelled,
    context: PlanContext,
) -> PlannedSpan:
    operation: Operation = "invoke_workflow" if view.workflow else "invoke_agent"
    status = {"run_completed": "completed", "run_failed": "failed"}.get(body.type, "cancelled")
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.agent.name": view.agent,
        "gen_ai.provider.name": context.provider,
        "psych.run.id": view.run_id,
        "psych.run.status": status,
        "psych.tenant": view.tenant,
        "psych.spec.version": view.spec_version,
        "psych.attempts": record.attempt,
    }
    if context.request_model is not None:
        attributes["gen_ai.request.model"] = context.request_model
    if context.content:
        if view.input is not None:
            attributes["gen_ai.input.messages"] = _text_message("user", view.input)
        if isinstance(body, RunCompleted):
            # An agent's answer is its last reply's text; a workflow's, its output value.
            output = body.output if body.output is not None else view.last_text
            if output is not None:
                text = output if isinstance(output, str) else json.dumps(output)
                attributes["gen_ai.output.messages"] = _text_message("assistant", text)
    error = body.reason if isinstance(body, RunFailed) else None
    if isinstance(body, RunCancelled):
        attributes["psych.cancel.reason"] = body.reason
    return PlannedSpan(
        name=f"{operation} {view.agent}",
        operation=operation,
        trace_id=view.trace_id,
        span_id=span_id_of(view.run_id, "run"),
        parent_id=view.parent_id,
        start=view.admitted_at or record.at,
        end=record.at,
        attributes=attributes,
        events=view.events,
        error=error,
        remote_parent=view.parent_id is not None,
        sampled=view.sampled,
    )


def _text_message(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

"""`OTelTelemetry`: the `Telemetry` port on OpenTelemetry's API.

Spans are what `psych_core.plan_batch` plans from each committed batch, emitted as they are
planned with the log's own times; nothing is kept open across awaits, so a crash loses at most
the spans of the batch it interrupted (and what the exporter had not sent yet). Between a
claim and the attempt's stop, the adapter keeps one `TraceView` per run (the run's events so
far and its open tool calls), folded from the log the worker read when it claimed the run.
"""

from __future__ import annotations

import datetime as dt
import logging

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider, get_meter
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TracerProvider,
)

from psych_core import (
    AgentSpec,
    Claimed,
    Committed,
    PlanContext,
    PlannedSpan,
    RunState,
    Stopped,
    Telemetry,
    TraceParent,
    TraceView,
    fold_view,
    plan_batch,
)
from psych_telemetry_otel._ids import RunSpanIds, pinned
from psych_telemetry_otel._metrics import Measures

log = logging.getLogger("psych_telemetry_otel")

SCOPE = "psych_telemetry_otel"
"""The instrumentation scope of every span and measure the adapter makes."""


class OTelTelemetry(Telemetry):
    """Traces and metrics of every run, in the OpenTelemetry GenAI conventions.

    ``Runtime(..., telemetry=OTelTelemetry())`` on the workers, and
    ``store.scoped(scope, telemetry=...)`` where the app dispatches (so a run joins the trace
    of the request that admitted it). One run is one trace: ``invoke_agent {agent}`` (or
    ``invoke_workflow {workflow}``) from admission to the run's end, with a ``chat {model}``
    span per model call, an ``execute_tool {tool}`` span per tool call, a child run's spans
    under the call that started it, and attempts, suspensions, waits, approvals and signals as
    events of the run's span. Each span is emitted by the process that commits its end.

    The tracer provider must give runs' spans their derived ids: with the OpenTelemetry SDK,
    ``TracerProvider(id_generator=RunSpanIds())`` (or ``OTEL_PYTHON_ID_GENERATOR=psych_run``).

    Args:
        tracer_provider: where spans go; the global one when None.
        meter_provider: where measures go; the global one when None.
        capture_content: whether spans carry what runs said (the input and output, each
            model reply, tool arguments and results; `psych_core.CONTENT_ATTRIBUTES`). Off by
            default; when on, the values are those recorded, after secret redaction.
        provider: the `gen_ai.provider.name` of the model; the model client's own when it
            names one (`OpenAIClient.provider`), else ``"unknown"``.

    Raises:
        ValueError: `tracer_provider` (or the global one) is the SDK's with another id
            generator: the message says how to configure it.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        provider: str | None = None,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._checked = False
        self._check_ids(tracer_provider or trace.get_tracer_provider())
        self._tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(SCOPE)
        self._measures = Measures(get_meter(SCOPE, meter_provider=meter_provider))
        self._content = capture_content
        self._provider = provider
        # Per run in hand, from its claim to its stop: the fold so far, and what the plans
        # need from the spec (made once per attempt, not per append).
        self._views: dict[str, TraceView] = {}
        self._contexts: dict[str, PlanContext] = {}
        self._stores: dict[str, dict[str, str]] = {}

    # -- the port ---------------------------------------------------------------------------

    def traceparent(self) -> str | None:
        """The current span's context as a W3C ``traceparent``; None outside any span."""
        current = trace.get_current_span().get_span_context()
        if not current.is_valid:
            return None
        sampled = bool(current.trace_flags & TraceFlags.SAMPLED)
        return str(TraceParent(current.trace_id, current.span_id, sampled))

    def claimed(self, claimed: Claimed) -> None:
        """Fold the log the attempt read; count the attempt and how long the run waited."""
        context = self._context(claimed.state, claimed.provider)
        empty = TraceView.empty(claimed.run_id)
        self._views[claimed.run_id] = fold_view(empty, claimed.log, context)
        self._contexts[claimed.run_id] = context
        store = self._store(claimed.store)
        self._measures.attempts.add(1, store)
        self._measures.claim_latency.record(claimed.waited, store)

    def committed(self, committed: Committed) -> None:
        """Emit the spans the batch ended; record the append's round trip."""
        self._measures.append_duration.record(committed.seconds, self._store(committed.store))
        run_id = committed.state.run_id
        view = self._views.get(run_id) or TraceView.empty(run_id)
        context = self._contexts.get(run_id) or self._context(committed.state, committed.provider)
        view, spans = plan_batch(view, committed.records, context)
        self._views[run_id] = view
        for span in spans:
            self._emit(span)
            self._measures.span(span)

    def stopped(self, stopped: Stopped) -> None:
        """Let go of the run's view; count a lost lease."""
        self._views.pop(stopped.run_id, None)
        self._contexts.pop(stopped.run_id, None)
        if stopped.lease_lost:
            self._measures.lease_losses.add(1)

    # -- spans ------------------------------------------------------------------------------

    def _store(self, name: str) -> dict[str, str]:
        attributes = self._stores.get(name)
        if attributes is None:
            attributes = self._stores[name] = {"psych.store": name}
        return attributes

    def _context(self, state: RunState, provider: str | None) -> PlanContext:
        spec = state.spec
        model = spec.model.model if isinstance(spec, AgentSpec) else None
        named = self._provider or provider or "unknown"
        return PlanContext(provider=named, request_model=model, content=self._content)

    def _emit(self, span: PlannedSpan) -> None:
        if not self._checked:
            self._check_ids(self._tracer_provider or trace.get_tracer_provider())
        parent = otel_context.Context()  # no ambient span: the log says who the parent is
        if span.parent_id is not None:
            flags = TraceFlags(TraceFlags.SAMPLED if span.sampled else TraceFlags.DEFAULT)
            parent_context = SpanContext(span.trace_id, span.parent_id, True, flags)
            parent = trace.set_span_in_context(NonRecordingSpan(parent_context), parent)
        kind = SpanKind.CLIENT if span.kind == "client" else SpanKind.INTERNAL
        with pinned(span.trace_id, span.span_id):
            emitted = self._tracer.start_span(
                span.name,
                context=parent,
                kind=kind,
                attributes=dict(span.attributes),
                start_time=_nanoseconds(span.start),
            )
        for event in span.events:
            emitted.add_event(event.name, dict(event.attributes), _nanoseconds(event.at))
        if span.error is not None:
            emitted.set_attribute("error.type", span.error)
            emitted.set_status(Status(StatusCode.ERROR, span.error))
        emitted.end(end_time=_nanoseconds(span.end))

    def _check_ids(self, provider: TracerProvider) -> None:
        generator = getattr(provider, "id_generator", None)
        if generator is None:
            return  # the API's proxy (no SDK yet) or a provider without one: checked at use
        self._checked = True
        if not isinstance(generator, RunSpanIds):
            raise ValueError(
                f"OTelTelemetry: the tracer provider's id generator is "
                f"{type(generator).__name__}; a run's spans are emitted by several processes "
                "and need ids derived from its log: build the provider with "
                "TracerProvider(id_generator=RunSpanIds()) (from psych_telemetry_otel), or set "
                "OTEL_PYTHON_ID_GENERATOR=psych_run"
            )


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _nanoseconds(at: dt.datetime) -> int:
    # Exact: records hold microseconds, which a float timestamp would round.
    return (at - _EPOCH) // dt.timedelta(microseconds=1) * 1_000

"""A run joins the trace of the request that dispatched it: a FastAPI app instrumented with
OpenTelemetry's FastAPI instrumentation dispatches with ``store.scoped(scope, telemetry=...)``,
and the run's own span, emitted later by a worker, hangs under the request's server span."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry import trace
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from pydantic import BaseModel

import psych_runtime
from psych_core import derived_trace_id
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Runtime, Scope, Worker
from psych_runtime.records import RunAdmitted
from psych_runtime.testing.fake_model import FakeModel
from psych_telemetry_otel import OTelTelemetry, RunSpanIds

pytestmark = pytest.mark.integration

SCOPE = Scope(tenant="web")
SPEC = AgentSpec(
    name="support",
    model=ModelRef(model="fake-standard"),
    tools=(CodeTool(name="lookup_order", safe_to_retry=True),),
)
CALLER_TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
CALLER_SPAN = 0x00F067AA0BA902B7


class RunRequest(BaseModel):
    """What the app's route takes."""

    text: str


class Admitted(BaseModel):
    """What the app's route answers: the run, and the span that was current in the handler."""

    run_id: str
    trace_id: str
    span_id: str


async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


@dataclass
class App:
    """The traced app, a client for it, and what its tracer provider exported."""

    client: httpx.AsyncClient
    store: MemoryStore
    exporter: InMemorySpanExporter
    telemetry: OTelTelemetry

    async def work(self) -> None:
        """A worker in this process, with the app's telemetry, serves every runnable run."""
        model = FakeModel()
        model.turn(text="Checking.", tool_calls=[("lookup_order", {"order_id": "A1"})])
        model.turn(text="A1 has shipped.")
        runtime = Runtime(model=model, tools=[lookup_order], telemetry=self.telemetry)
        await Worker(self.store, runtime, poll_interval=0.01).run_until_idle()

    def spans(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()


@pytest.fixture
async def app() -> AsyncIterator[App]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=RunSpanIds())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = OTelTelemetry(tracer_provider=provider)
    store = MemoryStore()
    web = FastAPI()

    @web.post("/runs")
    async def create(request: RunRequest) -> Admitted:
        current = trace.get_current_span().get_span_context()
        scoped = store.scoped(SCOPE, telemetry=telemetry)
        run_id = await psych_runtime.dispatch(scoped, SPEC, request.text)
        return Admitted(
            run_id=run_id, trace_id=f"{current.trace_id:032x}", span_id=f"{current.span_id:016x}"
        )

    FastAPIInstrumentor.instrument_app(web, tracer_provider=provider)
    transport = httpx.ASGITransport(app=web)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://app.test") as client:
            yield App(client, store, exporter, telemetry)
    finally:
        FastAPIInstrumentor.uninstrument_app(web)
        provider.shutdown()


def _server_span(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    (server,) = [span for span in spans if span.kind is SpanKind.SERVER]
    assert server.name == "POST /runs"
    return server


def _run_spans(spans: Sequence[ReadableSpan], run_id: str) -> list[ReadableSpan]:
    return [span for span in spans if (span.attributes or {}).get("psych.run.id") == run_id]


def _root(spans: Sequence[ReadableSpan], run_id: str) -> ReadableSpan:
    (root,) = [span for span in _run_spans(spans, run_id) if span.name == "invoke_agent support"]
    return root


async def _dispatch(app: App, headers: dict[str, str]) -> Admitted:
    response = await app.client.post("/runs", json={"text": "where is A1?"}, headers=headers)
    assert response.status_code == 200, response.text
    return Admitted.model_validate(response.json())


async def test_a_run_dispatched_in_a_traced_request_joins_the_request_trace(app: App) -> None:
    caller = f"00-{CALLER_TRACE:032x}-{CALLER_SPAN:016x}-01"
    admitted = await _dispatch(app, {"traceparent": caller})
    await app.work()

    spans = app.spans()
    server = _server_span(spans)
    assert server.context is not None and server.parent is not None
    # The instrumentation continued the caller's trace, and the handler ran in its span.
    assert (server.context.trace_id, server.parent.span_id) == (CALLER_TRACE, CALLER_SPAN)
    assert (admitted.trace_id, admitted.span_id) == (
        f"{CALLER_TRACE:032x}",
        f"{server.context.span_id:016x}",
    )

    # The run's span: in the request's trace, under the handler's span (the server span).
    root = _root(spans, admitted.run_id)
    assert root.context is not None and root.parent is not None
    assert root.context.trace_id == CALLER_TRACE
    assert root.parent.span_id == server.context.span_id
    assert root.parent.is_remote  # recorded in the log, not a span of this run
    assert root.start_time is not None and server.start_time is not None
    assert root.start_time >= server.start_time

    # Its model and tool calls hang under it, in the same trace.
    children = [span for span in _run_spans(spans, admitted.run_id) if span is not root]
    assert sorted(span.name for span in children) == [
        "chat fake-standard",
        "chat fake-standard",
        "execute_tool lookup_order",
    ]
    for span in children:
        assert span.context is not None and span.parent is not None
        assert span.context.trace_id == CALLER_TRACE
        assert span.parent.span_id == root.context.span_id

    # The log holds the trace the run joined: the server span's context.
    log = await psych_runtime.read_log(app.store.scoped(SCOPE), admitted.run_id)
    assert isinstance(log[0].body, RunAdmitted)
    assert log[0].body.traceparent == f"00-{CALLER_TRACE:032x}-{server.context.span_id:016x}-01"
    status = await psych_runtime.status(app.store.scoped(SCOPE), admitted.run_id)
    assert status.status == "completed"


async def test_a_request_without_a_traceparent_links_the_run_to_its_new_trace(app: App) -> None:
    admitted = await _dispatch(app, {})
    await app.work()

    spans = app.spans()
    server = _server_span(spans)
    assert server.context is not None
    assert server.parent is None  # the request started a trace of its own
    root = _root(spans, admitted.run_id)
    assert root.context is not None and root.parent is not None
    assert root.context.trace_id == server.context.trace_id
    assert root.context.trace_id != derived_trace_id(admitted.run_id)
    assert root.parent.span_id == server.context.span_id
    run_spans = _run_spans(spans, admitted.run_id)
    assert {span.context.trace_id for span in run_spans if span.context} == {
        server.context.trace_id
    }
    log = await psych_runtime.read_log(app.store.scoped(SCOPE), admitted.run_id)
    assert isinstance(log[0].body, RunAdmitted)
    expected = f"00-{server.context.trace_id:032x}-{server.context.span_id:016x}-01"
    assert log[0].body.traceparent == expected


async def test_a_run_dispatched_outside_any_request_starts_a_trace_of_its_own(app: App) -> None:
    # The same telemetry on the scoped store, but no span is current: nothing to join.
    scoped = app.store.scoped(SCOPE, telemetry=app.telemetry)
    run_id = await psych_runtime.dispatch(scoped, SPEC, "where is A1?")
    await app.work()

    log = await psych_runtime.read_log(scoped, run_id)
    assert isinstance(log[0].body, RunAdmitted)
    assert log[0].body.traceparent is None
    root = _root(app.spans(), run_id)
    assert root.context is not None
    assert root.parent is None
    assert root.context.trace_id == derived_trace_id(run_id)


async def test_a_caller_that_did_not_sample_leaves_the_run_unsampled(app: App) -> None:
    caller = f"00-{CALLER_TRACE:032x}-{CALLER_SPAN:016x}-00"
    admitted = await _dispatch(app, {"traceparent": caller})
    await app.work()

    # The sampling decision travels with the run: its spans are not recorded either.
    log = await psych_runtime.read_log(app.store.scoped(SCOPE), admitted.run_id)
    assert isinstance(log[0].body, RunAdmitted)
    recorded = log[0].body.traceparent
    assert recorded is not None and recorded.startswith(f"00-{CALLER_TRACE:032x}-")
    assert recorded.endswith("-00")
    assert admitted.trace_id == f"{CALLER_TRACE:032x}"
    assert log[-1].body.type == "run_completed"
    # Fails until psych_core/_spans.py gives a run's model and tool call spans the run's
    # sampled flag (`_chat` and `_tool` plan them with the default, sampled=True), so today
    # they are recorded, orphans under a run span that was not (see /tmp/notes/otel_tests.md).
    assert [span.name for span in app.spans()] == []

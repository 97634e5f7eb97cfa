"""OTelTelemetry passes the telemetry conformance suite, read back from the SDK's in-memory
exporter; and what is specific to OpenTelemetry: ids, the caller's trace, metrics."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import psych_runtime
import psych_telemetry_otel
from psych_runtime.ports import Stopped
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.testing.telemetry_contract import EmittedSpan, TelemetryContract
from psych_runtime.workflows import ForeachStep, Ref, ToolStep, WaitStep
from psych_telemetry_otel import OTelTelemetry, RunSpanIds


def emitted_span(span: ReadableSpan) -> EmittedSpan:
    """An SDK span in the suite's terms."""
    assert span.context is not None
    assert span.start_time is not None
    assert span.end_time is not None
    return EmittedSpan(
        name=span.name,
        trace_id=span.context.trace_id,
        span_id=span.context.span_id,
        parent_id=span.parent.span_id if span.parent is not None else None,
        start_ns=span.start_time,
        end_ns=span.end_time,
        attributes=dict(span.attributes or {}),
        events=tuple((event.name, dict(event.attributes or {})) for event in span.events),
        error=span.status.status_code is StatusCode.ERROR,
    )


class TestOTelTelemetry(TelemetryContract):
    @pytest.fixture(autouse=True)
    def _providers(self):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(id_generator=RunSpanIds())
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.metrics = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.metrics])
        yield
        self.provider.shutdown()
        self.meters.shutdown()

    def make_telemetry(self, *, capture_content: bool) -> OTelTelemetry:
        return OTelTelemetry(
            tracer_provider=self.provider,
            meter_provider=self.meters,
            capture_content=capture_content,
        )

    def emitted(self) -> list[EmittedSpan]:
        return [emitted_span(span) for span in self.exporter.get_finished_spans()]


class TestOpenTelemetrySpecifics:
    def test_a_provider_with_another_id_generator_is_refused_with_the_fix(self) -> None:
        with pytest.raises(ValueError, match=r"TracerProvider\(id_generator=RunSpanIds\(\)\)"):
            OTelTelemetry(tracer_provider=TracerProvider())

    def test_other_spans_get_the_fallbacks_ids(self) -> None:
        class Counting:
            def __init__(self) -> None:
                self.next = 0

            def generate_span_id(self) -> int:
                self.next += 1
                return self.next

            def generate_trace_id(self) -> int:
                return 77

        ids = RunSpanIds(Counting())
        assert [ids.generate_span_id(), ids.generate_span_id()] == [1, 2]
        assert ids.generate_trace_id() == 77
        random_ids = RunSpanIds()
        assert len({random_ids.generate_span_id() for _ in range(50)}) == 50

    def test_traceparent_is_the_current_spans(self) -> None:
        provider = TracerProvider(id_generator=RunSpanIds())
        telemetry = OTelTelemetry(tracer_provider=provider)
        assert telemetry.traceparent() is None
        with provider.get_tracer("app").start_as_current_span("POST /orders") as span:
            context = span.get_span_context()
            expected = f"00-{context.trace_id:032x}-{context.span_id:016x}-01"
            assert telemetry.traceparent() == expected
        provider.shutdown()

    async def test_measures_in_the_genai_conventions_and_psychs_own(self) -> None:
        suite = TestOTelTelemetry()
        suite.exporter = InMemorySpanExporter()
        suite.provider = TracerProvider(id_generator=RunSpanIds())
        suite.metrics = InMemoryMetricReader()
        suite.meters = MeterProvider(metric_readers=[suite.metrics])
        await suite._tool_run()
        telemetry = suite._telemetry
        telemetry.stopped(Stopped("01LOST", 3, None, "LeaseLost", lease_lost=True))
        data = suite.metrics.get_metrics_data()
        assert data is not None
        points = {
            metric.name: metric.data.data_points
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }
        assert set(points) >= {
            "gen_ai.client.token.usage",
            "gen_ai.client.operation.duration",
            "psych.tool.duration",
            "psych.runs.ended",
            "psych.attempts",
            "psych.lease.losses",
            "psych.claim.latency",
            "psych.store.append.duration",
        }
        tools = {
            dict(p.attributes or {})["psych.tool.outcome"] for p in points["psych.tool.duration"]
        }
        assert tools == {"finished", "failed", "unknown"}
        [ended] = points["psych.runs.ended"]
        assert isinstance(ended, NumberDataPoint)
        assert dict(ended.attributes or {}) == {
            "psych.run.status": "completed",
            "gen_ai.agent.name": "shop",
        }
        assert ended.value == 1
        appends = points["psych.store.append.duration"]
        stores = {dict(p.attributes or {})["psych.store"] for p in appends}
        assert stores == {"OffloadingStore"}
        suite.provider.shutdown()
        suite.meters.shutdown()


def _run_time_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:`` (imports for type checkers only)."""
    nodes: list[ast.AST] = []
    for statement in tree.body:
        if isinstance(statement, ast.If) and ast.unparse(statement.test) == "TYPE_CHECKING":
            nodes += [node for branch in statement.orelse for node in ast.walk(branch)]
            continue
        nodes += ast.walk(statement)
    return nodes


def test_the_adapter_imports_the_api_never_the_sdk() -> None:
    package = Path(psych_telemetry_otel.__file__).parent
    imported: set[str] = set()
    for module in package.glob("*.py"):
        for node in _run_time_nodes(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                imported.add(node.module)
    otel = {name for name in imported if name.startswith("opentelemetry")}
    assert otel
    assert [name for name in otel if name.startswith("opentelemetry.sdk")] == []


async def test_a_workflow_run_is_one_trace_with_its_steps() -> None:
    def charge(cents: int) -> str:
        """Charge an amount."""
        return f"charged {cents}"

    spec = psych_runtime.WorkflowSpec(
        name="checkout",
        steps=(
            ForeachStep(
                name="orders",
                items=Ref("input.orders"),
                steps=(
                    ToolStep(
                        name="charge",
                        tool=psych_runtime.CodeTool(name="charge"),
                        arguments={"cents": Ref("item")},
                    ),
                ),
            ),
            WaitStep(name="shipped", event="shipped"),
        ),
        output=Ref("steps.orders.output"),
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=RunSpanIds())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = OTelTelemetry(tracer_provider=provider)
    runtime = psych_runtime.Runtime(model=FakeModel(), tools=[charge], telemetry=telemetry)
    async with psych_runtime.session(runtime=runtime) as s:
        view = await s.ask(spec, json.dumps({"orders": [500, 250]}))
        await psych_runtime.send_event(s.store, view.run_id, "shipped", "post")
        view = await s.drive(view.run_id)
        assert view.status == "completed"
    spans = [emitted_span(span) for span in exporter.get_finished_spans()]
    [root] = [span for span in spans if span.parent_id is None]
    assert root.name == "invoke_workflow checkout"
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert "psych.steps.planned" in [name for name, _ in root.events]
    steps = [span for span in spans if span.name == "execute_tool charge"]
    assert [span.attributes["psych.step"] for span in steps] == ["charge", "charge"]
    assert {span.parent_id for span in steps} == {root.span_id}
    assert {span.trace_id for span in spans} == {root.trace_id}
    provider.shutdown()

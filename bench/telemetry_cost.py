"""What the OpenTelemetry adapter adds to a durable step, on against off, measured in one run.

    python -m bench.telemetry_cost --store memory|sqlite|postgres [--no-content]

The benchmark agent (`bench._agent`) makes ``--calls`` tool calls, one per model turn, then
answers: with 10 calls, 21 durable steps a run. One in-process worker drives ``--runs`` runs
one at a time under each configuration:

- ``off``: ``Runtime(telemetry=None)``, the default;
- ``on``: ``OTelTelemetry`` on the OpenTelemetry SDK, a ``TracerProvider(id_generator=
  RunSpanIds())`` sampling every span into a ``BatchSpanProcessor``, and a ``MeterProvider``
  whose reader (an in-memory one) aggregates every measure as it is recorded;
- ``content``: the same with ``capture_content=True`` (left out with ``--no-content``).

The spans go to an exporter that counts them and throws them away. What serialising and
sending them to a backend costs (OTLP's protobuf encoding, the HTTP request) is the
exporter's, paid on the batch processor's thread and chosen by the application, not the
adapter's: it is left out on purpose. What is measured is what the runtime and the adapter do
on the worker (the reports after each append, planning the spans from the records, the SDK
making, ending and queueing them, the measures) plus the batch processor's own work: the clock
stops after the tracer provider's ``force_flush``, so spans still queued are handed to the
exporter inside the measured window, and ``time.process_time`` (every thread of the process)
counts the CPU of that thread too.

The configurations are measured in alternating rounds (``--rounds``; the order rotates each
round so none always goes first), each on a fresh store, after one uncounted warm-up of each.
Per configuration, the time per step and the CPU per step are medians over the rounds; the
overhead and the ratio are medians of each round's difference and ratio against ``off`` in
the same round, so load from elsewhere on the machine moves both sides alike.

The benchmark stops with an error rather than report a measure of nothing: when the "on"
configurations exported no spans, fewer run spans than runs, or no measures, when a run did
not make the durable steps it should, or when the adapter failed a report. The last line is
machine-readable:

    store=NAME per_step_off_ms=X per_step_on_ms=Y overhead_ms=Z overhead_ratio=R
        cpu_us_off=A cpu_us_on=B spans_per_run=N
        [per_step_content_ms=C overhead_content_ms=D cpu_us_content=E]   (all on one line)

A server store reads its server from the environment (PSYCH_BENCH_POSTGRES_DSN, else
PSYCH_TEST_POSTGRES_DSN, else the one ``scripts/dev-services.sh start`` brings up); each
measure uses a fresh schema (or file), removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Sampler

from bench._agent import StepModel, admit_runs, step
from bench._arguments import positive
from bench._stores import bench_url, count_appends, discard, fresh_store
from psych_runtime import Runtime, Worker
from psych_telemetry_otel import OTelTelemetry, RunSpanIds

STORES = ("memory", "sqlite", "postgres")


@dataclass(frozen=True)
class Config:
    """One configuration of the worker's telemetry.

    Attributes:
        name: how the table and the machine-readable line call it.
        telemetry: whether the runtime is given an `OTelTelemetry`.
        capture_content: the adapter's option of that name.
        sampler: what the tracer provider samples: every span by default, the costliest case.
    """

    name: str
    telemetry: bool
    capture_content: bool = False
    sampler: Sampler = ALWAYS_ON


OFF = Config("off", telemetry=False)
ON = Config("on", telemetry=True)
CONTENT = Config("content", telemetry=True, capture_content=True)

LABELS = {"off": "telemetry off", "on": "OTelTelemetry", "content": "OTelTelemetry, content"}


class DiscardingExporter(SpanExporter):
    """Counts the spans it is handed and keeps none: the cost of a real exporter (encoding,
    sending) is the application's choice and is left out of the measure."""

    def __init__(self) -> None:
        self.spans = 0
        self.roots = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Count `spans` (and the runs' own spans among them, which have no parent)."""
        # Called on the batch processor's one thread; read only after its force_flush.
        self.spans += len(spans)
        self.roots += sum(1 for span in spans if span.parent is None)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release."""
        return


@dataclass
class Tracing:
    """The SDK's providers behind one `OTelTelemetry`, with what they exported."""

    telemetry: OTelTelemetry
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    exporter: DiscardingExporter = field(default_factory=DiscardingExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)

    def flush(self) -> None:
        """Hand every queued span to the exporter; fail if the processor could not."""
        if not self.tracer_provider.force_flush(timeout_millis=30_000):
            raise SystemExit("telemetry_cost: the batch span processor did not flush in 30 s")

    def measure_total(self, name: str) -> int:
        """The sum of the counter `name` over its points (0 when it recorded nothing)."""
        data = self.reader.get_metrics_data()
        total = 0
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points = metric.data.data_points
                        total += sum(
                            int(point.value)
                            for point in points
                            if isinstance(point, NumberDataPoint)
                        )
        return total


@contextlib.contextmanager
def tracing(config: Config) -> Iterator[Tracing | None]:
    """The providers and adapter for `config` (None when it has no telemetry), shut down on
    the way out."""
    if not config.telemetry:
        yield None
        return
    exporter = DiscardingExporter()
    reader = InMemoryMetricReader()
    # Shut down here, not at exit: each measure makes its own providers.
    tracer_provider = TracerProvider(
        sampler=config.sampler,
        id_generator=RunSpanIds(),
        shutdown_on_exit=False,
    )
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    telemetry = OTelTelemetry(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=config.capture_content,
    )
    try:
        yield Tracing(telemetry, tracer_provider, meter_provider, exporter, reader)
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


@dataclass(frozen=True)
class Measured:
    """One configuration's measure in one round.

    Attributes:
        ms_per_step: wall-clock milliseconds per durable step.
        cpu_us_per_step: CPU microseconds per durable step, every thread of the process.
        steps: the durable steps (appends) the runs made.
        spans: the spans exported (0 without telemetry).
    """

    ms_per_step: float
    cpu_us_per_step: float
    steps: int
    spans: int


async def measure(url: str, config: Config, runs: int, calls: int) -> Measured:
    """Drive `runs` runs of `calls` tool calls each, one at a time, under `config`."""
    async with fresh_store(url) as store:
        await admit_runs(store, runs, calls)
        stamps: list[float] = []
        count_appends(store, stamps)
        with tracing(config) as traced:
            telemetry = traced.telemetry if traced is not None else None
            runtime = Runtime(model=StepModel(calls), tools=[step], telemetry=telemetry)
            worker = Worker(store, runtime, poll_interval=0.01)
            # Garbage left by the previous measure is not this one's to collect.
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            await worker.run_until_idle()
            if traced is not None:
                traced.flush()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            spans = _check(config, traced, worker, runs, calls, len(stamps))
    steps = len(stamps)
    return Measured(wall * 1000 / steps, cpu * 1e6 / steps, steps, spans)


def _check(
    config: Config, traced: Tracing | None, worker: Worker, runs: int, calls: int, steps: int
) -> int:
    """The spans exported, after making sure the measure measured what it says."""
    # A run of the benchmark agent commits each model turn (with its call's start, or with
    # the run's end) and each tool result: 2 * calls + 1 appends.
    expected = runs * (2 * calls + 1)
    if steps != expected:
        raise SystemExit(
            f"telemetry_cost [{config.name}]: {runs} runs made {steps} durable steps, expected "
            f"{expected}: a run did not complete as the benchmark agent should; run "
            "bench.durable_steps on the same store to see whether the runtime or the "
            "telemetry is at fault"
        )
    if worker.telemetry_errors:
        raise SystemExit(
            f"telemetry_cost [{config.name}]: the telemetry adapter failed "
            f"{worker.telemetry_errors} report(s) (logged under psych_runtime.telemetry): "
            "the measure would be of its failures; fix the adapter first"
        )
    if traced is None:
        return 0
    exported = traced.exporter
    if exported.spans == 0:
        raise SystemExit(
            f"telemetry_cost [{config.name}]: {runs} runs exported no spans, so the benchmark "
            "would measure nothing: check that Runtime(telemetry=...) reaches the worker and "
            "that the tracer provider samples the runs' spans"
        )
    if exported.roots != runs:
        raise SystemExit(
            f"telemetry_cost [{config.name}]: {runs} runs exported {exported.roots} run spans "
            f"(of {exported.spans} spans): spans were lost (the batch processor drops what "
            "overflows its queue; lower --runs) or a run did not end"
        )
    attempts = traced.measure_total("psych.attempts")
    if attempts != runs:
        raise SystemExit(
            f"telemetry_cost [{config.name}]: {runs} runs recorded {attempts} attempts in the "
            "psych.attempts measure, expected one each: the measures are not being recorded"
        )
    return exported.spans


@dataclass(frozen=True)
class Compared:
    """Every configuration's measures, round by round, in the order of `configs`."""

    configs: tuple[Config, ...]
    rounds: list[dict[str, Measured]]

    def per_step_ms(self, name: str) -> float:
        """Median wall-clock milliseconds per step of configuration `name`."""
        return statistics.median(one[name].ms_per_step for one in self.rounds)

    def cpu_us(self, name: str) -> float:
        """Median CPU microseconds per step of configuration `name`."""
        return statistics.median(one[name].cpu_us_per_step for one in self.rounds)

    def overhead_ms(self, name: str) -> float:
        """Median over rounds of `name`'s milliseconds per step minus ``off``'s."""
        return statistics.median(
            one[name].ms_per_step - one[OFF.name].ms_per_step for one in self.rounds
        )

    def overhead_ratio(self, name: str) -> float:
        """Median over rounds of `name`'s time per step over ``off``'s."""
        return statistics.median(
            one[name].ms_per_step / one[OFF.name].ms_per_step for one in self.rounds
        )

    def steps_per_run(self, runs: int) -> float:
        """Durable steps per run (equal in every measure: `measure` checks it)."""
        return self.rounds[0][OFF.name].steps / runs

    def spans_per_run(self, name: str, runs: int) -> float:
        """Median spans exported per run by configuration `name`."""
        return statistics.median(one[name].spans for one in self.rounds) / runs


async def compare(
    store: str, configs: Sequence[Config], rounds: int, runs: int, calls: int, workdir: Path
) -> Compared:
    """Measure `configs` (``off`` first among them) in `rounds` alternating rounds."""
    if not configs or configs[0] != OFF:
        raise ValueError("compare: the configurations must start with OFF, the baseline")
    urls: list[str] = []

    async def one(config: Config, label: str, round_runs: int) -> Measured:
        urls.append(bench_url(store, f"{config.name}_{label}", workdir))
        return await measure(urls[-1], config, round_runs, calls)

    measured: list[dict[str, Measured]] = []
    try:
        # One small uncounted pass of each: imports, first compilations and caches are paid
        # before any configuration is timed.
        for config in configs:
            await one(config, "warm", min(runs, 2))
        for index in range(rounds):
            # Rotate the order so no configuration always runs first (or right after another).
            shift = index % len(configs)
            order = [*configs[shift:], *configs[:shift]]
            measured.append({c.name: await one(c, f"r{index}", runs) for c in order})
    finally:
        for url in urls:
            await discard(url)
    return Compared(tuple(configs), measured)


def report(compared: Compared, store: str, runs: int) -> list[str]:
    """The table and, last, the machine-readable line."""
    header = ("configuration", "ms/step", "cpu us/step", "+ms/step", "ratio", "spans/run")
    rows = [header]
    for config in compared.configs:
        name = config.name
        baseline = name == OFF.name
        rows.append(
            (
                LABELS.get(name, name),
                f"{compared.per_step_ms(name):.4f}",
                f"{compared.cpu_us(name):.1f}",
                "" if baseline else f"{compared.overhead_ms(name):.4f}",
                "" if baseline else f"{compared.overhead_ratio(name):.3f}",
                "" if baseline else f"{compared.spans_per_run(name, runs):.0f}",
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    lines.append(
        f"rounds={len(compared.rounds)} runs={runs} per measure, "
        f"{compared.steps_per_run(runs):.0f} durable steps a run"
    )
    line = (
        f"store={store} per_step_off_ms={compared.per_step_ms(OFF.name):.4f} "
        f"per_step_on_ms={compared.per_step_ms(ON.name):.4f} "
        f"overhead_ms={compared.overhead_ms(ON.name):.4f} "
        f"overhead_ratio={compared.overhead_ratio(ON.name):.3f} "
        f"cpu_us_off={compared.cpu_us(OFF.name):.1f} cpu_us_on={compared.cpu_us(ON.name):.1f} "
        f"spans_per_run={compared.spans_per_run(ON.name, runs):.0f}"
    )
    if CONTENT in compared.configs:
        line += (
            f" per_step_content_ms={compared.per_step_ms(CONTENT.name):.4f}"
            f" overhead_content_ms={compared.overhead_ms(CONTENT.name):.4f}"
            f" cpu_us_content={compared.cpu_us(CONTENT.name):.1f}"
        )
    lines.append(line)
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--store", choices=STORES, required=True)
    parser.add_argument("--rounds", type=positive, default=7, help="alternating rounds")
    parser.add_argument("--runs", type=positive, default=20, help="runs per configuration a round")
    parser.add_argument("--calls", type=positive, default=10, help="tool calls per run")
    parser.add_argument("--no-content", action="store_true", help="leave out capture_content=True")
    args = parser.parse_args()
    configs = (OFF, ON) if args.no_content else (OFF, ON, CONTENT)
    with tempfile.TemporaryDirectory() as folder:
        compared = await compare(
            args.store, configs, args.rounds, args.runs, args.calls, Path(folder)
        )
    for line in report(compared, args.store, args.runs):
        print(line)


if __name__ == "__main__":
    asyncio.run(main())

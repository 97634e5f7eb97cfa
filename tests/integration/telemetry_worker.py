"""A worker process that exports its runs' spans over OTLP/HTTP, for the telemetry tests.

Run as ``python -m tests.integration.telemetry_worker STORE_URL ENDPOINT NAME FOLDER COMPRESSION``:
a `psych_runtime.Worker` on the store at STORE_URL whose `Runtime.telemetry` is an
`OTelTelemetry` on the OpenTelemetry SDK, exporting to ENDPOINT (a receiver's
``http://127.0.0.1:PORT/v1/traces``) with COMPRESSION ``gzip`` or ``none``. NAME is the
resource's ``service.instance.id`` and the start of the worker's id, so a test can tell which
process emitted each span. Tools note their effects in FOLDER.

Spans go out through a `SimpleSpanProcessor`: each is sent when it ends, before the worker
goes on, so what a process emitted before a SIGKILL has reached the receiver.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope, ToolContext, ToolFunction, Usage
from psych_runtime.ports import AssistantMessage, ModelRequest, ModelResponse, ModelToolCall
from psych_telemetry_otel import OTelTelemetry, RunSpanIds
from tests.integration._stores import open_store

SCOPE = Scope(tenant="traced")

HELD = AgentSpec(
    name="held-call",
    model=ModelRef(model="scripted"),
    tools=(CodeTool(name="hold"),),  # not safe to retry: a crash mid-call settles it unknown
    max_turns=4,
)
"""Calls `hold`, which blocks until the test kills the process."""

REFUNDS = AgentSpec(
    name="refunds",
    model=ModelRef(model="scripted"),
    tools=(CodeTool(name="refund", requires_approval=True),),
    max_turns=4,
)
"""Asks for one refund, which waits for a person's approval."""

_ARGUMENTS: dict[str, dict[str, object]] = {
    "hold": {"label": "h1"},
    "refund": {"order_id": "A1", "amount": 120},
}

HOLD_SECONDS = 120.0
"""How long `hold` blocks: a bound, should a test leave the process behind."""


class OfferedToolModel:
    """Turn 0 calls the one tool the spec offers; after any result it answers. Decided from
    the request alone, so any process can serve any turn of any run."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if any(isinstance(message, AssistantMessage) for message in request.messages):
            return ModelResponse(
                model="scripted",
                text="done",
                usage=Usage(input=3, output=1),
                usage_source="provider",
            )
        (tool,) = request.tools
        call = ModelToolCall(name=tool.name, arguments=json.dumps(_ARGUMENTS[tool.name]))
        return ModelResponse(
            model="scripted",
            tool_calls=(call,),
            usage=Usage(input=2, output=1),
            usage_source="provider",
        )


def _note(folder: Path, kind: str, ctx: ToolContext) -> None:
    with open(folder / f"{kind}.txt", "a", encoding="utf-8") as ledger:
        ledger.write(f"{ctx.idempotency_key} {ctx.attempt} {os.getpid()}\n")
        ledger.flush()
        os.fsync(ledger.fileno())


def tools(folder: Path) -> list[ToolFunction]:
    """The worker's tools, noting each effect in `folder`."""

    async def hold(label: str, ctx: ToolContext) -> str:
        """Hold on: the test kills the process while this runs."""
        _note(folder, "held", ctx)
        await asyncio.sleep(HOLD_SECONDS)
        return f"held {label}"

    def refund(order_id: str, amount: int, ctx: ToolContext) -> str:
        """Refund an order."""
        _note(folder, "refunds", ctx)
        return f"refunded {amount} on {order_id}"

    return [hold, refund]


def tracer_provider(endpoint: str, name: str, compression: str) -> TracerProvider:
    """The SDK's tracer provider with run-derived ids, sending each span as it ends."""
    resource = Resource.create(
        {"service.name": "psych-telemetry-test", "service.instance.id": name}
    )
    provider = TracerProvider(id_generator=RunSpanIds(), resource=resource)
    exporter = OTLPSpanExporter(
        endpoint=endpoint,
        compression=Compression.Gzip if compression == "gzip" else Compression.NoCompression,
        timeout=10,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


async def main(url: str, endpoint: str, name: str, folder: str, compression: str) -> None:
    provider = tracer_provider(endpoint, name, compression)
    store = open_store(url)
    await store.migrate()
    worker = psych_runtime.Worker(
        store,
        psych_runtime.Runtime(
            model=OfferedToolModel(),
            tools=tools(Path(folder)),
            leases=psych_runtime.Leases(ttl=dt.timedelta(seconds=1.5), max_attempts=20),
            telemetry=OTelTelemetry(tracer_provider=provider),
        ),
        poll_interval=0.05,
        worker_id=f"{name}:{os.getpid()}",
    )
    try:
        await worker.run()  # until SIGTERM
    finally:
        await store.close()
        provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))

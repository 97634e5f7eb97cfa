"""An OTLP/HTTP trace receiver on loopback, for tests whose worker processes export spans.

``with receiving() as receiver:`` serves ``POST {receiver.endpoint}`` (``/v1/traces``) on
127.0.0.1 at a port of its own, decodes each payload as OpenTelemetry's exporter sends it
(protobuf, gzip-compressed or not) and keeps its spans, flattened, for assertions. It answers
as a collector does (an empty ``ExportTraceServiceResponse``), so the exporter never retries.
Anything it cannot decode is answered 400 and kept in `errors`, for the test to fail on.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

PATH = "/v1/traces"

Value = str | bool | int | float | bytes | tuple[object, ...] | None


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """A span event as it arrived."""

    name: str
    at: int
    attributes: Mapping[str, Value]


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """A span as it arrived: ids in lowercase hex, times in nanoseconds since the epoch, `kind`
    OTLP's number (``Span.SPAN_KIND_INTERNAL``, ``..._CLIENT``, ...), `resource` the attributes
    of the process that sent it, `compressed` whether its request came gzip-compressed."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start: int
    end: int
    attributes: Mapping[str, Value]
    events: tuple[ReceivedEvent, ...]
    resource: Mapping[str, Value]
    scope: str
    compressed: bool

    def events_named(self, name: str) -> list[ReceivedEvent]:
        """The span's events called `name`, in the order they were added."""
        return [event for event in self.events if event.name == name]


@dataclass
class Receiver:
    """What the receiver has taken in so far; safe to read from any thread."""

    endpoint: str = ""
    _spans: list[ReceivedSpan] = field(default_factory=list)
    _errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[ReceivedSpan]:
        """Every span received, in the order the requests came."""
        with self._lock:
            return list(self._spans)

    @property
    def errors(self) -> list[str]:
        """Why each refused request was refused."""
        with self._lock:
            return list(self._errors)

    async def wait_for(
        self,
        ready: Callable[[list[ReceivedSpan]], bool],
        what: str,
        seconds: float = 30,
    ) -> list[ReceivedSpan]:
        """The spans once `ready(spans)` holds; AssertionError naming `what` after `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            spans = self.spans()
            if ready(spans):
                return spans
            assert not self.errors, f"the receiver refused a request: {self.errors}"
            if time.monotonic() > deadline:
                names = [(span.name, span.span_id) for span in spans]
                raise AssertionError(f"{what} did not arrive within {seconds:g} s; got {names}")
            await asyncio.sleep(0.05)

    def _took(self, spans: list[ReceivedSpan]) -> None:
        with self._lock:
            self._spans.extend(spans)

    def _refused(self, why: str) -> None:
        with self._lock:
            self._errors.append(why)


def _value(value: AnyValue) -> Value:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return tuple((kv.key, _value(kv.value)) for kv in value.kvlist_value.values)
    found: Value = getattr(value, kind)
    return found


def _attributes(pairs: Iterable[KeyValue]) -> dict[str, Value]:
    return {pair.key: _value(pair.value) for pair in pairs}


def decode(payload: bytes, *, compressed: bool) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest``, flattened with their resource."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(payload)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                events = tuple(
                    ReceivedEvent(event.name, event.time_unix_nano, _attributes(event.attributes))
                    for event in span.events
                )
                spans.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        # An empty parent id is a root span (OTLP's encoding of "none").
                        parent_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        kind=span.kind,
                        start=span.start_time_unix_nano,
                        end=span.end_time_unix_nano,
                        attributes=_attributes(span.attributes),
                        events=events,
                        resource=resource,
                        scope=scope_spans.scope.name,
                        compressed=compressed,
                    )
                )
    return spans


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: every connection closes after its answer, so no handler thread outlives
        # the exporter's request and shutdown has nothing left to wait for.

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path != PATH:
                self._answer(404, b"", "text/plain")
                return
            compressed = self.headers.get("Content-Encoding", "").lower() == "gzip"
            try:
                spans = decode(gzip.decompress(body) if compressed else body, compressed=compressed)
            except Exception as exc:  # protobuf's DecodeError, gzip's errors: refused alike
                receiver._refused(f"{self.headers.get('Content-Type')}: {exc!r}")
                self._answer(400, b"", "text/plain")
                return
            receiver._took(spans)
            self._answer(200, ExportTraceServiceResponse().SerializeToString())

        def _answer(
            self, status: int, body: bytes, content_type: str = "application/x-protobuf"
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # the test's output is for its assertions

    return Handler


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver serving on 127.0.0.1 (an ephemeral port) until the block ends."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    host, port = server.server_address[:2]
    receiver.endpoint = f"http://{host!s}:{port}{PATH}"
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    serving.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        serving.join(timeout=10)
        server.server_close()

"""`RunSpanIds`: span ids derived from each run's log, for the OpenTelemetry SDK.

A run's spans are emitted by whichever process commits their ends: the run's own span by the
one that commits its last record, perhaps days and workers after the first. For them to form
one tree, a span's id must be known before it is emitted, and the same in every process: it is
derived from the run and what the span is (`psych_core.span_id_of`). The SDK draws ids from its
tracer provider's id generator, so that generator must hand out the derived id while
`OTelTelemetry` starts a span, and behave exactly as before for every other span.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # For type checkers only: `TracerProvider(id_generator=...)` is typed with the SDK's base
    # class. At run time the adapter needs the API alone, and the SDK calls its id generator
    # by its methods, never by its class.
    from opentelemetry.sdk.trace.id_generator import IdGenerator as _SdkIdGenerator
else:
    _SdkIdGenerator = object

_pinned: ContextVar[tuple[int, int] | None] = ContextVar("psych_span_ids", default=None)


class IdGenerator(Protocol):
    """What the OpenTelemetry SDK asks of an id generator."""

    def generate_span_id(self) -> int: ...

    def generate_trace_id(self) -> int: ...


class RunSpanIds(_SdkIdGenerator):
    """An id generator for the OpenTelemetry SDK's tracer provider.

    ``TracerProvider(id_generator=RunSpanIds())``, or ``OTEL_PYTHON_ID_GENERATOR=psych_run``
    with OpenTelemetry's automatic configuration. While `OTelTelemetry` emits a run's span it
    gives that span its derived id (and, for a run's own span with no caller, the run's
    derived trace id); every other span gets what `fallback` gives (random ids, as the SDK's
    default, when None).
    """

    def __init__(self, fallback: IdGenerator | None = None) -> None:
        self._fallback = fallback

    def generate_span_id(self) -> int:
        """The pinned span id while a run's span starts, else the fallback's."""
        pinned = _pinned.get()
        if pinned is not None:
            return pinned[1]
        if self._fallback is not None:
            return self._fallback.generate_span_id()
        return random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        """The pinned trace id while a run's span starts, else the fallback's."""
        pinned = _pinned.get()
        if pinned is not None:
            return pinned[0]
        if self._fallback is not None:
            return self._fallback.generate_trace_id()
        return random.getrandbits(128) or 1

    def is_trace_id_random(self) -> bool:
        """Whether trace ids are uniformly random: derived ones are hashes, not declared so."""
        return False


@contextmanager
def pinned(trace_id: int, span_id: int) -> Iterator[None]:
    """While the block runs, `RunSpanIds` gives out these ids."""
    token = _pinned.set((trace_id, span_id))
    try:
        yield
    finally:
        _pinned.reset(token)

"""A run's place in a distributed trace: fixed at admission, derived from the log everywhere.

One run is one trace, whichever workers carry it and however long it waits. Its trace id is
the caller's (the W3C ``traceparent`` that `dispatch` found in a traced request, recorded in
`RunAdmitted.traceparent`) or, when the run was admitted outside any trace, derived from the
run id. Every span of the run gets an id derived from the run and what the span is (the run
itself, the model call at a seq, the tool call with an id), so the process that ends a span
needs nothing from the process that began it, and a child run's admission can name its
parent's tool span before that span is emitted.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


@dataclass(frozen=True, slots=True)
class TraceParent:
    """A W3C trace context: the trace, the span that is the parent, and whether it is sampled.

    Attributes:
        trace_id: 128-bit trace id, never zero.
        span_id: 64-bit id of the parent span, never zero.
        sampled: the sampled flag the caller's context carried.
    """

    trace_id: int
    span_id: int
    sampled: bool = True

    def __str__(self) -> str:
        flags = "01" if self.sampled else "00"
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{flags}"


def parse_traceparent(text: str | None) -> TraceParent | None:
    """The trace context in a W3C ``traceparent`` header value; None when `text` is None or
    not a valid one (a malformed header starts no trace, as the W3C recommendation says)."""
    if text is None:
        return None
    found = _TRACEPARENT.match(text.strip().lower())
    if found is None or found.group(1) == "ff":
        return None
    trace_id, span_id = int(found.group(2), 16), int(found.group(3), 16)
    if trace_id == 0 or span_id == 0:
        return None
    return TraceParent(trace_id, span_id, sampled=bool(int(found.group(4), 16) & 1))


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big")
    return value or 1  # zero is the invalid id in W3C trace context


def derived_trace_id(run_id: str) -> int:
    """The trace id of a run admitted outside any trace: derived from its id."""
    return _digest(f"psych-trace/{run_id}", 16)


def span_id_of(run_id: str, what: str) -> int:
    """The id of a span of run `run_id`: ``"run"`` for the run itself, ``"seq:N"`` for the
    model call (or compaction) recorded at seq N, ``"call:ID"`` for the tool call ID."""
    return _digest(f"psych-span/{run_id}/{what}", 8)


def run_trace_id(run_id: str, traceparent: str | None) -> int:
    """The trace id of a run: its recorded caller's, else the one derived from its id."""
    parent = parse_traceparent(traceparent)
    return parent.trace_id if parent is not None else derived_trace_id(run_id)


def child_traceparent(parent_run_id: str, parent_traceparent: str | None, call_id: str) -> str:
    """The trace context a child run is admitted with: its parent's trace, under the span of
    the call that started it (`span_id_of(parent, "call:ID")`)."""
    trace_id = run_trace_id(parent_run_id, parent_traceparent)
    return str(TraceParent(trace_id, span_id_of(parent_run_id, f"call:{call_id}")))

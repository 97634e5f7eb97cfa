"""When to ask a model again: which answers are worth retrying, and how long to wait."""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from collections.abc import Mapping
from dataclasses import dataclass

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
"""Statuses below 500 worth retrying: timeouts, conflicts, too early, rate limits."""


def retryable_status(status: int) -> bool:
    """Whether an HTTP error status may go away if the request is sent again."""
    return status in RETRYABLE_STATUSES or status >= 500


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter.

    The n-th retry waits a random time between half and all of
    ``min(initial * 2 ** (n - 1), maximum)`` seconds, unless the server said how long to wait
    (``Retry-After``), which is honoured as long as it is at most `max_retry_after`.
    """

    initial: float = 0.5
    maximum: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, retry: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `retry` (1, 2, ...); None: do not wait that long."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        cap = min(self.initial * 2.0 ** (retry - 1), self.maximum)
        return cap / 2 + random.uniform(0, cap / 2)


UPSTREAM_PREFIX = "llm_provider-"
"""How LiteLLM passes on the headers of the provider behind it (``llm_provider-retry-after``)."""


def retry_after(headers: Mapping[str, str], now: dt.datetime | None = None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, then ``Retry-After`` (seconds or
    an HTTP date); when the server is a gateway that said neither itself, the same headers of
    the provider behind it as it passes them on (``llm_provider-retry-after-ms``, then
    ``llm_provider-retry-after``). None when nobody said, or said something unreadable."""
    for prefix in ("", UPSTREAM_PREFIX):
        wait = _said(headers, prefix, now)
        if wait is not None:
            return wait
    return None


def _said(headers: Mapping[str, str], prefix: str, now: dt.datetime | None) -> float | None:
    millis = headers.get(f"{prefix}retry-after-ms")
    if millis is not None:
        try:
            return _seconds(float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get(f"{prefix}retry-after")
    if value is None:
        return None
    try:
        return _seconds(float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    now = now or dt.datetime.now(dt.UTC)
    return max((when - now).total_seconds(), 0.0)


def _seconds(value: float) -> float:
    if value != value:  # NaN: not a wait anyone meant
        raise ValueError("not a number")
    return max(value, 0.0)

"""`TelemetryFeed`: how the runtime reports to `Runtime.telemetry` without ever failing a run.

One feed per worker or session. Each report is built only when an adapter is configured (the
default costs one attribute check per append), and an adapter that raises is counted and
logged under ``psych_runtime.telemetry`` (the first error of each kind, then every hundredth),
never let through to the attempt.
"""

from __future__ import annotations

import logging
from collections import Counter

from psych_core import (
    Claimed,
    Committed,
    ModelClient,
    NoTelemetry,
    Stopped,
    Telemetry,
    parse_traceparent,
)

log = logging.getLogger("psych_runtime.telemetry")

_LOG_EVERY = 100


class TelemetryFeed:
    """Reports to one `Telemetry` adapter, or to none (`active` is False).

    `provider` is the model client's provider when it names one (`OpenAIChatClient.provider`),
    read once: every report carries it.
    """

    def __init__(self, telemetry: Telemetry | None, *, provider: str | None = None) -> None:
        self.telemetry = telemetry
        self.provider = provider
        self.active = telemetry is not None and not isinstance(telemetry, NoTelemetry)
        self.errors: Counter[str] = Counter()

    @classmethod
    def of(cls, telemetry: Telemetry | None, model: ModelClient) -> TelemetryFeed:
        """The feed of a worker or session whose runs call `model`."""
        return cls(telemetry, provider=getattr(model, "provider", None))

    def traceparent(self) -> str | None:
        """The caller's trace context, normalised; None when there is none, and when the
        adapter failed to say or said something that is not a W3C ``traceparent``."""
        if not self.active:
            return None
        assert self.telemetry is not None
        try:
            text = self.telemetry.traceparent()
            parsed = parse_traceparent(text)
            if text is not None and parsed is None:
                raise ValueError(f"{text!r} is not a W3C traceparent")
        except Exception as exc:
            self._failed("traceparent", exc)
            return None
        return str(parsed) if parsed is not None else None

    def claimed(self, claimed: Claimed) -> None:
        """Report an attempt's claim."""
        self._report("claimed", claimed)

    def committed(self, committed: Committed) -> None:
        """Report a confirmed append."""
        self._report("committed", committed)

    def stopped(self, stopped: Stopped) -> None:
        """Report how an attempt stopped."""
        self._report("stopped", stopped)

    def _report(self, method: str, report: Claimed | Committed | Stopped) -> None:
        if not self.active:
            return
        try:
            getattr(self.telemetry, method)(report)
        except Exception as exc:
            self._failed(method, exc)

    def _failed(self, method: str, exc: Exception) -> None:
        self.errors[method] += 1
        count = self.errors[method]
        if count == 1 or count % _LOG_EVERY == 0:
            log.warning(
                "telemetry adapter %s failed in %s (%d time(s) so far); the run goes on: %r",
                type(self.telemetry).__name__,
                method,
                count,
                exc,
                exc_info=count == 1,
            )

"""Where the runtime reads the time. Core never does; everything it needs is passed in."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


class Clock(Protocol):
    """Tells the current time, in UTC."""

    def now(self) -> dt.datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> dt.datetime:
        """The current time, timezone-aware, in UTC."""
        return dt.datetime.now(dt.UTC)

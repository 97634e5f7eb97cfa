"""Times as the database keeps them: integer microseconds since the Unix epoch, UTC.

Integers compare exactly and index well; ``runnable_at`` of a run claimable at once is the
smallest datetime (year 1), which plays the part of ``-infinity``.
"""

from __future__ import annotations

import datetime as dt
import time

from psych_core.ports import check_ttl

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
ONE_MICROSECOND = dt.timedelta(microseconds=1)

NEVER_BEFORE = dt.datetime.min.replace(tzinfo=dt.UTC)
"""``runnable_at`` of a run that is claimable at once."""


def now_micros() -> int:
    """The host's clock. Every process on the host reads the same one (one host only)."""
    return time.time_ns() // 1000


def to_micros(at: dt.datetime, what: str = "time") -> int:
    """`at` as microseconds since the epoch; `at` must be timezone-aware."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"{what} {at.isoformat()} has no timezone: pass an aware UTC datetime")
    return (at - EPOCH) // ONE_MICROSECOND


def from_micros(micros: int) -> dt.datetime:
    """Microseconds since the epoch as an aware UTC datetime."""
    return EPOCH + dt.timedelta(microseconds=micros)


def ttl_micros(ttl: dt.timedelta) -> int:
    """A lease duration in microseconds; it must be positive (`check_ttl`)."""
    return check_ttl(ttl) // ONE_MICROSECOND


NEVER_BEFORE_MICROS = to_micros(NEVER_BEFORE)

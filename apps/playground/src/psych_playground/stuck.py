"""The stuck rule: which runs that have not ended are not getting anywhere. Pure.

A run is stuck when

- it was claimed 3 times or more since it last suspended, and has not ended (``attempts``):
  each attempt stopped (a crash, a lease that expired) before the run did; or
- it has made no progress for longer than a lease (``no_progress``): its attempt's lease has
  expired with no new record (the worker died, or is cut off from the store), or it has waited
  to be claimed for longer than a lease (no worker is running, or none can serve it).

A run that waits for a person (an approval, an answer) or for its due time is not stuck: it is
waiting, as it should. It becomes stuck only once its due time has passed and no worker has
taken it for longer than a lease.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel

from psych_runtime.ports import RunRow

STUCK_CLAIMS = 3
"""Claims since a run last suspended, from which it counts as stuck."""

FINAL = frozenset({"completed", "failed", "cancelled"})


class Stuck(BaseModel):
    """Why a run counts as stuck, in words an operator can act on."""

    reason: Literal["attempts", "no_progress"]
    detail: str


def stuck(row: RunRow, now: dt.datetime, lease: dt.timedelta) -> Stuck | None:
    """Why the run `row` describes is stuck at `now`, or None when it is not."""
    if row.status in FINAL:
        return None
    if row.claims >= STUCK_CLAIMS:
        return Stuck(
            reason="attempts",
            detail=(
                f"run {row.run_id} was claimed {row.claims} times (attempt {row.attempt}) without "
                "suspending or ending: each attempt stopped before the run did; read its log to "
                "see where"
            ),
        )
    if row.status == "running" and row.lease_expires_at is not None:
        if now > row.lease_expires_at:
            return Stuck(
                reason="no_progress",
                detail=(
                    f"the lease of attempt {row.attempt} of run {row.run_id} expired at "
                    f"{row.lease_expires_at.isoformat()} with no new record: its worker stopped "
                    "or cannot reach the store"
                ),
            )
        return None
    since = _claimable_since(row)
    if since is None:
        return None
    idle = now - since
    if idle > lease:
        return Stuck(
            reason="no_progress",
            detail=(
                f"run {row.run_id} is {row.status} and no worker has taken it for "
                f"{idle.total_seconds():.0f} s (longer than a lease, {lease.total_seconds():.0f} "
                "s): is a worker running, with the tools its spec names?"
            ),
        )
    return None


def _claimable_since(row: RunRow) -> dt.datetime | None:
    """Since when the run could have been claimed, or None when that is not known or not so.

    A queued run is claimable from its last change, or from its due time when a worker that
    could not serve it released it for later. A waiting run is claimable once its due time
    has passed; one woken by a signal is claimable at once, but the store does not say since
    when, so it is never counted as stuck here (a worker takes it within its poll interval).
    """
    at_once = row.runnable_at is None or row.runnable_at.year < 2  # "-infinity"
    if row.status == "queued":
        if at_once or row.runnable_at is None:
            return row.updated_at
        return max(row.updated_at, row.runnable_at)
    if row.status == "waiting" and not at_once and row.runnable_at is not None:
        return row.runnable_at
    return None

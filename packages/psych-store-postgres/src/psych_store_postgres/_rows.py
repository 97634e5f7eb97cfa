"""Rows as the database returns them, turned into the core's values, and values checked on the
way in."""

from __future__ import annotations

import datetime as dt

import asyncpg
from pydantic import TypeAdapter

from psych_core import InboxEntry, RunRow, Signal
from psych_core.ports import run_row_of

NEVER_BEFORE = dt.datetime.min.replace(tzinfo=dt.UTC)
"""``runnable_at`` of a run claimable at once: PostgreSQL's ``'-infinity'``."""

SIGNAL = TypeAdapter[Signal](Signal)


def aware(at: dt.datetime) -> dt.datetime:
    """A ``timestamptz`` from asyncpg as an aware UTC datetime.

    asyncpg returns finite values in UTC, and the infinities as naive ``datetime.min`` and
    ``datetime.max``; those become aware too, so every time a caller sees compares.
    """
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)


def check_aware(at: dt.datetime, what: str) -> dt.datetime:
    """`at`, which must carry a timezone (the store keeps UTC instants)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"{what} {at.isoformat()} has no timezone: pass an aware UTC datetime")
    return at


def run_row(row: asyncpg.Record) -> RunRow:
    """A row of `_sql.RUN_COLUMNS` (the creation number, then the run row) as a `RunRow`."""
    return run_row_of(row[1:], time=aware)


def inbox_entry(run_id: str, row: asyncpg.Record) -> InboxEntry:
    """A row of the inbox (number, key, body, at) as an `InboxEntry`."""
    return InboxEntry(
        run_id=run_id,
        number=row["number"],
        key=row["key"],
        signal=SIGNAL.validate_json(row["body"]),
        at=aware(row["at"]),
    )


def signal_json(signal: Signal) -> bytes:
    """A signal's JSON, as the inbox keeps it."""
    return SIGNAL.dump_json(signal)

"""The inbox: signals written into a run's inbox, by `signal` or by another run's append, and
read back in number order.

An entry's number is the run row's ``inbox_last`` plus one, set in the same ``BEGIN IMMEDIATE``
transaction as the entry, so numbers follow commit order with no gap. A key is single-use for
the life of the run (a unique index on ``(run_id, key)``). A run that is waiting is woken: it is
claimable at once. A run that has ended takes only a signal that `accepted_after_end`, until its
inbox holds the `Continued` mark; checked and written in the same transaction, so a message
racing the mark is numbered before it or refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from psych_core import (
    CONTINUED_KEY,
    FINAL_STATUSES,
    DuplicateSignal,
    InboxEntry,
    Notify,
    RunFinished,
    RunNotFound,
    Signal,
    accepted_after_end,
)
from psych_store_sqlite._time import NEVER_BEFORE_MICROS, from_micros, now_micros

_ADD_ENTRY = (
    "INSERT INTO psych_inbox (run_id, number, key, body) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (run_id, key) DO NOTHING"
)

# Count the entry and wake a waiting run (a timed wait too: the signal comes before its time).
_COUNT_AND_WAKE = (
    "UPDATE psych_runs SET inbox_last = ?, "
    "runnable_at = CASE WHEN status = 'waiting' THEN ? ELSE runnable_at END WHERE run_id = ?"
)


def signal(conn: sqlite3.Connection, tenant: str, run_id: str, body: Signal, key: str) -> int:
    """Add a signal to the run's inbox; see `Store.signal`. Returns its number."""
    row = conn.execute(
        "SELECT tenant, status, inbox_last FROM psych_runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None or row[0] != tenant:
        raise RunNotFound(run_id)
    status, inbox_last = row[1], int(row[2])
    if status in FINAL_STATUSES:
        _check_after_end(conn, run_id, status, body, key)
    number = inbox_last + 1
    if not _enqueue(conn, run_id, number, key, body, now_micros()):
        raise DuplicateSignal(run_id, key)
    return number


def _check_after_end(
    conn: sqlite3.Connection, run_id: str, status: str, body: Signal, key: str
) -> None:
    """Refuse a signal to an ended run unless it is for the run's next run and the run has not
    been continued; a key already used is `DuplicateSignal` first. One more query."""
    taken = {
        found
        for (found,) in conn.execute(
            "SELECT key FROM psych_inbox WHERE run_id = ? AND key IN (?, ?)",
            (run_id, key, CONTINUED_KEY),
        )
    }
    if key in taken:
        raise DuplicateSignal(run_id, key)
    if not accepted_after_end(body) or CONTINUED_KEY in taken:
        raise RunFinished(run_id, status)


def deliver(conn: sqlite3.Connection, notices: Iterable[Notify], now: int) -> None:
    """Write an append's notices into their runs' inboxes, each as `signal` would.

    A notice that no longer applies (its run ended or is gone, or its key was used) is
    skipped: the append that carries it must not fail for it.
    """
    for notice in notices:
        row = conn.execute(
            "SELECT status, inbox_last FROM psych_runs WHERE run_id = ?", (notice.run_id,)
        ).fetchone()
        if row is None or row[0] in FINAL_STATUSES:
            continue
        _enqueue(conn, notice.run_id, int(row[1]) + 1, notice.key, notice.signal, now)


def _enqueue(
    conn: sqlite3.Connection, run_id: str, number: int, key: str, body: Signal, now: int
) -> bool:
    """Add entry `number` unless `key` is taken; False when it is (nothing is written)."""
    entry = InboxEntry(run_id=run_id, number=number, key=key, signal=body, at=from_micros(now))
    added = conn.execute(_ADD_ENTRY, (run_id, number, key, entry.model_dump_json()))
    if added.rowcount == 0:
        return False
    conn.execute(_COUNT_AND_WAKE, (number, NEVER_BEFORE_MICROS, run_id))
    return True


def inbox_count(conn: sqlite3.Connection, run_id: str) -> int:
    """The run's ``inbox_last`` (0 for a run that does not exist)."""
    row = conn.execute("SELECT inbox_last FROM psych_runs WHERE run_id = ?", (run_id,)).fetchone()
    return 0 if row is None else int(row[0])


def signals(conn: sqlite3.Connection, run_id: str, after: int) -> list[InboxEntry]:
    """The run's inbox entries numbered above `after`, in number order."""
    rows = conn.execute(
        "SELECT body FROM psych_inbox WHERE run_id = ? AND number > ? ORDER BY number",
        (run_id, after),
    ).fetchall()
    return [InboxEntry.model_validate_json(body) for (body,) in rows]

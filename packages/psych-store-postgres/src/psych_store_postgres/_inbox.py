"""The inbox: `signal`, `signals` and `due`, as functions of a connection.

A signal is one statement: it raises the run row's ``inbox_last`` (the row lock puts racing
signals, and a racing suspend, in one order), inserts the entry under that number, and wakes a
waiting run (``runnable_at`` := '-infinity', and a NOTIFY for idle workers).

A run that has ended takes only a message for its next run, or the `Continued` mark, and only
while its inbox holds no "continued" key. That case is a short transaction: lock the row, then
check the inbox and insert in a statement whose snapshot is taken under the lock, so a message
racing the mark is numbered before it or refused.
"""

from __future__ import annotations

import datetime as dt

import asyncpg

from psych_core import (
    CONTINUED_KEY,
    FINAL_STATUSES,
    DuplicateSignal,
    InboxEntry,
    RunFinished,
    RunNotFound,
    RunRow,
    Signal,
    StoreError,
    accepted_after_end,
)
from psych_store_postgres._connections import Connection
from psych_store_postgres._rows import inbox_entry, run_row, signal_json
from psych_store_postgres._sql import Sql

_RACES = 5


async def signal(
    conn: Connection,
    sql: Sql,
    tenant: str,
    run_id: str,
    body: Signal,
    key: str,
    again: bool,
) -> int:
    """Add a signal to the run's inbox; see `Store.signal`. Returns its number.

    `again` says an earlier send may have committed: an entry with this key and this very
    signal is then this call's own, and its number is returned.
    """
    payload = signal_json(body)
    for _ in range(_RACES):
        try:
            number = await conn.fetchval(sql.signal, run_id, tenant, key, payload)
        except asyncpg.UniqueViolationError:
            number = None  # a racing signal with the same key committed first
        if number is not None:
            return int(number)
        row = await conn.fetchrow(sql.signal_diagnose, run_id, tenant, key, CONTINUED_KEY)
        if row is None:
            raise RunNotFound(run_id)
        if row["number"] is not None:
            if again and row["body"] == payload:
                return int(row["number"])
            raise DuplicateSignal(run_id, key)
        if row["status"] in FINAL_STATUSES:
            if row["continued"] or not accepted_after_end(body):
                raise RunFinished(run_id, row["status"])
            number = await _after_end(conn, sql, tenant, run_id, key, payload)
            if number is not None:
                return number
            # Refused under the lock (the key, or the mark, committed meanwhile): diagnose again.
    raise StoreError(f"run {run_id}: the signal with key {key!r} kept losing races; try again")


async def _after_end(
    conn: Connection, sql: Sql, tenant: str, run_id: str, key: str, payload: bytes
) -> int | None:
    """Number a signal an ended run still takes; None when the locked row refuses it."""
    try:
        async with conn.transaction():
            if await conn.fetchval(sql.signal_lock, run_id, tenant) is None:
                return None
            number = await conn.fetchval(
                sql.signal_after_end, run_id, tenant, key, payload, CONTINUED_KEY
            )
    except asyncpg.UniqueViolationError:
        return None  # a key taken meanwhile; the diagnosis tells
    return None if number is None else int(number)


async def signals(conn: Connection, sql: Sql, run_id: str, after: int) -> list[InboxEntry]:
    """The run's inbox entries numbered above `after`, in number order."""
    rows = await conn.fetch(sql.signals, run_id, after)
    return [inbox_entry(run_id, row) for row in rows]


async def due(conn: Connection, sql: Sql, now: dt.datetime, limit: int) -> list[RunRow]:
    """Waiting runs of every tenant claimable at `now`, oldest ``runnable_at`` first."""
    if limit <= 0:
        return []
    rows = await conn.fetch(sql.due, now, limit)
    return [run_row(row) for row in rows]

"""The inbox: `signal`, `signals` and `due`, as functions of a connection.

A signal is one statement: it raises the run row's ``inbox_last`` (the row lock puts racing
signals, and a racing suspend, in one order), inserts the entry under that number, and wakes a
waiting run (``runnable_at`` := '-infinity', and a NOTIFY for idle workers).
"""

from __future__ import annotations

import datetime as dt

import asyncpg

from psych_core import (
    FINAL_STATUSES,
    DuplicateSignal,
    InboxEntry,
    RunFinished,
    RunNotFound,
    RunRow,
    Signal,
    StoreError,
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
        row = await conn.fetchrow(sql.signal_diagnose, run_id, tenant, key)
        if row is None:
            raise RunNotFound(run_id)
        if row["status"] in FINAL_STATUSES:
            raise RunFinished(run_id, row["status"])
        if row["number"] is not None:
            if again and row["body"] == payload:
                return int(row["number"])
            raise DuplicateSignal(run_id, key)
    raise StoreError(f"run {run_id}: the signal with key {key!r} kept losing races; try again")


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

"""The store's reads, as plain functions of a connection (the reader lane's).

Each is one statement, so it sees one committed state of the file (WAL snapshot).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from psych_core import FINAL_STATUSES, Page, Record, RunQuery, RunRow
from psych_core.ports import RUN_ROW_COLUMNS, cursor_position, page_of, run_row_of
from psych_store_sqlite._time import from_micros

FINAL = tuple(sorted(FINAL_STATUSES))
NOT_FINAL = f"status NOT IN ({', '.join('?' * len(FINAL))})"
"""A WHERE clause (with `FINAL` as its parameters) for runs that have not ended."""

_ROW_COLUMNS = f"n, {RUN_ROW_COLUMNS}"
"""The creation number (for cursors), then the `RunRow`."""


def _run_row(row: tuple[Any, ...]) -> RunRow:
    return run_row_of(row[1:], time=from_micros)


def _position(row: tuple[Any, ...]) -> int:
    return int(row[0])


def read(conn: sqlite3.Connection, run_id: str, after_seq: int, limit: int | None) -> list[Record]:
    """The records after `after_seq`, in seq order, at most `limit`."""
    rows = conn.execute(
        "SELECT body FROM psych_records WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (run_id, after_seq, -1 if limit is None else limit),
    ).fetchall()
    return [Record.model_validate_json(body) for (body,) in rows]


def get_run(conn: sqlite3.Connection, tenant: str, run_id: str) -> RunRow | None:
    """The run row, if the run exists in `tenant`."""
    row = conn.execute(
        f"SELECT {_ROW_COLUMNS} FROM psych_runs WHERE run_id = ? AND tenant = ?",
        (run_id, tenant),
    ).fetchone()
    return None if row is None else _run_row(row)


def list_runs(conn: sqlite3.Connection, tenant: str, query: RunQuery) -> Page[RunRow]:
    """The tenant's runs, newest first; the cursor is the creation number of the last one."""
    where = ["tenant = ?"]
    params: list[object] = [tenant]
    if query.status is not None:
        where.append("status = ?")
        params.append(query.status)
    if query.parent_run_id is not None:
        where.append("parent_run_id = ?")
        params.append(query.parent_run_id)
    if query.cursor is not None:
        where.append("n < ?")
        params.append(cursor_position(query.cursor))
    params.append(max(query.limit, 0) + 1)
    rows = conn.execute(
        f"SELECT {_ROW_COLUMNS} FROM psych_runs WHERE {' AND '.join(where)} "
        "ORDER BY n DESC LIMIT ?",
        params,
    ).fetchall()
    return page_of(rows, query.limit, _run_row, _position)


def due(conn: sqlite3.Connection, now: int, limit: int) -> list[RunRow]:
    """Waiting runs of every tenant claimable at `now`, oldest ``runnable_at`` first."""
    rows = conn.execute(
        f"SELECT {_ROW_COLUMNS} FROM psych_runs WHERE runnable_at <= ? AND status = 'waiting' "
        "ORDER BY runnable_at, n LIMIT ?",
        (now, max(limit, 0)),
    ).fetchall()
    return [_run_row(row) for row in rows]


def next_seq(conn: sqlite3.Connection, run_id: str) -> int | None:
    """The run's next seq, or None when there is no such run."""
    row = conn.execute("SELECT next_seq FROM psych_runs WHERE run_id = ?", (run_id,)).fetchone()
    return None if row is None else int(row[0])


def claimable(conn: sqlite3.Connection, now: int) -> bool:
    """Whether some run can be claimed at `now`."""
    row = conn.execute(
        f"SELECT 1 FROM psych_runs WHERE runnable_at <= ? AND {NOT_FINAL} LIMIT 1",
        (now, *FINAL),
    ).fetchone()
    return row is not None


def get_spec(conn: sqlite3.Connection, version: str) -> str | None:
    """The spec JSON stored under `version`."""
    row = conn.execute("SELECT spec_json FROM psych_specs WHERE version = ?", (version,)).fetchone()
    return None if row is None else str(row[0])


def schema_version(conn: sqlite3.Connection, table: str) -> int:
    """The last migration `table` (a version table) lists: 0 when there is no such table.

    Nothing is written, so a file that was never migrated is left without tables. (Migrations
    never drop the table: one that appears between the two statements is read whole.)
    """
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if found is None:
        return 0
    row = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {table}").fetchone()
    return int(row[0])

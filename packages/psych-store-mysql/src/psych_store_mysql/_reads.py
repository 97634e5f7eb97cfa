"""The store's reads: each is one statement, so it sees one committed state (``READ
COMMITTED`` reads what was committed when the statement started) and takes no lock."""

from __future__ import annotations

from typing import Any

from psych_core import FINAL_STATUSES, Page, Record, RunQuery, RunRow
from psych_core.ports import RUN_ROW_COLUMNS, page_of, run_row_of
from psych_store_mysql._driver import Connection
from psych_store_mysql._literals import decode, from_stamp, identifier, integer, text

NOT_FINAL = "status NOT IN (" + ", ".join(text(s) for s in sorted(FINAL_STATUSES)) + ")"
"""A condition on ``psych_runs`` for runs that have not ended."""

RUN_COLUMNS = f"n, {RUN_ROW_COLUMNS}"
"""The columns `run_row` reads: the creation number (for cursors), then the `RunRow`."""


def run_row(row: tuple[Any, ...]) -> RunRow:
    """A ``psych_runs`` row (`RUN_COLUMNS`) as a `RunRow`; ids come back as bytes."""
    return run_row_of(row[1:], time=from_stamp, text=decode)


async def read(conn: Connection, run_id: str, after_seq: int, limit: int | None) -> list[Record]:
    """The records after `after_seq`, in seq order, at most `limit`."""
    bound = "" if limit is None else f" LIMIT {integer(max(limit, 0))}"
    result = await conn.one(
        f"SELECT body FROM psych_records WHERE run_id = {identifier(run_id, 'run id')} "
        f"AND seq > {integer(after_seq)} ORDER BY seq{bound}"
    )
    return [Record.model_validate_json(body) for (body,) in result.rows]


async def get_run(conn: Connection, tenant: str, run_id: str) -> RunRow | None:
    """The run row, if the run exists in `tenant`."""
    result = await conn.one(
        f"SELECT {RUN_COLUMNS} FROM psych_runs WHERE run_id = {identifier(run_id, 'run id')} "
        f"AND tenant = {identifier(tenant, 'tenant')}"
    )
    return run_row(result.rows[0]) if result.rows else None


async def list_runs(
    conn: Connection, tenant: str, query: RunQuery, before: int | None
) -> Page[RunRow]:
    """The tenant's runs, newest first, created before `before` (the creation number the
    query's cursor names, read before anything is sent: `cursor_position`)."""
    where = [f"tenant = {identifier(tenant, 'tenant')}"]
    if query.status is not None:
        where.append(f"status = {text(query.status)}")
    if query.parent_run_id is not None:
        where.append(f"parent_run_id = {identifier(query.parent_run_id, 'parent run id')}")
    if before is not None:
        where.append(f"n < {integer(before)}")
    limit = max(query.limit, 0)
    result = await conn.one(
        f"SELECT {RUN_COLUMNS} FROM psych_runs WHERE {' AND '.join(where)} "
        f"ORDER BY n DESC LIMIT {limit + 1}"
    )
    return page_of(result.rows, limit, run_row, lambda row: int(row[0]))


async def next_seq(conn: Connection, run_id: str) -> int | None:
    """The run's next seq, or None when there is no such run."""
    result = await conn.one(
        f"SELECT next_seq FROM psych_runs WHERE run_id = {identifier(run_id, 'run id')}"
    )
    return int(result.rows[0][0]) if result.rows else None


async def claimable(conn: Connection) -> bool:
    """Whether some run can be claimed now, by the server's clock."""
    result = await conn.one(
        "SELECT 1 FROM psych_runs FORCE INDEX (psych_runs_runnable) "
        f"WHERE runnable_at <= UTC_TIMESTAMP(6) AND {NOT_FINAL} LIMIT 1"
    )
    return bool(result.rows)


async def get_spec(conn: Connection, version: str) -> str | None:
    """The spec JSON stored under `version`."""
    result = await conn.one(
        f"SELECT spec_json FROM psych_specs WHERE version = {identifier(version, 'spec version')}"
    )
    return str(result.rows[0][0]) if result.rows else None


async def schema_version(conn: Connection, table: str) -> int:
    """The last migration `table` (the version table, in the connection's database) lists:
    0 when there is no such table. Nothing is created and no lock is taken."""
    found = await conn.one(
        "SELECT 1 FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {text(table)}"
    )
    if not found.rows:
        return 0
    result = await conn.one(f"SELECT COALESCE(MAX(version), 0) FROM {table}")
    return int(result.rows[0][0])

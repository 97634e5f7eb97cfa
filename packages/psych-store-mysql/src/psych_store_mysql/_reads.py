"""The store's reads: each is one statement, so it sees one committed state (``READ
COMMITTED`` reads what was committed when the statement started) and takes no lock."""

from __future__ import annotations

from typing import Any

from psych_core import FINAL_STATUSES, Page, Record, RunQuery, RunRow
from psych_store_mysql._driver import Connection
from psych_store_mysql._literals import (
    decode,
    from_stamp,
    identifier,
    integer,
    optional_decode,
    optional_from_stamp,
    text,
)

NOT_FINAL = "status NOT IN (" + ", ".join(text(s) for s in sorted(FINAL_STATUSES)) + ")"
"""A condition on ``psych_runs`` for runs that have not ended."""

RUN_COLUMNS = (
    "n, run_id, tenant, agent, spec_version, status, waiting, parent_run_id, attempt, "
    "lease_owner, lease_expires_at, runnable_at, next_seq, inbox_last, created_at, "
    "updated_at, claims"
)
"""The columns `run_row` reads, in its order."""


def run_row(row: tuple[Any, ...]) -> RunRow:
    """A ``psych_runs`` row (`RUN_COLUMNS`) as a `RunRow`."""
    (
        _n,
        run_id,
        tenant,
        agent,
        spec_version,
        status,
        waiting,
        parent_run_id,
        attempt,
        lease_owner,
        lease_expires_at,
        runnable_at,
        next_seq,
        inbox_last,
        created_at,
        updated_at,
        claims,
    ) = row
    return RunRow(
        run_id=decode(run_id),
        tenant=decode(tenant),
        agent=decode(agent),
        spec_version=decode(spec_version),
        status=status,
        waiting=waiting,
        parent_run_id=optional_decode(parent_run_id),
        attempt=int(attempt),
        lease_owner=optional_decode(lease_owner),
        lease_expires_at=optional_from_stamp(lease_expires_at),
        runnable_at=optional_from_stamp(runnable_at),
        next_seq=int(next_seq),
        inbox_last=int(inbox_last),
        created_at=from_stamp(created_at),
        updated_at=from_stamp(updated_at),
        claims=int(claims),
    )


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


async def list_runs(conn: Connection, tenant: str, query: RunQuery) -> Page[RunRow]:
    """The tenant's runs, newest first; the cursor is the creation number of the last one."""
    where = [f"tenant = {identifier(tenant, 'tenant')}"]
    if query.status is not None:
        where.append(f"status = {text(query.status)}")
    if query.parent_run_id is not None:
        where.append(f"parent_run_id = {identifier(query.parent_run_id, 'parent run id')}")
    if query.cursor is not None:
        where.append(f"n < {_cursor(query.cursor)}")
    limit = max(query.limit, 0)
    result = await conn.one(
        f"SELECT {RUN_COLUMNS} FROM psych_runs WHERE {' AND '.join(where)} "
        f"ORDER BY n DESC LIMIT {limit + 1}"
    )
    page = result.rows[:limit]
    more = len(result.rows) > len(page)
    return Page(
        items=tuple(run_row(row) for row in page),
        next_cursor=str(page[-1][0]) if more and page else None,
    )


def _cursor(cursor: str) -> int:
    try:
        return int(cursor)
    except ValueError:
        raise ValueError(
            f"cursor {cursor!r} was not issued by this store; pass a Page.next_cursor, or "
            "None for the first page"
        ) from None


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

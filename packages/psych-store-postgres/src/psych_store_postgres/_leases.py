"""Who runs a run: `claim`, `renew` and `release`, as functions of a connection.

A claim is one short transaction (BEGIN, pick, start, COMMIT): the pick locks the oldest
claimable row with ``FOR UPDATE SKIP LOCKED`` on the index over ``runnable_at``, so claimers
racing for work each take a different run without waiting; the start writes the new attempt
into the row and its `AttemptStarted` record in one statement. The record's time and the
lease's expiry come from the database's clock.
"""

from __future__ import annotations

import datetime as dt
from typing import NoReturn

from psych_core import Claim, LeaseLost, RenewResult, RunNotFound
from psych_core.ports import exhausted_record, record_json, started_record
from psych_store_postgres._connections import Connection
from psych_store_postgres._errors import ClaimUnknown, NotCommitted, lost
from psych_store_postgres._rows import aware
from psych_store_postgres._sql import Sql


async def claim(
    conn: Connection,
    sql: Sql,
    worker_id: str,
    ttl: dt.timedelta,
    run_id: str | None,
    max_attempts: int,
) -> Claim | None:
    """Take the oldest claimable run (or only `run_id`); see `Store.claim`.

    A connection lost before COMMIT was sent left nothing behind: that is `NotCommitted`, and
    the claim is tried again. One lost during the COMMIT of a claim that started an attempt is
    `ClaimUnknown`, which `landed` settles; one that only failed exhausted runs is tried again
    too (a run failed twice is failed once: the second try finds it ended).
    """
    taken: tuple[Claim | None, bytes | None] = (None, None)
    committing = False
    try:
        async with conn.transaction():
            taken = await _take(conn, sql, worker_id, ttl, run_id, max_attempts)
            committing = True
        return taken[0]
    except Exception as exc:
        if not lost(exc, conn):
            raise
        started, body = taken
        if committing and started is not None and body is not None:
            raise ClaimUnknown(started, body, exc) from exc
        raise NotCommitted(exc) from exc


async def landed(conn: Connection, _again: bool, *, sql: Sql, unknown: ClaimUnknown) -> bool:
    """Whether the claim whose COMMIT went unanswered did commit: its record is in the log."""
    record = unknown.claim.record
    found: bytes | None = await conn.fetchval(sql.record_body, record.run_id, record.seq)
    return found == unknown.body


async def _take(
    conn: Connection,
    sql: Sql,
    worker_id: str,
    ttl: dt.timedelta,
    run_id: str | None,
    max_attempts: int,
) -> tuple[Claim | None, bytes | None]:
    while True:
        if run_id is None:
            row = await conn.fetchrow(sql.claim_pick_any)
        else:
            row = await conn.fetchrow(sql.claim_pick_one, run_id)
        if row is None:
            return None, None
        found: str = row["run_id"]
        now = aware(row["now"])
        seq: int = row["next_seq"]
        if row["claims"] >= max_attempts:
            failed = exhausted_record(found, seq, row["attempt"], now, row["claims"], max_attempts)
            await conn.execute(
                sql.claim_exhaust, found, row["attempt"], seq, now, record_json(failed)
            )
            if run_id is not None:
                return None, None
            continue
        attempt = row["attempt"] + 1
        expires = now + ttl
        started = started_record(found, seq, attempt, now, worker_id)
        body = record_json(started)
        await conn.execute(sql.claim_start, found, attempt, worker_id, expires, seq, now, body)
        claim = Claim(found, row["tenant"], attempt, expires, started, row["inbox_last"])
        return claim, body


async def renew(
    conn: Connection, sql: Sql, run_id: str, attempt: int, ttl: dt.timedelta
) -> RenewResult:
    """Extend the current attempt's lease to the database's now + `ttl`."""
    row = await conn.fetchrow(sql.renew, run_id, attempt, ttl)
    if row is None:
        await _refuse(conn, sql, run_id, attempt)
    return RenewResult(aware(row["lease_expires_at"]), int(row["inbox_last"]))


async def release(
    conn: Connection,
    sql: Sql,
    run_id: str,
    attempt: int,
    runnable_at: dt.datetime | None,
    again: bool,
) -> None:
    """Give up the current attempt's lease; claimable again at `runnable_at` (None: now).

    `again` says an earlier send may have committed: a run left queued, unleased, at this
    attempt is then taken as released by it.
    """
    released = await conn.fetchval(sql.release, run_id, attempt, runnable_at)
    if released:
        return
    if again:
        row = await conn.fetchrow(sql.lease_diagnose, run_id)
        if row is not None and (row["attempt"], row["leased"], row["status"]) == (
            attempt,
            False,
            "queued",
        ):
            return
    await _refuse(conn, sql, run_id, attempt)


async def _refuse(conn: Connection, sql: Sql, run_id: str, attempt: int) -> NoReturn:
    row = await conn.fetchrow(sql.lease_diagnose, run_id)
    if row is None:
        raise RunNotFound(run_id)
    raise LeaseLost(run_id, attempt, row["attempt"])

"""Who runs a run: `claim`, `renew` and `release`, as functions of a connection.

The claim of any run is one statement in autocommit (`claim_any`): it locks the oldest
claimable row with ``FOR UPDATE SKIP LOCKED`` on the index over ``runnable_at``, so claimers
racing for work each take a different run without waiting, writes the new attempt into the row
and appends its `AttemptStarted` record; for a run's first claim it also reads record 0, the
whole log before it (`Claim.log`), which spares the attempt a read of its log. The record's
time and the lease's expiry come from the database's clock, so the record's bytes are written
by the statement (`_sql.started_body`).
Each claim carries a token, kept as its record's batch id: when the answer is lost, the claim
sent again first looks for its token (`claim_landed`) and returns the run it took, so a run is
never left leased to a claim nobody heard.

A claim of one given run, and one that must fail a run claimed `max_attempts` times, is one
short transaction (BEGIN, pick, start or fail, COMMIT).
"""

from __future__ import annotations

import datetime as dt
import secrets
from functools import lru_cache
from typing import Literal, NoReturn

from psych_core import Claim, LeaseLost, Record, RenewResult, RunNotFound
from psych_core.ports import exhausted_record, first_claim_log, record_json, started_record
from psych_store_postgres._connections import Connection
from psych_store_postgres._errors import ClaimUnknown, NotCommitted, lost
from psych_store_postgres._rows import aware
from psych_store_postgres._sql import Sql

type Exhausted = Literal["exhausted"]
EXHAUSTED: Exhausted = "exhausted"
"""What `claim_any` returns when the run it picked was claimed `max_attempts` times already:
the store fails that run through `claim`'s transaction."""


def claim_token() -> str:
    """A claim's token: its `AttemptStarted` record's batch id, which no batch's id equals."""
    return f"claim:{secrets.token_hex(8)}"


@lru_cache(maxsize=256)
def started_tail(worker_id: str) -> bytes:
    """The bytes of `worker_id`'s `AttemptStarted` records after their time: the same for
    every claim it makes (kept for the last few hundred workers a process has had)."""
    whole = record_json(started_record("", 0, 0, dt.datetime.now(dt.UTC), worker_id))
    return whole[whole.index(b',"body":') :]


async def claim_any(
    conn: Connection,
    again: bool,
    *,
    sql: Sql,
    worker_id: str,
    ttl: dt.timedelta,
    max_attempts: int,
    token: str,
) -> Claim | Exhausted | None:
    """Take the oldest claimable run in one statement: its `Claim`, None when no run is
    claimable, or `EXHAUSTED` when the run it found must be failed instead.

    `again` says an earlier send may have committed: a claim with this `token` whose lease is
    still live is then this call's own, and returned.
    """
    micros = ttl // dt.timedelta(microseconds=1)
    if again:
        landed = await conn.fetchrow(sql.claim_landed, worker_id, micros, token)
        if landed is not None:
            record = Record.model_validate_json(landed["body"])
            expires = aware(landed["lease_expires_at"])
            return Claim(
                record.run_id,
                landed["tenant"],
                record.attempt,
                expires,
                record,
                landed["inbox_last"],
            )
    row = await conn.fetchrow(
        sql.claim_any, worker_id, micros, max_attempts, token, started_tail(worker_id)
    )
    if row is None:
        return None
    if row["lease_expires_at"] is None:
        return EXHAUSTED
    attempt = row["attempt"] + 1
    started = started_record(row["run_id"], row["next_seq"], attempt, aware(row["now"]), worker_id)
    expires = aware(row["lease_expires_at"])
    # A run's first claim brings its log, record 0 alone, read by the same statement.
    log = first_claim_log(row["first_body"])
    return Claim(row["run_id"], row["tenant"], attempt, expires, started, row["inbox_last"], log)


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

"""Claims and leases: `claim`, `renew`, `release`, timed by the server's clock.

A claim is one transaction of three round trips. The first takes a run whose lease expired,
else the oldest claimable run::

    START TRANSACTION;
    SELECT ... WHERE <a lease that expired> ... LIMIT 1 FOR UPDATE SKIP LOCKED;
    SELECT ..., UTC_TIMESTAMP(6) FROM psych_runs FORCE INDEX (psych_runs_runnable)
        WHERE runnable_at <= UTC_TIMESTAMP(6) AND <not ended>
        ORDER BY runnable_at, n LIMIT 1 FOR UPDATE SKIP LOCKED

so claimers never wait for each other: a row another claimer holds is skipped. The second
writes the ``AttemptStarted`` record (its body is built here, from the server's time) and the
new lease, and for a run's first claim reads its record 0 (`Claim.log`); the third is the
``COMMIT``, sent once both writes reported their row (see `_transaction`). Leases are the
server's time plus the ttl: every host compares them with the same clock. `renew` and `release`
write one statement each, all or nothing by itself, and stay one round trip.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from psych_core import Claim, LeaseLost, Record, RenewResult, RunNotFound
from psych_core.ports import check_ttl, exhausted_record, first_claim_log, started_record
from psych_store_mysql._driver import Connection, Result
from psych_store_mysql._literals import (
    NEVER_BEFORE_SQL,
    decode,
    from_stamp,
    identifier,
    integer,
    optional_stamp,
    stamp,
    text,
)
from psych_store_mysql._reads import NOT_FINAL
from psych_store_mysql._transaction import commit, unexpected

_CANDIDATE = "run_id, tenant, attempt, next_seq, claims, inbox_last, UTC_TIMESTAMP(6)"
_ONE_MICROSECOND = dt.timedelta(microseconds=1)


def ttl_micros(ttl: dt.timedelta) -> int:
    """A lease duration in microseconds; it must be positive (`check_ttl`)."""
    return check_ttl(ttl) // _ONE_MICROSECOND


def _take(run_id: str | None) -> str:
    """The locking read of the next claimable run (or of `run_id` when it is claimable).

    For any run, two reads in one round trip: a run whose lease expired (it still names its
    owner: its worker died with it started), then the oldest claimable run; the claim takes the
    first found (`_taken`). Leased runs never hold the "at once" time, so the first read's range
    on the index holds only them, due waits and runs released to a time: a short scan however
    long the queue of new runs. The second read's row stays locked until the claim commits,
    and other claimers skip it meanwhile.
    """
    if run_id is None:
        return (
            f"SELECT {_CANDIDATE} FROM psych_runs FORCE INDEX (psych_runs_runnable) "
            f"WHERE runnable_at > {NEVER_BEFORE_SQL} AND runnable_at <= UTC_TIMESTAMP(6) "
            f"AND lease_owner IS NOT NULL AND {NOT_FINAL} "
            "ORDER BY runnable_at, n LIMIT 1 FOR UPDATE SKIP LOCKED;\n"
            f"SELECT {_CANDIDATE} FROM psych_runs FORCE INDEX (psych_runs_runnable) "
            f"WHERE runnable_at <= UTC_TIMESTAMP(6) AND {NOT_FINAL} "
            "ORDER BY runnable_at, n LIMIT 1 FOR UPDATE SKIP LOCKED"
        )
    return (
        f"SELECT {_CANDIDATE} FROM psych_runs WHERE run_id = {identifier(run_id, 'run id')} "
        f"AND runnable_at <= UTC_TIMESTAMP(6) AND {NOT_FINAL} FOR UPDATE SKIP LOCKED"
    )


def _taken(run_id: str | None, answers: list[Result]) -> tuple[tuple[Any, ...], ...]:
    """The rows of `_take`'s read(s), at the end of `answers`: the first read that found one."""
    if run_id is not None:
        return answers[-1].rows
    return answers[-2].rows or answers[-1].rows


def _insert_record(record: Record) -> str:
    return (
        "INSERT INTO psych_records (run_id, seq, attempt, batch_id, body) VALUES ("
        f"{identifier(record.run_id, 'run id')}, {integer(record.seq)}, "
        f"{integer(record.attempt)}, NULL, {text(record.model_dump_json())})"
    )


async def claim(
    conn: Connection, worker_id: str, ttl: dt.timedelta, run_id: str | None, max_attempts: int
) -> Claim | None:
    """Take the oldest claimable run (or only `run_id`); see `Store.claim`."""
    lease = dt.timedelta(microseconds=ttl_micros(ttl))
    identifier(worker_id, "worker id")  # refused before anything is sent
    rows = _taken(run_id, await conn.batch(f"START TRANSACTION;\n{_take(run_id)}"))
    while rows:
        found, tenant, attempts, next_seq, claims, inbox_last, now = rows[0]
        found, at = decode(found), from_stamp(now)
        if claims < max_attempts:
            tenant = decode(tenant)
            inbox = int(inbox_last)
            return await _start(
                conn, found, tenant, attempts + 1, next_seq, worker_id, at, lease, inbox
            )
        failed = exhausted_record(found, next_seq, attempts, at, claims, max_attempts)
        exhaust = (
            f"{_insert_record(failed)};\n"
            "UPDATE psych_runs SET status = 'failed', waiting = NULL, lease_owner = NULL, "
            f"lease_expires_at = NULL, runnable_at = NULL, next_seq = {integer(next_seq + 1)}, "
            f"updated_at = {stamp(at, 'now')} WHERE run_id = {identifier(found, 'run id')}"
        )
        what = f"run {found}: ending it after {claims} claims (seq {next_seq})"
        if run_id is not None:
            await commit(conn, _unwritten(what, await conn.batch(exhaust)))
            return None
        answers = await conn.batch(f"{exhaust};\n{_take(None)}")
        if problem := _unwritten(what, answers[:2]):
            await commit(conn, problem)  # rolls back and raises
        rows = _taken(None, answers)
    await conn.one("COMMIT")  # what it wrote (runs it ended) was checked as it went
    return None


def _unwritten(what: str, answers: list[Result]) -> str | None:
    """What is wrong when a record's ``INSERT`` and its run row's ``UPDATE`` did not both
    report their one row, else None."""
    record, run = answers[0].rowcount, answers[1].rowcount
    return unexpected(what, [("records written", 1, record), ("run rows updated", 1, run)])


async def _start(
    conn: Connection,
    run_id: str,
    tenant: str,
    attempt: int,
    seq: int,
    worker_id: str,
    now: dt.datetime,
    lease: dt.timedelta,
    inbox_last: int,
) -> Claim:
    record = started_record(run_id, seq, attempt, now, worker_id)
    expires = now + lease
    until = stamp(expires, "lease expiry")
    run = identifier(run_id, "run id")
    # A run's first claim also reads its log (record 0 alone), sparing the attempt a read.
    first = (
        f";\nSELECT body FROM psych_records WHERE run_id = {run} AND seq = 0" if seq == 1 else ""
    )
    answers = await conn.batch(
        f"{_insert_record(record)};\n"
        f"UPDATE psych_runs SET attempt = {integer(attempt)}, status = 'running', "
        f"waiting = NULL, lease_owner = {identifier(worker_id, 'worker id')}, "
        f"lease_expires_at = {until}, "
        f"runnable_at = {until}, next_seq = {integer(seq + 1)}, claims = claims + 1, "
        f"updated_at = {stamp(now, 'now')} WHERE run_id = {run}{first}"
    )
    what = f"run {run_id}: the claim of attempt {attempt} by {worker_id} (seq {seq})"
    await commit(conn, _unwritten(what, answers))
    found = answers[2].rows if first else ()
    log = first_claim_log(found[0][0] if found else None)
    return Claim(run_id, tenant, attempt, expires, record, inbox_last, log)


async def renew(conn: Connection, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
    """Extend the current attempt's lease to the server's now + `ttl`, in one round trip."""
    run = identifier(run_id, "run id")
    until = f"UTC_TIMESTAMP(6) + INTERVAL {ttl_micros(ttl)} MICROSECOND"
    results = await conn.batch(
        "START TRANSACTION;\n"
        f"UPDATE psych_runs SET lease_expires_at = {until}, runnable_at = {until} "
        f"WHERE run_id = {run} AND attempt = {integer(attempt)} AND lease_owner IS NOT NULL;\n"
        "SELECT attempt, lease_owner IS NOT NULL, lease_expires_at, inbox_last "
        f"FROM psych_runs WHERE run_id = {run};\n"
        "COMMIT"
    )
    renewed, rows = results[1].rowcount, results[2].rows
    if not rows:
        raise RunNotFound(run_id)
    current, leased, expires, inbox_last = rows[0]
    if renewed != 1 or current != attempt or not leased:
        raise LeaseLost(run_id, attempt, current)
    return RenewResult(from_stamp(expires), int(inbox_last))


async def release(
    conn: Connection, run_id: str, attempt: int, runnable_at: dt.datetime | None
) -> None:
    """Give up the current attempt's lease; claimable again at `runnable_at` (None: now)."""
    run = identifier(run_id, "run id")
    at = NEVER_BEFORE_SQL if runnable_at is None else optional_stamp(runnable_at, "runnable_at")
    results = await conn.batch(
        "START TRANSACTION;\n"
        f"UPDATE psych_runs SET lease_owner = NULL, lease_expires_at = NULL, runnable_at = {at}, "
        "status = 'queued', waiting = NULL, updated_at = UTC_TIMESTAMP(6) "
        f"WHERE run_id = {run} AND attempt = {integer(attempt)} AND lease_owner IS NOT NULL;\n"
        f"SELECT attempt FROM psych_runs WHERE run_id = {run};\n"
        "COMMIT"
    )
    released, rows = results[1].rowcount, results[2].rows
    if not rows:
        raise RunNotFound(run_id)
    if released != 1:
        raise LeaseLost(run_id, attempt, rows[0][0])

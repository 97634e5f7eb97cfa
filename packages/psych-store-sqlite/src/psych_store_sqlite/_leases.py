"""Leases: the claim that starts an attempt, the heartbeat that renews it, the release.

Each runs inside `write_transaction` (``BEGIN IMMEDIATE``) on the writer lane. The host's clock
is read after the write lock is held, so lease times follow commit order.
"""

from __future__ import annotations

import sqlite3

from psych_core import Claim, LeaseLost, RunNotFound
from psych_core.ports import exhausted_record, first_claim_log, started_record
from psych_store_sqlite._append import INSERT_RECORD
from psych_store_sqlite._reads import FINAL, NOT_FINAL
from psych_store_sqlite._time import NEVER_BEFORE_MICROS, from_micros, now_micros

_CANDIDATE = "SELECT run_id, tenant, attempt, next_seq, claims, inbox_last FROM psych_runs WHERE "

# A run whose lease expired (it still names its owner: its worker died with it started) comes
# first. Leased runs never hold the "at once" time, so the range above it on the partial index
# over runnable_at holds only them, due waits and runs released to a time: a short scan however
# long the queue of new runs.
_EXPIRED = (
    f"{_CANDIDATE}runnable_at > {NEVER_BEFORE_MICROS} AND runnable_at <= ? "
    f"AND lease_owner IS NOT NULL AND {NOT_FINAL} ORDER BY runnable_at, n LIMIT 1"
)
# Else the oldest claimable run, on the same index (n, the rowid, breaks ties).
_OLDEST = f"{_CANDIDATE}runnable_at <= ? AND {NOT_FINAL} ORDER BY runnable_at, n LIMIT 1"
_ONE = f"{_CANDIDATE}run_id = ? AND runnable_at <= ? AND {NOT_FINAL}"

_START = (
    "UPDATE psych_runs SET attempt = ?, status = 'running', waiting = NULL, lease_owner = ?, "
    "lease_expires_at = ?, runnable_at = ?, next_seq = ?, updated_at = ?, claims = claims + 1 "
    "WHERE run_id = ?"
)
_RECORD_0 = "SELECT body FROM psych_records WHERE run_id = ? AND seq = 0"
_EXHAUST = (
    "UPDATE psych_runs SET status = 'failed', waiting = NULL, lease_owner = NULL, "
    "lease_expires_at = NULL, runnable_at = NULL, next_seq = ?, updated_at = ? WHERE run_id = ?"
)


def claim(
    conn: sqlite3.Connection, worker_id: str, ttl: int, run_id: str | None, max_attempts: int
) -> Claim | None:
    """Take the oldest claimable run (or only `run_id`); see `Store.claim`."""
    now = now_micros()
    while True:
        if run_id is None:
            row = conn.execute(_EXPIRED, (now, *FINAL)).fetchone()
            if row is None:
                row = conn.execute(_OLDEST, (now, *FINAL)).fetchone()
        else:
            row = conn.execute(_ONE, (run_id, now, *FINAL)).fetchone()
        if row is None:
            return None
        found, tenant, attempt, seq, claims, inbox_last = row
        if claims >= max_attempts:
            _exhaust(conn, found, attempt, claims, seq, max_attempts, now)
            if run_id is not None:
                return None
            continue
        return _start(conn, found, tenant, attempt + 1, seq, worker_id, now, now + ttl, inbox_last)


def _start(
    conn: sqlite3.Connection,
    run_id: str,
    tenant: str,
    attempt: int,
    seq: int,
    worker_id: str,
    now: int,
    expires: int,
    inbox_last: int,
) -> Claim:
    record = started_record(run_id, seq, attempt, from_micros(now), worker_id)
    conn.execute(INSERT_RECORD, (run_id, seq, attempt, None, record.model_dump_json()))
    conn.execute(_START, (attempt, worker_id, expires, expires, seq + 1, now, run_id))
    # A run's first claim brings its log (record 0 alone), sparing the attempt a read.
    found = conn.execute(_RECORD_0, (run_id,)).fetchone() if seq == 1 else None
    log = first_claim_log(None if found is None else found[0])
    return Claim(run_id, tenant, attempt, from_micros(expires), record, inbox_last, log)


def _exhaust(
    conn: sqlite3.Connection,
    run_id: str,
    attempt: int,
    claims: int,
    seq: int,
    max_attempts: int,
    now: int,
) -> None:
    record = exhausted_record(run_id, seq, attempt, from_micros(now), claims, max_attempts)
    conn.execute(INSERT_RECORD, (run_id, seq, attempt, None, record.model_dump_json()))
    conn.execute(_EXHAUST, (seq + 1, now, run_id))


def renew(conn: sqlite3.Connection, run_id: str, attempt: int, ttl: int) -> tuple[int, int]:
    """Extend the current attempt's lease; returns (expiry, inbox_last)."""
    inbox_last = _check_lease(conn, run_id, attempt)
    expires = now_micros() + ttl
    conn.execute(
        "UPDATE psych_runs SET lease_expires_at = ?, runnable_at = ? WHERE run_id = ?",
        (expires, expires, run_id),
    )
    return expires, inbox_last


def release(conn: sqlite3.Connection, run_id: str, attempt: int, runnable_at: int | None) -> None:
    """Give up the current attempt's lease; claimable again at `runnable_at` (None: now)."""
    _check_lease(conn, run_id, attempt)
    conn.execute(
        "UPDATE psych_runs SET lease_owner = NULL, lease_expires_at = NULL, runnable_at = ?, "
        "status = 'queued', waiting = NULL, updated_at = ? WHERE run_id = ?",
        (NEVER_BEFORE_MICROS if runnable_at is None else runnable_at, now_micros(), run_id),
    )


def _check_lease(conn: sqlite3.Connection, run_id: str, attempt: int) -> int:
    """The run's inbox_last, when `attempt` holds the lease; else why it does not."""
    row = conn.execute(
        "SELECT attempt, lease_owner, inbox_last FROM psych_runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None:
        raise RunNotFound(run_id)
    current, owner, inbox_last = row
    if attempt != current or owner is None:
        raise LeaseLost(run_id, attempt, current)
    return int(inbox_last)

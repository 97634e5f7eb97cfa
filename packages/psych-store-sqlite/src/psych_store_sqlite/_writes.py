"""The store's write transactions, as plain functions of a connection.

Each runs inside `write_transaction` (``BEGIN IMMEDIATE``) on the writer lane, so what it
reads cannot change before it writes, in this process or any other. The clock is read
after the write lock is held, so lease times follow commit order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from psych_core import (
    FINAL_STATUSES,
    AttemptStarted,
    Batch,
    Claim,
    Conflict,
    IdempotencyConflict,
    InboxPending,
    LeaseLost,
    NewRun,
    Record,
    RecordTooLarge,
    RunFailed,
    RunNotFound,
    StoreError,
    StoreLimits,
)
from psych_store_sqlite._reads import FINAL, NOT_FINAL
from psych_store_sqlite._time import NEVER_BEFORE_MICROS, from_micros, to_micros

_INSERT_RECORD = (
    "INSERT INTO psych_records (run_id, seq, attempt, batch_id, body) VALUES (?, ?, ?, ?, ?)"
)

Clock = Callable[[], int]
"""Microseconds since the epoch, read inside the transaction."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """A batch's records as JSON text, checked before the transaction and judged inside it.

    The problems are raised only after the fence check, because `LeaseLost` comes first.
    """

    texts: tuple[str, ...]
    shape_error: StoreError | None
    size_error: RecordTooLarge | None


def encode(run_id: str, batch: Batch, limits: StoreLimits) -> Encoded:
    """Serialise the batch and find what is wrong with it, without touching the database."""
    records = batch.records
    first = records[0].seq if records else 0
    shape_error: StoreError | None = None
    for offset, record in enumerate(records):
        if record.seq != first + offset or record.run_id != run_id:
            shape_error = StoreError(
                f"run {run_id}: batch {batch.batch_id} is not a contiguous run of this log "
                f"(record {offset} has run {record.run_id}, seq {record.seq})"
            )
            break
    texts = tuple(record.model_dump_json() for record in records)
    size_error: RecordTooLarge | None = None
    total = 0
    for record, text in zip(records, texts, strict=True):
        size = len(text.encode())
        total += size
        if size > limits.max_record_bytes and size_error is None:
            size_error = RecordTooLarge(run_id, record.seq, size, limits.max_record_bytes, "record")
    if size_error is None and len(texts) > limits.max_append_records:
        size_error = RecordTooLarge(
            run_id, first, len(texts), limits.max_append_records, "batch record count"
        )
    if size_error is None and total > limits.max_append_bytes:
        size_error = RecordTooLarge(run_id, first, total, limits.max_append_bytes, "batch")
    return Encoded(texts, shape_error, size_error)


def create_run(
    conn: sqlite3.Connection,
    run: NewRun,
    first: Record,
    text: str,
    limits: StoreLimits,
    clock: Clock,
) -> tuple[str, bool]:
    """Insert the run row and record 0; see `Store.create_run`."""
    if run.idempotency_key is not None:
        held = conn.execute(
            "SELECT run_id, request_hash FROM psych_runs WHERE tenant = ? AND idempotency_key = ?",
            (run.tenant, run.idempotency_key),
        ).fetchone()
        if held is not None:
            if held[1] != run.request_hash:
                raise IdempotencyConflict(run.idempotency_key, held[0])
            return str(held[0]), False
    if conn.execute("SELECT 1 FROM psych_runs WHERE run_id = ?", (run.run_id,)).fetchone():
        raise Conflict(run.run_id, 0)
    if first.seq != 0 or first.run_id != run.run_id:
        raise StoreError(
            f"run {run.run_id}: the first record must be seq 0 of this run, not seq "
            f"{first.seq} of run {first.run_id}"
        )
    size = len(text.encode())
    if size > limits.max_record_bytes:
        raise RecordTooLarge(run.run_id, 0, size, limits.max_record_bytes, "record")
    now = clock()
    try:
        conn.execute(
            """
            INSERT INTO psych_runs (
                run_id, tenant, agent, spec_version, status, parent_run_id, attempt,
                runnable_at, next_seq, idempotency_key, request_hash, created_at, updated_at
            ) VALUES (?, ?, ?, ?, 'queued', ?, 0, ?, 1, ?, ?, ?, ?)
            """,
            (
                run.run_id,
                run.tenant,
                run.agent,
                run.spec_version,
                run.parent_run_id,
                NEVER_BEFORE_MICROS,
                run.idempotency_key,
                run.request_hash,
                now,
                now,
            ),
        )
    except sqlite3.IntegrityError:
        raise Conflict(run.run_id, 0) from None
    conn.execute(_INSERT_RECORD, (run.run_id, 0, first.attempt, None, text))
    return run.run_id, True


def append(
    conn: sqlite3.Connection,
    run_id: str,
    attempt: int,
    batch: Batch,
    encoded: Encoded,
    clock: Clock,
) -> int:
    """Add a batch; see `Store.append` for the checks and their order. Returns inbox_last."""
    row = conn.execute(
        "SELECT attempt, next_seq, status, lease_owner, inbox_last FROM psych_runs "
        "WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        raise RunNotFound(run_id)
    current, next_seq, status, owner, inbox_last = row
    if attempt != current:
        raise LeaseLost(run_id, attempt, current)
    if not batch.records:
        return int(inbox_last)
    first = batch.records[0].seq
    if first < next_seq:
        stored = conn.execute(
            "SELECT batch_id, attempt FROM psych_records WHERE run_id = ? AND seq = ?",
            (run_id, first),
        ).fetchone()
        if stored is not None and tuple(stored) == (batch.batch_id, attempt):
            return int(inbox_last)
    if status in FINAL_STATUSES or owner is None:
        raise LeaseLost(run_id, attempt, current)
    if first != next_seq:
        raise Conflict(run_id, first)
    if encoded.shape_error is not None:
        raise encoded.shape_error
    if encoded.size_error is not None:
        raise encoded.size_error
    index = batch.index
    if index.releases_lease and batch.inbox_seen < inbox_last:
        raise InboxPending(run_id, batch.inbox_seen, inbox_last)
    try:
        conn.executemany(
            _INSERT_RECORD,
            [
                (run_id, record.seq, attempt, batch.batch_id if i == 0 else None, text)
                for i, (record, text) in enumerate(zip(batch.records, encoded.texts, strict=True))
            ],
        )
    except sqlite3.IntegrityError:
        raise Conflict(run_id, first) from None
    last = first + len(encoded.texts)
    now = clock()
    if index.releases_lease:
        due = None if index.due_at is None else to_micros(index.due_at, "due_at")
        conn.execute(
            "UPDATE psych_runs SET status = ?, waiting = ?, next_seq = ?, updated_at = ?, "
            "lease_owner = NULL, lease_expires_at = NULL, runnable_at = ? WHERE run_id = ?",
            (index.status, index.waiting, last, now, due, run_id),
        )
    else:
        conn.execute(
            "UPDATE psych_runs SET status = ?, waiting = ?, next_seq = ?, updated_at = ? "
            "WHERE run_id = ?",
            (index.status, index.waiting, last, now, run_id),
        )
    return int(inbox_last)


def claim(
    conn: sqlite3.Connection,
    worker_id: str,
    ttl: int,
    run_id: str | None,
    max_attempts: int,
    clock: Clock,
) -> Claim | None:
    """Take the oldest claimable run (or only `run_id`); see `Store.claim`."""
    now = clock()
    while True:
        if run_id is None:
            row = conn.execute(
                "SELECT run_id, tenant, attempt, next_seq FROM psych_runs "
                f"WHERE runnable_at <= ? AND {NOT_FINAL} ORDER BY runnable_at, n LIMIT 1",
                (now, *FINAL),
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT run_id, tenant, attempt, next_seq FROM psych_runs "
                f"WHERE run_id = ? AND runnable_at <= ? AND {NOT_FINAL}",
                (run_id, now, *FINAL),
            ).fetchone()
        if row is None:
            return None
        found, tenant, attempts, next_seq = row
        if attempts >= max_attempts:
            _exhaust(conn, found, attempts, next_seq, max_attempts, now)
            if run_id is not None:
                return None
            continue
        return _start(conn, found, tenant, attempts + 1, next_seq, worker_id, now, now + ttl)


def _start(
    conn: sqlite3.Connection,
    run_id: str,
    tenant: str,
    attempt: int,
    seq: int,
    worker_id: str,
    now: int,
    expires: int,
) -> Claim:
    record = Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=from_micros(now),
        body=AttemptStarted(worker_id=worker_id),
    )
    conn.execute(_INSERT_RECORD, (run_id, seq, attempt, None, record.model_dump_json()))
    conn.execute(
        "UPDATE psych_runs SET attempt = ?, status = 'running', waiting = NULL, lease_owner = ?, "
        "lease_expires_at = ?, runnable_at = ?, next_seq = ?, updated_at = ? WHERE run_id = ?",
        (attempt, worker_id, expires, expires, seq + 1, now, run_id),
    )
    return Claim(run_id, tenant, attempt, from_micros(expires), record)


def _exhaust(
    conn: sqlite3.Connection, run_id: str, attempts: int, seq: int, max_attempts: int, now: int
) -> None:
    record = Record(
        run_id=run_id,
        seq=seq,
        attempt=attempts,
        at=from_micros(now),
        body=RunFailed(
            reason="attempts_exhausted",
            error=attempts_exhausted_message(run_id, attempts, max_attempts),
        ),
    )
    conn.execute(_INSERT_RECORD, (run_id, seq, attempts, None, record.model_dump_json()))
    conn.execute(
        "UPDATE psych_runs SET status = 'failed', waiting = NULL, lease_owner = NULL, "
        "lease_expires_at = NULL, runnable_at = NULL, next_seq = ?, updated_at = ? "
        "WHERE run_id = ?",
        (seq + 1, now, run_id),
    )


def attempts_exhausted_message(run_id: str, attempts: int, max_attempts: int) -> str:
    """The error of the `RunFailed` a claim writes for a run out of attempts."""
    return (
        f"run {run_id} was claimed {attempts} times without finishing (max_attempts="
        f"{max_attempts}); each attempt stopped (a crash, or a lease that expired) before the "
        "run ended. Read its log to see where the attempts stopped, fix the cause, and "
        "dispatch the request again."
    )


def renew(
    conn: sqlite3.Connection, run_id: str, attempt: int, ttl: int, clock: Clock
) -> tuple[int, int]:
    """Extend the current attempt's lease; returns (expiry, inbox_last)."""
    inbox_last = _check_lease(conn, run_id, attempt)
    expires = clock() + ttl
    conn.execute(
        "UPDATE psych_runs SET lease_expires_at = ?, runnable_at = ? WHERE run_id = ?",
        (expires, expires, run_id),
    )
    return expires, inbox_last


def release(
    conn: sqlite3.Connection, run_id: str, attempt: int, runnable_at: int | None, clock: Clock
) -> None:
    """Give up the current attempt's lease; claimable again at `runnable_at` (None: now)."""
    _check_lease(conn, run_id, attempt)
    conn.execute(
        "UPDATE psych_runs SET lease_owner = NULL, lease_expires_at = NULL, runnable_at = ?, "
        "status = 'queued', waiting = NULL, updated_at = ? WHERE run_id = ?",
        (NEVER_BEFORE_MICROS if runnable_at is None else runnable_at, clock(), run_id),
    )


def _check_lease(conn: sqlite3.Connection, run_id: str, attempt: int) -> int:
    row = conn.execute(
        "SELECT attempt, lease_owner, inbox_last FROM psych_runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None:
        raise RunNotFound(run_id)
    current, owner, inbox_last = row
    if attempt != current or owner is None:
        raise LeaseLost(run_id, attempt, current)
    return int(inbox_last)


def delete_run(conn: sqlite3.Connection, tenant: str, run_id: str) -> bool:
    """Delete the run row, its records and (with the row) its idempotency key."""
    row = conn.execute(
        "SELECT 1 FROM psych_runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)
    ).fetchone()
    if row is None:
        return False
    conn.execute("DELETE FROM psych_records WHERE run_id = ?", (run_id,))
    conn.execute("DELETE FROM psych_runs WHERE run_id = ?", (run_id,))
    return True


def put_spec(conn: sqlite3.Connection, version: str, spec_json: str) -> None:
    """Keep the spec under its version; a version already stored keeps its first JSON."""
    conn.execute(
        "INSERT INTO psych_specs (version, spec_json) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (version, spec_json),
    )

"""The store's other write transactions: admitting a run, deleting one, keeping a spec.

Each runs inside `write_transaction` (``BEGIN IMMEDIATE``) on the writer lane, so what it
reads cannot change before it writes, in this process or any other.
"""

from __future__ import annotations

import sqlite3

from psych_core import Conflict, IdempotencyConflict, NewRun, Record, StoreError
from psych_store_sqlite._append import INSERT_RECORD
from psych_store_sqlite._time import NEVER_BEFORE_MICROS, now_micros


def create_run(
    conn: sqlite3.Connection, run: NewRun, first: Record, text: str, problem: StoreError | None
) -> tuple[str, bool]:
    """Insert the run row and record 0; see `Store.create_run`. `problem` is what
    `check_first_record` found, raised unless the key or the run id decides first."""
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
    if problem is not None:
        raise problem
    now = now_micros()
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
    conn.execute(INSERT_RECORD, (run.run_id, 0, first.attempt, None, text))
    return run.run_id, True


def delete_run(conn: sqlite3.Connection, tenant: str, run_id: str) -> bool:
    """Delete the run row, its records, its inbox and (with the row) its idempotency key."""
    row = conn.execute(
        "SELECT 1 FROM psych_runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)
    ).fetchone()
    if row is None:
        return False
    conn.execute("DELETE FROM psych_records WHERE run_id = ?", (run_id,))
    conn.execute("DELETE FROM psych_inbox WHERE run_id = ?", (run_id,))
    conn.execute("DELETE FROM psych_runs WHERE run_id = ?", (run_id,))
    return True


def put_spec(conn: sqlite3.Connection, version: str, spec_json: str) -> None:
    """Keep the spec under its version; a version already stored keeps its first JSON."""
    conn.execute(
        "INSERT INTO psych_specs (version, spec_json) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (version, spec_json),
    )

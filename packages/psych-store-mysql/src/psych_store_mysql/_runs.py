"""Runs as a whole: `create_run` and `delete_run` (two round trips each: the writes, then
their ``COMMIT`` once the answers were checked, see `_transaction`), specs."""

from __future__ import annotations

from pymysql import err  # type: ignore[import-untyped]

from psych_core import Conflict, IdempotencyConflict, NewRun, Record, StoreError
from psych_store_mysql._driver import Connection
from psych_store_mysql._failures import errno_of
from psych_store_mysql._literals import (
    NEVER_BEFORE_SQL,
    decode,
    digest,
    identifier,
    integer,
    optional_identifier,
    text,
)
from psych_store_mysql._transaction import commit, unexpected

_DUPLICATE_KEY = 1062


async def create_run(
    conn: Connection,
    run: NewRun,
    first: Record,
    body: str,
    problem: StoreError | None,
    *,
    maybe_applied: bool,
) -> tuple[str, bool]:
    """Insert the run row and record 0, then commit; see `Store.create_run`.

    Args:
        problem: what `check_first_record` found (before anything was sent); raised unless
            the key or the run id decides first.
        maybe_applied: an earlier try's answer was lost, so a run with this id and this exact
            record 0 is that try's, and this call succeeded.
    """
    key = None if run.idempotency_key is None else digest(run.idempotency_key)
    if problem is None:
        run_id = identifier(run.run_id, "run id")
        try:
            answers = await conn.batch(
                "START TRANSACTION;\n"
                "INSERT INTO psych_runs (run_id, tenant, agent, spec_version, status, "
                "parent_run_id, runnable_at, next_seq, idempotency_key_hash, request_hash, "
                f"created_at, updated_at) VALUES ({run_id}, {identifier(run.tenant, 'tenant')}, "
                f"{identifier(run.agent, 'agent name')}, "
                f"{identifier(run.spec_version, 'spec version')}, 'queued', "
                f"{optional_identifier(run.parent_run_id, 'parent run id')}, {NEVER_BEFORE_SQL}, "
                f"1, {key or 'NULL'}, {optional_identifier(run.request_hash, 'request hash')}, "
                "UTC_TIMESTAMP(6), UTC_TIMESTAMP(6));\n"
                "INSERT INTO psych_records (run_id, seq, attempt, batch_id, body) VALUES "
                f"({run_id}, 0, {integer(first.attempt)}, NULL, {text(body)})"
            )
        except err.IntegrityError as exc:
            if errno_of(exc) != _DUPLICATE_KEY:
                raise
            await conn.one("ROLLBACK")
        else:
            checks = [("run rows written", 1, answers[1].rowcount)]
            checks.append(("records written at seq 0", 1, answers[2].rowcount))
            await commit(conn, unexpected(f"run {run.run_id}: creating it", checks))
            return run.run_id, True
    # A key or a run id is taken (or the record is refused): say which decides.
    if key is not None:
        held = await conn.one(
            "SELECT run_id, request_hash FROM psych_runs WHERE tenant = "
            f"{identifier(run.tenant, 'tenant')} AND idempotency_key_hash = {key}"
        )
        if held.rows:
            existing, request_hash = decode(held.rows[0][0]), held.rows[0][1]
            if maybe_applied and existing == run.run_id and await _is_ours(conn, run, body):
                return run.run_id, True
            if (None if request_hash is None else decode(request_hash)) != run.request_hash:
                raise IdempotencyConflict(run.idempotency_key or "", existing)
            return existing, False
    taken = await conn.one(
        f"SELECT 1 FROM psych_runs WHERE run_id = {identifier(run.run_id, 'run id')}"
    )
    if taken.rows:
        if maybe_applied and await _is_ours(conn, run, body):
            return run.run_id, True
        raise Conflict(run.run_id, 0)
    if problem is not None:
        raise problem
    raise Conflict(run.run_id, 0)  # a key or id taken by a run deleted since: ask again


async def _is_ours(conn: Connection, run: NewRun, body: str) -> bool:
    """Whether the run's record 0 is exactly `body`: an earlier try of this call wrote it."""
    stored = await conn.one(
        "SELECT body FROM psych_records WHERE run_id = "
        f"{identifier(run.run_id, 'run id')} AND seq = 0"
    )
    return bool(stored.rows) and stored.rows[0][0] == body


async def delete_run(conn: Connection, tenant: str, run_id: str) -> bool:
    """Delete the run row, its records and its inbox in one transaction, committed once the
    answers show the run deleted with its records (otherwise rolled back)."""
    run = identifier(run_id, "run id")
    answers = await conn.batch(
        "START TRANSACTION;\n"
        f"DELETE FROM psych_runs WHERE run_id = {run} AND tenant = "
        f"{identifier(tenant, 'tenant')};\n"
        "SET @psych_deleted = ROW_COUNT();\n"
        f"DELETE FROM psych_records WHERE run_id = {run} AND @psych_deleted = 1;\n"
        f"DELETE FROM psych_inbox WHERE run_id = {run} AND @psych_deleted = 1"
    )
    if answers[1].rowcount != 1:
        await conn.one("ROLLBACK")  # not this tenant's run, or no such run: nothing deleted
        return False
    # Every run has its record 0, so a deleted run row without a deleted record is a doubt.
    records = min(answers[3].rowcount, 1)
    checks = [("runs with records deleted", 1, records)]
    await commit(conn, unexpected(f"run {run_id}: deleting it", checks))
    return True


async def put_spec(conn: Connection, version: str, spec_json: str) -> None:
    """Keep the spec under its version; a version already stored keeps its first JSON."""
    literal = identifier(version, "spec version")
    await conn.one(
        f"INSERT INTO psych_specs (version, spec_json) VALUES ({literal}, {text(spec_json)}) "
        "ON DUPLICATE KEY UPDATE version = version"
    )

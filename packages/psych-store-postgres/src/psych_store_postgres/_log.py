"""A run's log: admission (`create_run`), `append` and `read`, as functions of a connection.

`append` is the hot path: ONE statement in autocommit (see `_sql`). When it writes nothing, a
second statement, with a fresh snapshot, tells which rule refused it, in the contract's order.
It is also the one path of every refusal and re-send of a group commit (`_group`), which writes
several runs' batches in one statement and leaves here whatever that statement did not write.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from psych_core import (
    FINAL_STATUSES,
    Batch,
    Conflict,
    IdempotencyConflict,
    NewRun,
    Record,
    StoreError,
    StoreLimits,
    quick_init,
)
from psych_core.ports import AppendFence, check_batch, judge_append
from psych_store_postgres._connections import Connection
from psych_store_postgres._rows import signal_json
from psych_store_postgres._sql import Sql

_RACES = 5
"""How many times a statement is sent again when it lost a race the diagnosis cannot name."""


@quick_init
@dataclass(frozen=True, slots=True)
class Encoded:
    """A batch serialised and checked before it goes out (`check_batch`); the problem is
    raised only where `judge_append` puts it, after the fence, because `LeaseLost` comes
    first."""

    bodies: tuple[bytes, ...]
    problem: StoreError | None
    notice_runs: tuple[str, ...]
    notice_keys: tuple[str, ...]
    notice_bodies: tuple[bytes, ...]


def encode(run_id: str, batch: Batch, limits: StoreLimits) -> Encoded:
    """Serialise the batch and find what is wrong with it, without touching the database."""
    checked = check_batch(run_id, batch, limits)
    return Encoded(
        bodies=checked.bodies,
        problem=checked.problem,
        notice_runs=tuple(notice.run_id for notice in batch.notify),
        notice_keys=tuple(notice.key for notice in batch.notify),
        notice_bodies=tuple(signal_json(notice.signal) for notice in batch.notify),
    )


async def append(
    conn: Connection,
    sql: Sql,
    run_id: str,
    attempt: int,
    batch: Batch,
    encoded: Encoded,
) -> int:
    """Add a batch; see `Store.append` for the checks and their order. Returns inbox_last.

    Safe to send again after a lost answer: a batch that did commit is recognised by its id at
    its first seq, and the call succeeds without writing twice.
    """
    sendable = bool(batch.records) and encoded.problem is None
    first = batch.records[0].seq if batch.records else 0
    index = batch.index
    for _ in range(_RACES):
        if sendable:
            args: list[object] = [
                run_id,
                attempt,
                first,
                len(encoded.bodies),
                batch.batch_id,
                index.status,
                index.waiting,
                index.releases_lease,
                index.due_at,
                batch.inbox_seen,
                encoded.bodies,
            ]
            if encoded.notice_runs:
                args += [encoded.notice_runs, encoded.notice_keys, encoded.notice_bodies]
                statement = sql.append_with_notices
            elif len(encoded.bodies) == 1:
                args[-1] = encoded.bodies[0]
                statement = sql.append_one
            else:
                statement = sql.append
            try:
                row = await conn.fetchrow(statement, *args)
            except asyncpg.UniqueViolationError as exc:
                # A racing signal took a notice's key after this statement's snapshot: send it
                # again, and the key is skipped like any key already used.
                if exc.constraint_name == "inbox_key":
                    continue
                raise Conflict(run_id, first) from exc
            if row is not None:
                return int(row[0])
        inbox_last = await _diagnose(conn, sql, run_id, attempt, batch, encoded, first)
        if inbox_last is not None:
            return inbox_last
        if not sendable:
            break
    raise StoreError(
        f"run {run_id}: the append of batch {batch.batch_id} at seq {first} kept losing races "
        "with other writers of this run; re-read the log and try again"
    )


async def _diagnose(
    conn: Connection,
    sql: Sql,
    run_id: str,
    attempt: int,
    batch: Batch,
    encoded: Encoded,
    first: int,
) -> int | None:
    """Raise the refusal the contract names for this batch, in its order, or return the
    inbox_last of a re-sent batch that had landed; None when nothing refuses it (a race)."""
    row = await conn.fetchrow(sql.append_diagnose, run_id, first)
    fence, stored = None, None
    if row is not None:
        leased = row["leased"] and row["status"] not in FINAL_STATUSES
        fence = AppendFence(row["attempt"], row["next_seq"], leased, int(row["inbox_last"]))
        stored = (row["batch_id"], row["batch_attempt"])
    return judge_append(
        run_id, attempt, batch, encoded.problem, fence, lambda: stored == (batch.batch_id, attempt)
    )


async def create_run(
    conn: Connection,
    sql: Sql,
    run: NewRun,
    first: Record,
    body: bytes,
    problem: StoreError | None,
    again: bool,
) -> tuple[str, bool]:
    """Insert the run row and record 0 in one statement; see `Store.create_run`.

    `problem` is what `check_first_record` found, raised unless the key or the run id decides
    first. `again` says an earlier send may have committed: a run already there with this very
    record 0 (or this key leading to this run id) is then this call's own, and reported created.
    """
    for _ in range(_RACES):
        if problem is None:
            created = await conn.fetchval(
                sql.create_run,
                run.run_id,
                run.tenant,
                run.agent,
                run.spec_version,
                run.parent_run_id,
                run.idempotency_key,
                run.request_hash,
                first.attempt,
                body,
            )
            if created:
                return run.run_id, True
        held = await conn.fetchrow(
            sql.create_run_diagnose, run.run_id, run.tenant, run.idempotency_key
        )
        assert held is not None  # a SELECT of scalar subqueries has exactly one row
        if held["key_run_id"] is not None:
            if held["key_request_hash"] != run.request_hash:
                raise IdempotencyConflict(str(run.idempotency_key), held["key_run_id"])
            mine = again and held["key_run_id"] == run.run_id
            return held["key_run_id"], mine
        if held["taken"]:
            if again and problem is None and held["first_body"] == body:
                return run.run_id, True
            raise Conflict(run.run_id, 0)
        if problem is not None:
            raise problem
        # The run or the key that stood in the way was deleted meanwhile: insert again.
    raise StoreError(
        f"run {run.run_id}: creating it kept racing with deletions of a run with the same id "
        "or idempotency key; try again"
    )


async def read(
    conn: Connection, sql: Sql, run_id: str, after_seq: int, limit: int | None
) -> list[Record]:
    """The records after `after_seq`, in seq order, at most `limit`."""
    if limit is not None and limit <= 0:
        return []
    rows = await conn.fetch(sql.read, run_id, after_seq, limit)
    return [Record.model_validate_json(row[0]) for row in rows]

"""The append: a durable step's one write, and the store's hot path.

The batch is serialised and judged on the event loop (`encode`), where the caller's own work
runs anyway; the write is one ``BEGIN IMMEDIATE`` transaction on the writer lane (`append`):
read the run row, check, insert the records, update the row. In SQLite each statement costs a
few microseconds in-process (no round trip), so folding the checks into a conditional
``UPDATE ... RETURNING`` saves nothing measurable (README, "What a step costs").
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import partial

from psych_core import (
    FINAL_STATUSES,
    Batch,
    Conflict,
    PsychError,
    Record,
    StoreError,
    StoreLimits,
    quick_init,
)
from psych_core.ports import AppendFence, check_batch, judge_append
from psych_store_sqlite._connection import each_in_a_savepoint
from psych_store_sqlite._inbox import deliver, inbox_count
from psych_store_sqlite._time import now_micros, to_micros

INSERT_RECORD = (
    "INSERT INTO psych_records (run_id, seq, attempt, batch_id, body) VALUES (?, ?, ?, ?, ?)"
)

# A step that keeps the run going: the lease stays.
_STEP = (
    "UPDATE psych_runs SET status = ?, waiting = ?, next_seq = ?, updated_at = ? WHERE run_id = ?"
)

# A step that suspends or ends the run releases the lease; a suspend also restarts the count
# that max_attempts limits.
_RELEASE = (
    "UPDATE psych_runs SET status = ?, waiting = ?, next_seq = ?, updated_at = ?, "
    "lease_owner = NULL, lease_expires_at = NULL, runnable_at = ?, "
    "claims = CASE WHEN ? THEN 0 ELSE claims END WHERE run_id = ?"
)


@quick_init
@dataclass(frozen=True, slots=True)
class Encoded:
    """A batch's records as JSON text, what is wrong with them (`check_batch`; raised inside
    the transaction, where `judge_append` puts it), and the batch's due time as kept."""

    texts: tuple[str, ...]
    problem: StoreError | None
    due_at: int | None


def encode(run_id: str, batch: Batch, limits: StoreLimits) -> Encoded:
    """Serialise the batch and find what is wrong with it, without touching the database."""
    due = batch.index.due_at
    due_at = None if due is None else to_micros(due, "due_at")
    checked = check_batch(run_id, batch, limits)
    return Encoded(checked.texts(), checked.problem, due_at)


def append(
    conn: sqlite3.Connection, run_id: str, attempt: int, batch: Batch, encoded: Encoded
) -> int:
    """Add a batch; see `Store.append` for the checks and their order. Returns inbox_last.

    Runs inside `write_transaction`, so the row it reads cannot change before it commits.
    """
    row = conn.execute(
        "SELECT attempt, next_seq, status, lease_owner, inbox_last FROM psych_runs "
        "WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    fence = None
    if row is not None:
        current, next_seq, status, owner, inbox_last = row
        leased = owner is not None and status not in FINAL_STATUSES
        fence = AppendFence(current, next_seq, leased, inbox_last)
    records = batch.records
    first = records[0].seq if records else 0
    landed = partial(_landed, conn, run_id, attempt, batch.batch_id, first)
    done = judge_append(run_id, attempt, batch, encoded.problem, fence, landed)
    if done is not None:
        return done
    assert fence is not None  # judge_append refuses a run that does not exist
    index = batch.index
    _insert(conn, run_id, attempt, batch.batch_id, records, encoded.texts)
    now = now_micros()
    if index.releases_lease:
        conn.execute(
            _RELEASE,
            (
                index.status,
                index.waiting,
                first + len(records),
                now,
                encoded.due_at,
                index.status == "waiting",
                run_id,
            ),
        )
    else:
        conn.execute(_STEP, (index.status, index.waiting, first + len(records), now, run_id))
    if batch.notify:
        deliver(conn, batch.notify, now)
        if any(notice.run_id == run_id for notice in batch.notify):
            return inbox_count(conn, run_id)
    return fence.inbox_last


def append_each(
    conn: sqlite3.Connection, appends: list[tuple[str, int, Batch, Encoded]]
) -> list[int | PsychError]:
    """Several runs' batches in one transaction (`Store.append_many`), each in a savepoint of
    its own (`each_in_a_savepoint`): a refused one is undone alone and its error is its
    outcome, the others commit together, with one ``fsync``. An error that is not a refusal
    (a sqlite error) fails the whole group, as it fails a single append."""
    outcomes: list[int | PsychError] = []
    for ok, value in each_in_a_savepoint(conn, [(append, item) for item in appends]):
        if not ok and not isinstance(value, PsychError):
            raise value
        outcomes.append(value)
    return outcomes


def _landed(conn: sqlite3.Connection, run_id: str, attempt: int, batch_id: str, first: int) -> bool:
    """Whether the batch was written already: a re-sent batch succeeds without writing."""
    stored = conn.execute(
        "SELECT batch_id, attempt FROM psych_records WHERE run_id = ? AND seq = ?",
        (run_id, first),
    ).fetchone()
    return stored is not None and tuple(stored) == (batch_id, attempt)


def _insert(
    conn: sqlite3.Connection,
    run_id: str,
    attempt: int,
    batch_id: str,
    records: tuple[Record, ...],
    texts: tuple[str, ...],
) -> None:
    first = records[0].seq
    try:
        if len(texts) == 1:
            conn.execute(INSERT_RECORD, (run_id, first, attempt, batch_id, texts[0]))
        else:
            # The batch id is kept at the first seq only: it is how a re-sent batch is known.
            conn.executemany(
                INSERT_RECORD,
                [
                    (run_id, first + offset, attempt, None if offset else batch_id, text)
                    for offset, text in enumerate(texts)
                ],
            )
    except sqlite3.IntegrityError:
        raise Conflict(run_id, first) from None

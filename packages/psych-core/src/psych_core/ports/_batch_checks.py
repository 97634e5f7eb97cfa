"""What `Store.append` and `Store.create_run` check, written once for every adapter.

Two halves, because a store finds problems before its IO and raises them after it:

- `check_batch` and `check_first_record` serialise the records (once: the JSON is what the
  store keeps, and its UTF-8 bytes are what `StoreLimits` counts) and find what is wrong
  with them, without the database: not one contiguous stretch of this run's log, or over a
  limit.
- `judge_append` applies `Store.append`'s numbered checks, in their order, to the run row
  as the store read it. What `check_batch` found is raised only at its place there (checks 5
  and 6), after the fence: a superseded attempt learns only that it lost its lease, which is
  what the runtime relies on.

A store with rules of its own (DynamoDB's item and transaction sizes) passes its problem in
with the batch's; the order stays the one here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from psych_core._errors import (
    Conflict,
    InboxPending,
    LeaseLost,
    RecordTooLarge,
    RunNotFound,
    StoreError,
)
from psych_core._quick_init import quick_init
from psych_core._records import Record
from psych_core.ports._store import Batch, NewRun, StoreLimits

_RECORD_SERIALIZER = Record.__pydantic_serializer__


def record_json(record: Record) -> bytes:
    """The record's JSON as UTF-8 bytes: exactly ``record.model_dump_json().encode()``,
    without the round trip through `str`."""
    return _RECORD_SERIALIZER.to_json(record)


@quick_init
@dataclass(frozen=True, slots=True)
class CheckedRecords:
    """Records serialised once, and the first thing wrong with them.

    Attributes:
        bodies: each record's JSON as UTF-8, in order: what the store keeps.
        total: the bytes of all the bodies together.
        problem: a `StoreError` when the records are not where they claim to be in the log,
            a `RecordTooLarge` when they are over the limits; None when they may be written.
            A store raises it where `judge_append` says, never before.
    """

    bodies: tuple[bytes, ...]
    total: int
    problem: StoreError | None

    def texts(self) -> tuple[str, ...]:
        """The bodies as text, for a store that keeps text (decoded at each call)."""
        return tuple([body.decode() for body in self.bodies])


def check_batch(run_id: str, batch: Batch, limits: StoreLimits) -> CheckedRecords:
    """Serialise the batch and find what is wrong with it, in the contract's order: not one
    contiguous stretch of `run_id`'s log, then a record over `limits.max_record_bytes` (the
    first such), then more records than `limits.max_append_records`, then more bytes than
    `limits.max_append_bytes`."""
    records = batch.records
    bodies = tuple([record_json(record) for record in records])
    total = sum(map(len, bodies))
    first = records[0].seq if records else 0
    for offset, record in enumerate(records):
        if record.seq != first + offset or record.run_id != run_id:
            shape = StoreError(
                f"run {run_id}: batch {batch.batch_id} is not a contiguous run of this log "
                f"(record {offset} has run {record.run_id}, seq {record.seq})"
            )
            return CheckedRecords(bodies, total, shape)
    return CheckedRecords(bodies, total, _over_limits(run_id, records, bodies, total, limits))


def _over_limits(
    run_id: str,
    records: tuple[Record, ...],
    bodies: tuple[bytes, ...],
    total: int,
    limits: StoreLimits,
) -> RecordTooLarge | None:
    if total > limits.max_record_bytes:  # else no record alone can be over
        for record, body in zip(records, bodies, strict=True):
            if len(body) > limits.max_record_bytes:
                return RecordTooLarge(
                    run_id, record.seq, len(body), limits.max_record_bytes, "record"
                )
    first = records[0].seq if records else 0
    if len(bodies) > limits.max_append_records:
        return RecordTooLarge(
            run_id, first, len(bodies), limits.max_append_records, "batch record count"
        )
    if total > limits.max_append_bytes:
        return RecordTooLarge(run_id, first, total, limits.max_append_bytes, "batch")
    return None


def check_first_record(run: NewRun, first: Record, limits: StoreLimits) -> CheckedRecords:
    """Serialise a run's record 0 and find what is wrong with it: not seq 0 of `run`, or
    over `limits.max_record_bytes`.

    `Store.create_run` raises the problem only when neither the idempotency key nor the run
    id decides first (a key already used returns its run; a run id taken is `Conflict`).
    """
    body = record_json(first)
    problem: StoreError | None = None
    if first.seq != 0 or first.run_id != run.run_id:
        problem = StoreError(
            f"run {run.run_id}: the first record must be seq 0 of this run, not seq "
            f"{first.seq} of run {first.run_id}"
        )
    elif len(body) > limits.max_record_bytes:
        problem = RecordTooLarge(run.run_id, 0, len(body), limits.max_record_bytes, "record")
    return CheckedRecords((body,), len(body), problem)


@quick_init
@dataclass(frozen=True, slots=True)
class AppendFence:
    """The run row as `judge_append` reads it.

    Attributes:
        attempt: the run's current attempt.
        next_seq: the seq the next record takes.
        leased: whether the current attempt holds the lease: the row has a lease owner and
            the run has not ended.
        inbox_last: the run's latest inbox entry number.
    """

    attempt: int
    next_seq: int
    leased: bool
    inbox_last: int


def judge_append(
    run_id: str,
    attempt: int,
    batch: Batch,
    problem: StoreError | None,
    run: AppendFence | None,
    landed: Callable[[], bool],
) -> int | None:
    """`Store.append`'s checks, in its order, against the run row as the store read it.

    Raises the first refusal. Returns the run's ``inbox_last`` when the batch needs no write:
    it is empty, or it was re-sent after it landed. None: the batch may be written.

    Args:
        problem: what `check_batch` found (and any rule of the store's own), or None.
        run: the run row; None when the run does not exist.
        landed: whether the record at the batch's first seq was written by a batch with this
            `batch_id` from this `attempt`; asked only when that seq is below the run's next.
    """
    if run is None:
        raise RunNotFound(run_id)
    if attempt != run.attempt:
        raise LeaseLost(run_id, attempt, run.attempt)
    if not batch.records:
        return run.inbox_last
    first = batch.records[0].seq
    if first < run.next_seq and landed():
        return run.inbox_last
    if not run.leased:
        raise LeaseLost(run_id, attempt, run.attempt)
    if first != run.next_seq:
        raise Conflict(run_id, first)
    if problem is not None:
        raise problem
    if batch.index.releases_lease and batch.inbox_seen < run.inbox_last:
        raise InboxPending(run_id, batch.inbox_seen, run.inbox_last)
    return None

"""Appends: one ``TransactWriteItems`` that updates the run row under the fence and writes the
records and the notices, or nothing.

The run row's update carries the whole fence as its condition: the attempt, a lease held,
the seq the batch starts at, and the inbox count this process last saw. When the transaction
is cancelled, the row as it was (returned with the cancellation) says which check failed, in
the order `Store.append` gives them; only a batch whose first seq is taken costs a second
read, of the record there, to tell a re-sent batch from a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psych_core import (
    FINAL_STATUSES,
    AppendResult,
    Batch,
    InboxEntry,
    Notify,
    StoreError,
    StoreUnavailable,
)
from psych_core.ports import AppendFence, check_batch, judge_append
from psych_store_dynamodb._expr import Update
from psych_store_dynamodb._layout import (
    MAX_BATCH_ID_BYTES,
    NEVER_BEFORE_TEXT,
    claim_key,
    inbox_sk,
    run_pk,
    signal_key_sk,
    to_text,
)
from psych_store_dynamodb._limits import ITEM_OVERHEAD, TRANSACTION_BYTES, TRANSACTION_ITEMS
from psych_store_dynamodb._rows import Row, n, parse_row, s
from psych_store_dynamodb._table import Hint, Table

_TRIES = 16


@dataclass(frozen=True, slots=True)
class Plan:
    """A batch as JSON text, and what is wrong with it (raised only after the fence checks,
    since `LeaseLost` and `Conflict` come first).

    Attributes:
        total: the records' UTF-8 bytes.
    """

    texts: tuple[str, ...]
    total: int
    problem: StoreError | None


def plan(table: Table, run_id: str, batch: Batch) -> Plan:
    """Serialise the batch and judge its shape and size (`check_batch`), then what only
    DynamoDB refuses, without touching the table. A naive ``due_at`` is a ValueError."""
    if batch.index.due_at is not None:
        to_text(batch.index.due_at, "batch.index.due_at")
    checked = check_batch(run_id, batch, table.limits)
    texts, total = checked.texts(), checked.total
    if checked.problem is not None:
        return Plan(texts, total, checked.problem)
    first = batch.records[0].seq if batch.records else 0
    if len(batch.batch_id.encode()) > MAX_BATCH_ID_BYTES:
        return Plan(
            texts,
            total,
            StoreError(
                f"run {run_id}: batch id {batch.batch_id[:40]!r}... is longer than "
                f"{MAX_BATCH_ID_BYTES} bytes; use a shorter id"
            ),
        )
    return Plan(texts, total, _notice_problem(table, run_id, first, batch, len(texts), total))


def _notice_problem(
    table: Table, run_id: str, first: int, batch: Batch, records: int, total: int
) -> StoreError | None:
    if not batch.notify:
        return None
    groups: dict[str, set[str]] = {}
    for notice in batch.notify:
        if notice.run_id == run_id:
            return StoreError(
                f"run {run_id}, seq {first}: a batch cannot notify its own run; it reads its "
                "own inbox (send it a signal with store.signal instead)"
            )
        groups.setdefault(notice.run_id, set()).add(notice.key)
    items = 1 + records + sum(1 + 2 * len(keys) for keys in groups.values())
    if items > TRANSACTION_ITEMS:
        return StoreError(
            f"run {run_id}, seq {first}: the batch needs {items} DynamoDB transaction items "
            f"(the run row, {records} records, and for {len(batch.notify)} notices to "
            f"{len(groups)} runs each run's row and two items per notice), over DynamoDB's "
            f"{TRANSACTION_ITEMS}; append fewer records or notices at once"
        )
    sizes = [len(_entry_json(notice, 0, table).encode()) for notice in batch.notify]
    for notice, size in zip(batch.notify, sizes, strict=True):
        if size > table.limits.max_record_bytes:
            return StoreError(
                f"run {run_id}, seq {first}: the notice for run {notice.run_id} (key "
                f"{notice.key!r}) is {size} bytes as an inbox entry, over this store's limit "
                f"of {table.limits.max_record_bytes}; send large content by reference"
            )
    if total + sum(sizes) + items * ITEM_OVERHEAD > TRANSACTION_BYTES:
        return StoreError(
            f"run {run_id}, seq {first}: the batch and its notices come to about "
            f"{total + sum(sizes) + items * ITEM_OVERHEAD} bytes, over DynamoDB's "
            f"{TRANSACTION_BYTES} per transaction; append fewer or smaller records at once"
        )
    return None


def _entry_json(notice: Notify, number: int, table: Table) -> str:
    entry = InboxEntry(
        run_id=notice.run_id,
        number=max(number, 1),
        key=notice.key,
        signal=notice.signal,
        at=table.clock(),
    )
    return entry.model_dump_json()


async def judge(
    table: Table,
    run_id: str,
    attempt: int,
    batch: Batch,
    row: Row | None,
    problem: StoreError | None,
) -> AppendResult | None:
    """Apply `Store.append`'s checks (`judge_append`), in their order, to the row as it is.

    Raises the first that fails; returns the result of a batch that needs no write (an empty
    one, or one re-sent after it landed); None when the batch may be written.
    """
    fence, stored = None, None
    if row is not None:
        run = row.run
        fence = AppendFence(run.attempt, run.next_seq, row.leased, run.inbox_last)
        first = batch.records[0].seq if batch.records else run.next_seq
        if first < run.next_seq and attempt == run.attempt:
            # Read ahead what judge_append asks `landed` only then (a superseded attempt is
            # refused first): the read cannot wait inside it, and a billed read is spared.
            stored = await table.batch_at(run_id, first)
    done = judge_append(
        run_id, attempt, batch, problem, fence, lambda: stored == (batch.batch_id, attempt)
    )
    return None if done is None else AppendResult(done)


@dataclass
class _Target:
    """A run that notices go to, as last read, and the notices still to deliver."""

    run_id: str
    row: Row | None
    notices: list[Notify] = field(default_factory=list)

    @property
    def deliverable(self) -> bool:
        return self.row is not None and not self.row.ended and bool(self.notices)


async def append(table: Table, run_id: str, attempt: int, batch: Batch) -> AppendResult:
    """Add a batch in one transaction; see `Store.append` for the checks and their order."""
    return await append_planned(table, run_id, attempt, batch, plan(table, run_id, batch))


def ready_hint(table: Table, run_id: str, batch: Batch) -> Hint | None:
    """The hint a batch with records is written on at once, with no read first; None when its
    row must be read and judged first: this process does not know the run, or the batch gives
    up the lease while the inbox holds more than it has seen (`judge` tells whether that is
    `InboxPending` or an earlier refusal)."""
    hint = table.hints.get(run_id)
    if hint is None or (batch.index.releases_lease and hint.inbox_last > batch.inbox_seen):
        return None
    return hint


async def append_planned(
    table: Table, run_id: str, attempt: int, batch: Batch, laid: Plan
) -> AppendResult:
    """`append` of a batch `plan` has serialised and checked: the one path of every append."""
    if not batch.records or laid.problem is not None:
        row = await table.get_row(run_id)
        done = await judge(table, run_id, attempt, batch, row, laid.problem)
        if done is None:  # pragma: no cover - judge raises the problem
            raise AssertionError("a refused batch passed every check")
        return done
    hint = ready_hint(table, run_id, batch)
    if hint is None:
        row = await table.get_row(run_id)
        done = await judge(table, run_id, attempt, batch, row, None)
        if done is not None:
            return done
        assert row is not None
        hint = Hint(row.created_text, row.run.inbox_last)
    targets = await _targets(table, batch.notify)
    for _ in range(_TRIES):
        items, spans = _transaction(table, run_id, attempt, batch, laid.texts, hint, targets)
        reasons = await table.conn.transact(items)
        if reasons is None:
            table.hints.put(run_id, hint.created_text, hint.inbox_last)
            return AppendResult(hint.inbox_last)
        own = reasons[0]
        if own.condition_failed:
            row = parse_row(own.item) if own.item is not None else await table.get_row(run_id)
            done = await judge(table, run_id, attempt, batch, row, None)
            if done is not None:
                return done
            assert row is not None
            hint = Hint(row.created_text, row.run.inbox_last)  # a signal arrived: go again
            continue
        if any(reason.condition_failed for reason in reasons[1 : 1 + len(laid.texts)]):
            row = await table.get_row(run_id)
            done = await judge(table, run_id, attempt, batch, row, None)
            if done is not None:
                return done
            raise StoreError(
                f"run {run_id}: a record at seq {batch.records[0].seq} or after exists, but "
                "the run row says that seq is free; the table was changed outside this store"
            )
        for target, (start, count) in zip(targets, spans, strict=True):
            await _refresh(table, target, reasons[start : start + count])
    raise StoreUnavailable(
        f"run {run_id}: the append kept meeting concurrent changes to the runs it notifies "
        f"({_TRIES} tries); send it again"
    )


async def _targets(table: Table, notices: tuple[Notify, ...]) -> list[_Target]:
    if not notices:
        return []
    rows = await table.get_rows(notice.run_id for notice in notices)
    targets: dict[str, _Target] = {}
    for notice in notices:
        target = targets.setdefault(notice.run_id, _Target(notice.run_id, rows.get(notice.run_id)))
        if all(other.key != notice.key for other in target.notices):
            target.notices.append(notice)
    return list(targets.values())


async def _refresh(table: Table, target: _Target, reasons: list[Any]) -> None:
    """Learn why a target's items were refused: its row changed, or a key was used already."""
    if not reasons or not any(reason.condition_failed for reason in reasons):
        return
    row_reason, entries = reasons[0], len(target.notices)
    key_reasons = reasons[1 + entries :]
    used = {
        notice.key
        for notice, reason in zip(target.notices, key_reasons, strict=False)
        if reason.condition_failed
    }
    target.notices = [notice for notice in target.notices if notice.key not in used]
    if row_reason.condition_failed:
        target.row = None if row_reason.item is None else parse_row(row_reason.item)
    elif any(reason.condition_failed for reason in reasons[1 : 1 + entries]):
        target.row = await table.get_row(target.run_id)


def _transaction(
    table: Table,
    run_id: str,
    attempt: int,
    batch: Batch,
    texts: tuple[str, ...],
    hint: Hint,
    targets: list[_Target],
) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """The transaction's items, and where each target's items start and how many there are."""
    items = writes(table, run_id, attempt, batch, texts, hint)
    spans: list[tuple[int, int]] = []
    for target in targets:
        start = len(items)
        if target.deliverable:
            items.extend(_deliver(table, target))
        spans.append((start, len(items) - start))
    return items, spans


def writes(
    table: Table, run_id: str, attempt: int, batch: Batch, texts: tuple[str, ...], hint: Hint
) -> list[dict[str, Any]]:
    """A batch's own items: its run row's update under the fence (first), then a put of each
    record, refused if its seq is taken."""
    now = to_text(table.clock(), "now")
    first = batch.records[0].seq
    items = [_own_update(table, run_id, attempt, batch, first, len(texts), hint, now)]
    for offset, text in enumerate(texts):
        items.append(
            table.record_put(
                run_id, first + offset, attempt, text, batch.batch_id if offset == 0 else None
            )
        )
    return items


def _own_update(
    table: Table,
    run_id: str,
    attempt: int,
    batch: Batch,
    first: int,
    count: int,
    hint: Hint,
    now: str,
) -> dict[str, Any]:
    index = batch.index
    update = Update()
    update.set("next_seq", n(first + count))
    update.set("status", s(index.status))
    update.set("updated_at", s(now))
    update.set_or_remove("waiting", None if index.waiting is None else s(index.waiting))
    if index.releases_lease:
        update.remove("lease_owner", "lease_expires_at")
        if index.due_at is not None and index.status not in FINAL_STATUSES:
            due = to_text(index.due_at, "batch.index.due_at")
            key = claim_key(due, hint.created_text)
            update.set("runnable_at", s(due))
            update.set("claim_at", s(key))
            update.set_or_remove("wake_at", s(key) if index.status == "waiting" else None)
        else:
            update.remove("runnable_at", "claim_at", "wake_at")
    if index.status == "waiting":
        update.set("claims", n(0))
    update.equal("attempt", n(attempt))
    update.exists("lease_owner")
    update.equal("next_seq", n(first))
    update.equal("inbox_last", n(hint.inbox_last))
    return {
        "Update": {
            "TableName": table.name,
            "Key": table.row_key(run_id),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **update.fields(),
        }
    }


def _deliver(table: Table, target: _Target) -> list[dict[str, Any]]:
    """The items that add a target's notices to its inbox, as `signal` would."""
    assert target.row is not None
    row = target.row
    last = row.run.inbox_last
    update = Update()
    update.set("inbox_last", n(last + len(target.notices)))
    wake(update, row)
    update.equal("inbox_last", n(last))
    update.equal("status", s(row.run.status))
    items: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table.name,
                "Key": table.row_key(target.run_id),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                **update.fields(),
            }
        }
    ]
    for number, notice in enumerate(target.notices, start=last + 1):
        items.append(
            {
                "Put": table.put_new(
                    entry_item(target.run_id, number, _entry_json(notice, number, table))
                )
            }
        )
    for number, notice in enumerate(target.notices, start=last + 1):
        items.append({"Put": table.put_new(key_item(target.run_id, notice.key, number))})
    return items


def wake(update: Update, row: Row) -> None:
    """Make a waiting run claimable at once (a signal or a notice arrived)."""
    if row.run.status == "waiting":
        key = claim_key(NEVER_BEFORE_TEXT, row.created_text)
        update.set("runnable_at", s(NEVER_BEFORE_TEXT))
        update.set("claim_at", s(key))
        update.set("wake_at", s(key))


def entry_item(run_id: str, number: int, body: str) -> dict[str, Any]:
    """An inbox entry's item: the `InboxEntry` JSON, by number."""
    return {"pk": s(run_pk(run_id)), "sk": s(inbox_sk(number)), "body": s(body)}


def key_item(run_id: str, key: str, number: int) -> dict[str, Any]:
    """The item that marks a signal key as used for the run's life."""
    return {
        "pk": s(run_pk(run_id)),
        "sk": s(signal_key_sk(key)),
        "key": s(key),
        "number": n(number),
    }

"""Group commit (`Store.append_many`): several runs' appends in one ``TransactWriteItems``,
each fenced exactly as `append` fences it alone.

A group's transaction carries the appends `append` would write at once, with no read first:
a batch with records and nothing wrong with them (`plan`), to a run this process knows
(`ready_hint`), with no notices (delivering them reads the runs notified first). Each brings
the very items `append` sends (`writes`): its run row's update under the fence, then its
records. The runs differ, so no two items of a transaction address one item of the table. A
group over DynamoDB's 100 items or 4 MB is packed into several transactions, sent at once; an
append left alone in one is sent by `append`. Every other append goes through `append` from
the start, beside the group.

- A transaction that commits wrote every append in it, each with the inbox count its row's
  condition checked: that is its result, and the hint is kept, as `append` keeps it.
- A cancelled transaction wrote nothing, and says why item by item. An append one of whose
  items failed its condition goes through `append`, its hint forgotten, so that its row is
  read and judged first: `append` names the refusal, recognises a re-sent batch, or writes
  on the inbox count it learned. The others were not at fault: they go again together.
- A transaction that fails otherwise (`StoreUnavailable` after botocore's retries, its answer
  lost, or one DynamoDB refused as a whole) may or may not have committed: every append in it
  goes through `append`, which recognises a batch that had landed by its ``batch_id`` and
  writes it once.

So the group adds no rule of its own: every refusal is the one `append` gives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psych_core import Append, AppendResult, PsychError
from psych_store_dynamodb._append import Plan, append_planned, plan, ready_hint, writes
from psych_store_dynamodb._client import Reason
from psych_store_dynamodb._limits import ITEM_OVERHEAD, TRANSACTION_BYTES, TRANSACTION_ITEMS
from psych_store_dynamodb._table import Hint, Table

type Outcome = AppendResult | PsychError
"""What `append_many` says of one append: its result, or the refusal `append` raises."""


@dataclass(frozen=True, slots=True)
class Member:
    """An append that goes in a group's transaction.

    Attributes:
        position: where its outcome goes in the caller's list.
        hint: the run as this process last saw it: its row's update expects that inbox count.
        items: what `append` would send for it: the run row's update, then its records.
        size: its items' bytes at most: the records' JSON, and `ITEM_OVERHEAD` per item for
            keys, names and the row's attributes.
    """

    position: int
    run_id: str
    hint: Hint
    items: list[dict[str, Any]]
    size: int


async def append_many(table: Table, appends: Sequence[Append]) -> list[Outcome]:
    """Each append's outcome, in the caller's order; see the module docstring.

    Every batch is planned first, so a naive ``due_at`` is a ValueError before anything is
    written.
    """
    plans = [plan(table, one.run_id, one.batch) for one in appends]
    outcomes: list[Outcome | None] = [None] * len(appends)

    async def alone(position: int) -> None:
        one = appends[position]
        try:
            outcomes[position] = await append_planned(
                table, one.run_id, one.attempt, one.batch, plans[position]
            )
        except PsychError as refused:
            outcomes[position] = refused

    async def together(cut: list[Member], tasks: asyncio.TaskGroup) -> None:
        while len(cut) > 1:
            try:
                reasons = await table.conn.transact([item for one in cut for item in one.items])
            except PsychError:  # it may have committed: `append` recognises what landed
                break
            if reasons is None:
                for one in cut:
                    table.hints.put(one.run_id, one.hint.created_text, one.hint.inbox_last)
                    outcomes[one.position] = AppendResult(one.hint.inbox_last)
                return
            faulty, cut = at_fault(cut, reasons)
            if not faulty:  # no condition failed, yet it was refused: each goes alone
                break
            for one in faulty:
                table.hints.drop(one.run_id)  # `append` reads its row and judges it first
                tasks.create_task(alone(one.position))
        for one in cut:
            tasks.create_task(alone(one.position))

    cuts = [cut for cut in packed(members(table, appends, plans)) if len(cut) > 1]
    grouped = {one.position for cut in cuts for one in cut}
    apart = [position for position in range(len(appends)) if position not in grouped]
    if len(apart) == 1 and not cuts:
        await alone(apart[0])  # a lone append: no task, no group
    else:
        async with asyncio.TaskGroup() as tasks:
            for cut in cuts:
                tasks.create_task(together(cut, tasks))
            for position in apart:
                tasks.create_task(alone(position))
    settled = [outcome for outcome in outcomes if outcome is not None]
    assert len(settled) == len(appends)  # every task has settled its position
    return settled


def members(table: Table, appends: Sequence[Append], plans: Sequence[Plan]) -> list[Member]:
    """The appends that may go in a group's transaction, in the caller's order."""
    found: list[Member] = []
    for position, (one, laid) in enumerate(zip(appends, plans, strict=True)):
        batch = one.batch
        if not batch.records or laid.problem is not None or batch.notify:
            continue
        hint = ready_hint(table, one.run_id, batch)
        if hint is None:
            continue
        items = writes(table, one.run_id, one.attempt, batch, laid.texts, hint)
        size = laid.total + len(items) * ITEM_OVERHEAD
        found.append(Member(position, one.run_id, hint, items, size))
    return found


def packed(grouped: Sequence[Member]) -> list[list[Member]]:
    """`grouped` packed into transactions of at most `TRANSACTION_ITEMS` items and
    `TRANSACTION_BYTES` bytes, each member in the first with room (one append always fits
    alone: the store's limits say so), in the caller's order within each.

    The bytes are an estimate (`Member.size`): a transaction DynamoDB still finds too large
    (run rows with unusually long attributes) is refused whole, and its appends go alone.
    """
    cuts: list[list[Member]] = []
    used: list[tuple[int, int]] = []  # each cut's items and bytes
    for member in grouped:
        for index, (count, size) in enumerate(used):
            if (
                count + len(member.items) <= TRANSACTION_ITEMS
                and size + member.size <= TRANSACTION_BYTES
            ):
                cuts[index].append(member)
                used[index] = (count + len(member.items), size + member.size)
                break
        else:
            cuts.append([member])
            used.append((len(member.items), member.size))
    return cuts


def at_fault(cut: Sequence[Member], reasons: Sequence[Reason]) -> tuple[list[Member], list[Member]]:
    """The members of a cancelled transaction one of whose items failed its condition, and
    the others (refused for no fault of their own: an item of another run failed)."""
    faulty: list[Member] = []
    innocent: list[Member] = []
    start = 0
    for member in cut:
        mine = reasons[start : start + len(member.items)]
        start += len(member.items)
        (faulty if any(reason.condition_failed for reason in mine) else innocent).append(member)
    return faulty, innocent

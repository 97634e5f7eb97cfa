"""The inbox: signals numbered by the run row's count, single-use keys, wake-ups, and `due`.

A signal is one transaction of three items: the run row's ``inbox_last`` goes from n to n + 1
(on condition that it is still n and the status is still the one read, so the wake-up is
decided on the row as it is), the entry is written at number n + 1, and the key's item is
written on condition that it does not exist. Racing signals retry on the new count; a key
used already cancels the transaction, so a decision is single-use.

A run that has ended takes only a message for its next run, or the `Continued` mark, while its
row has no ``continued`` attribute: the transaction that writes the mark sets it (to the mark's
number), and an ended run's signal is written on condition that it is absent. With the count's
condition, a message racing the mark is numbered before it or refused.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from psych_core import (
    CONTINUED_KEY,
    DuplicateSignal,
    InboxEntry,
    RunFinished,
    RunNotFound,
    RunRow,
    Signal,
    StoreError,
    StoreUnavailable,
    accepted_after_end,
)
from psych_store_dynamodb._append import entry_item, key_item, wake
from psych_store_dynamodb._client import backoff
from psych_store_dynamodb._expr import Update
from psych_store_dynamodb._layout import (
    DUE_INDEX,
    INBOX_LAST,
    claimable_bound,
    inbox_sk,
    run_id_of,
    run_pk,
    signal_key_sk,
)
from psych_store_dynamodb._rows import Item, Row, n, parse_row, s
from psych_store_dynamodb._table import Table

_TRIES = 64
"""How often a signal is tried again while other signals to the same run commit first."""


async def signal(table: Table, tenant: str, run_id: str, body: Signal, key: str) -> int:
    """Add a signal to the run's inbox; see `Store.signal`."""
    row = await table.get_row(run_id)
    for attempt in range(_TRIES):
        if row is None or row.run.tenant != tenant:
            raise RunNotFound(run_id)
        if row.ended and (row.continued is not None or not accepted_after_end(body)):
            if await _key_taken(table, run_id, key):
                raise DuplicateSignal(run_id, key)
            raise RunFinished(run_id, row.run.status)
        number = row.run.inbox_last + 1
        entry = InboxEntry(run_id=run_id, number=number, key=key, signal=body, at=table.clock())
        text = entry.model_dump_json()
        size = len(text.encode())
        if size > table.limits.max_record_bytes:
            raise StoreError(
                f"run {run_id}: the signal with key {key!r} is {size} bytes as an inbox entry, "
                f"over this store's limit of {table.limits.max_record_bytes}; send large "
                "content by reference (a blob's key), not in the signal"
            )
        update = Update()
        update.set("inbox_last", n(number))
        wake(update, row)
        if key == CONTINUED_KEY:
            update.set("continued", n(number))
        update.equal("inbox_last", n(row.run.inbox_last))
        update.equal("status", s(row.run.status))
        if row.ended:
            update.absent("continued")
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": table.name,
                    "Key": table.row_key(run_id),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    **update.fields(),
                }
            },
            {"Put": table.put_new(entry_item(run_id, number, text))},
            {"Put": table.put_new(key_item(run_id, key, number))},
        ]
        reasons = await table.conn.transact(items)
        if reasons is None:
            table.hints.put(run_id, row.created_text, number)
            return number
        if reasons[2].condition_failed:
            raise DuplicateSignal(run_id, key)
        if reasons[0].condition_failed:
            row = None if reasons[0].item is None else parse_row(reasons[0].item)
            await backoff(attempt, base=0.002, cap=0.05)  # others are signalling this run
        else:
            row = await table.get_row(run_id)
    raise StoreUnavailable(
        f"run {run_id}: {_TRIES} other signals committed while this one was sent; send it again"
    )


async def _key_taken(table: Table, run_id: str, key: str) -> bool:
    """Whether the run's inbox holds a signal with `key` (read consistently)."""
    reply = await table.conn.call(
        "GetItem",
        TableName=table.name,
        Key={"pk": s(run_pk(run_id)), "sk": s(signal_key_sk(key))},
        ConsistentRead=True,
        ProjectionExpression="#pk",
        ExpressionAttributeNames={"#pk": "pk"},
    )
    return "Item" in reply


async def signals(table: Table, run_id: str, after: int) -> list[InboxEntry]:
    """The run's inbox entries numbered above `after`, in number order."""
    request: dict[str, Any] = {
        "TableName": table.name,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
        "ExpressionAttributeValues": {
            ":pk": s(run_pk(run_id)),
            ":lo": s(inbox_sk(max(after, 0) + 1)),
            ":hi": s(INBOX_LAST),
        },
        "ConsistentRead": True,
    }
    entries: list[InboxEntry] = []
    while True:
        reply = await table.conn.call("Query", **request)
        entries.extend(InboxEntry.model_validate_json(item["body"]["S"]) for item in reply["Items"])
        last = reply.get("LastEvaluatedKey")
        if last is None:
            return entries
        request["ExclusiveStartKey"] = last


async def due(table: Table, now: dt.datetime, limit: int) -> list[RunRow]:
    """Waiting runs of every tenant claimable at `now`, oldest first, at most `limit`."""
    if limit <= 0:
        return []
    bound = claimable_bound(now)

    async def shard(number: int) -> list[Item]:
        request: dict[str, Any] = {
            "TableName": table.name,
            "IndexName": DUE_INDEX,
            "KeyConditionExpression": "#s = :s AND #w < :b",
            "ExpressionAttributeNames": {"#s": "shard", "#w": "wake_at"},
            "ExpressionAttributeValues": {":s": s(str(number)), ":b": s(bound)},
            "Limit": limit,
        }
        reply = await table.conn.call("Query", **request)
        items: list[Item] = reply.get("Items", [])
        return items

    found = [
        item for items in await asyncio.gather(*map(shard, range(table.shards))) for item in items
    ]
    found.sort(key=lambda item: str(item["wake_at"]["S"]))
    ids = [run_id_of(str(item["pk"]["S"])) for item in found[:limit]]
    rows = await table.get_rows(ids)
    ready: list[Row] = [
        row
        for run_id in ids
        if (row := rows.get(run_id)) is not None
        and row.run.status == "waiting"
        and row.run.runnable_at is not None
        and row.run.runnable_at <= now
    ]
    return [row.run for row in ready]

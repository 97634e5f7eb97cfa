"""What every operation of the store shares: the connection, the clock, the limits, and the
few reads and writes they all make (a run row, a record's batch, the claim index)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from psych_core import StoreLimits
from psych_store_dynamodb._client import Connection, backoff
from psych_store_dynamodb._layout import (
    CLAIMABLE_INDEX,
    NEVER_BEFORE_TEXT,
    ROW_SK,
    claimable_bound,
    log_sk,
    run_id_of,
    run_pk,
)
from psych_store_dynamodb._rows import Item, Row, int_of, parse_row, s, text_of

_HINTS = 4096
_BATCH_GET = 100
_BATCH_WRITE = 25


@dataclass(frozen=True, slots=True)
class Hint:
    """What this process last saw of a run: its creation time (which never changes) and its
    inbox count (which only grows). Writes check the count in their condition, so a stale
    hint costs one refused write and a read, never a wrong answer."""

    created_text: str
    inbox_last: int


class Hints:
    """The hints of the runs this process touched lately, oldest forgotten first."""

    def __init__(self, size: int = _HINTS) -> None:
        self._size = size
        self._hints: OrderedDict[str, Hint] = OrderedDict()

    def get(self, run_id: str) -> Hint | None:
        return self._hints.get(run_id)

    def put(self, run_id: str, created_text: str, inbox_last: int) -> None:
        self._hints[run_id] = Hint(created_text, inbox_last)
        self._hints.move_to_end(run_id)
        while len(self._hints) > self._size:
            self._hints.popitem(last=False)

    def drop(self, run_id: str) -> None:
        self._hints.pop(run_id, None)


class Table:
    """The store's table, as its operations use it."""

    def __init__(
        self,
        conn: Connection,
        *,
        limits: StoreLimits,
        clock: Callable[[], dt.datetime],
        claim_shards: int,
    ) -> None:
        self.conn = conn
        self.name = conn.table
        self.limits = limits
        self.clock = clock
        self.shards = claim_shards
        self.hints = Hints()

    # -- run rows ---------------------------------------------------------------------------

    @staticmethod
    def row_key(run_id: str) -> dict[str, Any]:
        return {"pk": s(run_pk(run_id)), "sk": s(ROW_SK)}

    async def get_row(self, run_id: str) -> Row | None:
        """The run row, read consistently; None when the run does not exist."""
        reply = await self.conn.call(
            "GetItem", TableName=self.name, Key=self.row_key(run_id), ConsistentRead=True
        )
        item = reply.get("Item")
        if item is None:
            return None
        row = parse_row(item)
        self.hints.put(run_id, row.created_text, row.run.inbox_last)
        return row

    async def get_rows(self, run_ids: Iterable[str]) -> dict[str, Row]:
        """The rows of several runs, read consistently; missing runs are left out."""
        wanted = list(dict.fromkeys(run_ids))
        found: dict[str, Row] = {}
        for start in range(0, len(wanted), _BATCH_GET):
            keys = [self.row_key(run_id) for run_id in wanted[start : start + _BATCH_GET]]
            for item in await self._batch_get(keys):
                row = parse_row(item)
                found[row.run_id] = row
        return found

    async def _batch_get(self, keys: list[dict[str, Any]]) -> list[Item]:
        items: list[Item] = []
        pending: dict[str, Any] = {self.name: {"Keys": keys, "ConsistentRead": True}}
        attempt = 0
        while pending:
            reply = await self.conn.call("BatchGetItem", RequestItems=pending)
            items.extend(reply.get("Responses", {}).get(self.name, []))
            pending = reply.get("UnprocessedKeys") or {}
            if pending:
                await backoff(attempt)
                attempt += 1
        return items

    # -- records ----------------------------------------------------------------------------

    async def batch_at(self, run_id: str, seq: int) -> tuple[str | None, int] | None:
        """The batch id and attempt stored with the record at `seq` (None: no such record).

        Only the first record of a batch carries its id: that is how a re-sent batch is told
        from a conflict.
        """
        reply = await self.conn.call(
            "GetItem",
            TableName=self.name,
            Key={"pk": s(run_pk(run_id)), "sk": s(log_sk(seq))},
            ConsistentRead=True,
            ProjectionExpression="#b, #a",
            ExpressionAttributeNames={"#b": "batch_id", "#a": "attempt"},
        )
        item = reply.get("Item")
        if item is None:
            return None
        return text_of(item, "batch_id"), int_of(item, "attempt")

    def record_put(
        self, run_id: str, seq: int, attempt: int, body: str, batch_id: str | None = None
    ) -> dict[str, Any]:
        """A transaction item that writes a record, refused if its seq is taken."""
        item: Item = {
            "pk": s(run_pk(run_id)),
            "sk": s(log_sk(seq)),
            "attempt": {"N": str(attempt)},
            "body": s(body),
        }
        if batch_id is not None:
            item["batch_id"] = s(batch_id)
        return {"Put": self.put_new(item)}

    def put_new(self, item: Item) -> dict[str, Any]:
        """A Put of an item that must not exist yet."""
        return {
            "TableName": self.name,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": "pk"},
        }

    # -- the claim index --------------------------------------------------------------------

    async def claimable_ids(
        self, now: dt.datetime, count: int, *, timed_only: bool = False
    ) -> list[str]:
        """The runs claimable at `now`, oldest first, at most `count`, from the claim index;
        with `timed_only`, only those whose claimable time is a time, not "at once" (runs
        whose lease expired, due waits, runs released to a time).

        The index is read from every shard at once and merged. It is eventually consistent:
        callers re-check each run on its row before acting on it.
        """
        bound = claimable_bound(now)
        condition = "#s = :s AND #c < :b"
        values = {":b": s(bound)}
        if timed_only:
            # Every "at once" key is NEVER_BEFORE_TEXT|created, and "}" sorts after "|".
            condition = "#s = :s AND #c BETWEEN :a AND :b"
            values[":a"] = s(f"{NEVER_BEFORE_TEXT}|}}")

        async def shard(number: int) -> list[Item]:
            reply = await self.conn.call(
                "Query",
                TableName=self.name,
                IndexName=CLAIMABLE_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeNames={"#s": "shard", "#c": "claim_at"},
                ExpressionAttributeValues={":s": s(str(number)), **values},
                Limit=count,
            )
            items: list[Item] = reply.get("Items", [])
            return items

        found = [
            item
            for items in await asyncio.gather(*map(shard, range(self.shards)))
            for item in items
        ]
        found.sort(key=lambda item: str(item["claim_at"]["S"]))
        return [run_id_of(str(item["pk"]["S"])) for item in found[:count]]

    # -- deletion ---------------------------------------------------------------------------

    async def sweep(self, run_id: str) -> int:
        """Delete every item left in the run's partition; returns how many there were."""
        keys: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ExpressionAttributeValues": {":pk": s(run_pk(run_id))},
            "ProjectionExpression": "#pk, #sk",
            "ConsistentRead": True,
        }
        while True:
            reply = await self.conn.call("Query", **request)
            keys.extend({"pk": item["pk"], "sk": item["sk"]} for item in reply.get("Items", []))
            last = reply.get("LastEvaluatedKey")
            if last is None:
                break
            request["ExclusiveStartKey"] = last
        for start in range(0, len(keys), _BATCH_WRITE):
            pending: dict[str, Any] = {
                self.name: [
                    {"DeleteRequest": {"Key": key}} for key in keys[start : start + _BATCH_WRITE]
                ]
            }
            attempt = 0
            while pending:
                reply = await self.conn.call("BatchWriteItem", RequestItems=pending)
                pending = reply.get("UnprocessedItems") or {}
                if pending:
                    await backoff(attempt)
                    attempt += 1
        return len(keys)

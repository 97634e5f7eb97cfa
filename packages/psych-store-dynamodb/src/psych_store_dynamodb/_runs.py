"""Runs as a whole: reading a row, listing, specs, deletion, and waiting by polling."""

from __future__ import annotations

import contextlib
from typing import Any

from psych_adapter_kit import Backoff, poll_until
from psych_core import Page, RunQuery, RunRow
from psych_store_dynamodb._client import ConditionFailed
from psych_store_dynamodb._expr import Expression
from psych_store_dynamodb._layout import (
    IDEM_SK,
    PARENT_INDEX,
    SPEC_SK,
    TENANT_INDEX,
    decode_cursor,
    encode_cursor,
    idempotency_pk,
    run_id_of,
    spec_pk,
)
from psych_store_dynamodb._rows import Item, int_of, s
from psych_store_dynamodb._table import Table


async def get_run(table: Table, tenant: str, run_id: str) -> RunRow | None:
    """The run row, if the run exists in `tenant`."""
    row = await table.get_row(run_id)
    if row is None or row.run.tenant != tenant:
        return None
    return row.run


async def list_runs(table: Table, tenant: str, query: RunQuery) -> Page[RunRow]:
    """The tenant's runs, newest first; see `Store.list_runs`.

    The listing index gives the order and the page boundaries; each row is then read
    consistently, and the filters checked again on it (the index lags the rows a little).
    """
    if query.limit <= 0:
        return Page(items=())
    expression = Expression()
    if query.parent_run_id is None:
        index = TENANT_INDEX
        condition = f"{expression.name('tenant')} = {expression.value(s(tenant))}"
    else:
        index = PARENT_INDEX
        condition = (
            f"{expression.name('parent_run_id')} = {expression.value(s(query.parent_run_id))}"
        )
        expression.equal("tenant", s(tenant))
    if query.cursor is not None:
        after = decode_cursor(query.cursor)
        condition += f" AND {expression.name('created_key')} < {expression.value(s(after))}"
    if query.status is not None:
        expression.equal("status", s(query.status))
    fields = expression.fields()
    request: dict[str, Any] = {
        "TableName": table.name,
        "IndexName": index,
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": fields["ExpressionAttributeNames"],
        "ExpressionAttributeValues": fields["ExpressionAttributeValues"],
        "ScanIndexForward": False,
        "Limit": max(query.limit + 1, 100) if "ConditionExpression" in fields else query.limit + 1,
    }
    if "ConditionExpression" in fields:
        request["FilterExpression"] = fields["ConditionExpression"]
    found: list[Item] = []
    while len(found) <= query.limit:
        reply = await table.conn.call("Query", **request)
        found.extend(reply.get("Items", []))
        last = reply.get("LastEvaluatedKey")
        if last is None:
            break
        request["ExclusiveStartKey"] = last
    page = found[: query.limit]
    ids = [run_id_of(str(item["pk"]["S"])) for item in page]
    rows = await table.get_rows(ids)
    items = tuple(
        row.run
        for run_id in ids
        if (row := rows.get(run_id)) is not None
        and row.run.tenant == tenant
        and (query.status is None or row.run.status == query.status)
        and (query.parent_run_id is None or row.run.parent_run_id == query.parent_run_id)
    )
    more = len(found) > query.limit
    cursor = encode_cursor(str(page[-1]["created_key"]["S"])) if more and page else None
    return Page(items=items, next_cursor=cursor)


async def put_spec(table: Table, version: str, spec_json: str) -> None:
    """Keep a spec's JSON under its version; a version stored already is left as it is."""
    with contextlib.suppress(ConditionFailed):
        await table.conn.call(
            "PutItem",
            **table.put_new({"pk": s(spec_pk(version)), "sk": s(SPEC_SK), "spec": s(spec_json)}),
        )


async def get_spec(table: Table, version: str) -> str | None:
    """The spec JSON stored under `version`."""
    reply = await table.conn.call(
        "GetItem",
        TableName=table.name,
        Key={"pk": s(spec_pk(version)), "sk": s(SPEC_SK)},
        ConsistentRead=True,
    )
    item = reply.get("Item")
    return None if item is None else str(item["spec"]["S"])


async def delete_run(table: Table, tenant: str, run_id: str) -> bool:
    """Delete the run row and its idempotency item at once, then every other item of the run.

    From the first step on, the run does not exist for any call (every write is conditioned
    on its row). Should the second step stop half-way, the rest is swept by the next
    `delete_run` or `create_run` of the same id.
    """
    row = await table.get_row(run_id)
    if row is None:
        await table.sweep(run_id)
        return False
    if row.run.tenant != tenant:
        return False
    owner = Expression()
    owner.equal("tenant", s(tenant))
    items: list[dict[str, Any]] = [
        {"Delete": {"TableName": table.name, "Key": table.row_key(run_id), **owner.fields()}}
    ]
    if row.idempotency_key is not None:
        mine = Expression()
        mine.equal("run_id", s(run_id))
        key = {"pk": s(idempotency_pk(tenant, row.idempotency_key)), "sk": s(IDEM_SK)}
        items.append({"Delete": {"TableName": table.name, "Key": key, **mine.fields()}})
    reasons = await table.conn.transact(items)
    if reasons is not None and reasons[0].condition_failed:
        return False  # deleted by another caller meanwhile
    if reasons is not None:
        # The key no longer names this run: delete the row alone.
        await table.conn.transact(items[:1])
    table.hints.drop(run_id)
    await table.sweep(run_id)
    return True


async def wait(
    table: Table, run_id: str | None, after_seq: int, timeout: float, polling: Backoff
) -> None:
    """Poll with `polling`'s backoff until the run's log passes `after_seq` (with None:
    until some run is claimable), or `timeout` seconds pass."""

    async def ready() -> bool:
        if run_id is None:
            return bool(await table.claimable_ids(table.clock(), 1))
        reply = await table.conn.call(
            "GetItem",
            TableName=table.name,
            Key=table.row_key(run_id),
            ConsistentRead=True,
            ProjectionExpression="#n",
            ExpressionAttributeNames={"#n": "next_seq"},
        )
        item = reply.get("Item")
        return item is None or int_of(item, "next_seq") - 1 > after_seq

    await poll_until(ready, timeout, polling)

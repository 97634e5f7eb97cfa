"""Admission and reading a log: `create_run` and `read`.

`create_run` writes the run row, record 0 and (with a key) the idempotency item in one
transaction, each on condition that it does not exist yet. A cancellation says which one
existed: the key (return its run, or refuse another request), or the run id (`Conflict`).
"""

from __future__ import annotations

from typing import Any

from psych_core import Conflict, IdempotencyConflict, NewRun, Record, StoreError
from psych_core.ports import check_first_record
from psych_store_dynamodb._layout import (
    IDEM_SK,
    LOG_LAST,
    MAX_RUN_ID_BYTES,
    NEVER_BEFORE_TEXT,
    ROW_SK,
    claim_key,
    created_key,
    idempotency_pk,
    log_sk,
    run_pk,
    shard_of,
    to_text,
)
from psych_store_dynamodb._rows import Item, n, s, text_of
from psych_store_dynamodb._table import Table


async def create_run(table: Table, run: NewRun, first: Record) -> tuple[str, bool]:
    """Insert the run row and record 0 in one transaction; see `Store.create_run`."""
    checked = check_first_record(run, first, table.limits)
    (text,) = checked.texts()
    problem = checked.problem
    if len(run.run_id.encode()) > MAX_RUN_ID_BYTES:
        problem = StoreError(
            f"run id {run.run_id[:40]!r}... is longer than {MAX_RUN_ID_BYTES} bytes, the most "
            "DynamoDBStore keeps (it is part of index keys); use a shorter id"
        )
    if problem is not None:
        if run.idempotency_key is not None:
            held = await _held(table, run)
            if held is not None:
                return _reuse(run, held)
        raise problem
    swept = False
    while True:
        items, now = _admission(table, run, first, text)
        reasons = await table.conn.transact(items)
        if reasons is None:
            table.hints.put(run.run_id, now, 0)
            return run.run_id, True
        if run.idempotency_key is not None and reasons[2].condition_failed:
            held = reasons[2].item or await _held(table, run)
            if held is not None:
                return _reuse(run, held)
            continue  # the key's run was deleted meanwhile: admit this one
        if reasons[0].condition_failed:
            raise Conflict(run.run_id, 0)
        if reasons[1].condition_failed and not swept:
            # Items of an earlier run with this id, whose deletion stopped half-way.
            await table.sweep(run.run_id)
            swept = True
            continue
        raise StoreError(
            f"run {run.run_id}: DynamoDB refused its admission "
            f"({', '.join(reason.code for reason in reasons)}); try again"
        )


def _admission(
    table: Table, run: NewRun, first: Record, text: str
) -> tuple[list[dict[str, Any]], str]:
    """The admission's items, and the creation time they carry."""
    now = to_text(table.clock(), "now")
    row: Item = {
        "pk": s(run_pk(run.run_id)),
        "sk": s(ROW_SK),
        "tenant": s(run.tenant),
        "agent": s(run.agent),
        "spec_version": s(run.spec_version),
        "status": s("queued"),
        "attempt": n(0),
        "next_seq": n(1),
        "inbox_last": n(0),
        "claims": n(0),
        "created_at": s(now),
        "updated_at": s(now),
        "created_key": s(created_key(now, run.run_id)),
        "shard": s(shard_of(run.run_id, table.shards)),
        "runnable_at": s(NEVER_BEFORE_TEXT),
        "claim_at": s(claim_key(NEVER_BEFORE_TEXT, now)),
    }
    if run.parent_run_id is not None:
        row["parent_run_id"] = s(run.parent_run_id)
    if run.idempotency_key is not None:
        row["idempotency_key"] = s(run.idempotency_key)
    items: list[dict[str, Any]] = [
        {"Put": table.put_new(row)},
        table.record_put(run.run_id, 0, first.attempt, text),
    ]
    if run.idempotency_key is not None:
        key: Item = {
            "pk": s(idempotency_pk(run.tenant, run.idempotency_key)),
            "sk": s(IDEM_SK),
            "tenant": s(run.tenant),
            "key": s(run.idempotency_key),
            "run_id": s(run.run_id),
        }
        if run.request_hash is not None:
            key["request_hash"] = s(run.request_hash)
        items.append(
            {"Put": {**table.put_new(key), "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}
        )
    return items, now


async def _held(table: Table, run: NewRun) -> Item | None:
    """The idempotency item of the run's key in its tenant, if the key was used."""
    assert run.idempotency_key is not None
    reply = await table.conn.call(
        "GetItem",
        TableName=table.name,
        Key={"pk": s(idempotency_pk(run.tenant, run.idempotency_key)), "sk": s(IDEM_SK)},
        ConsistentRead=True,
    )
    item: Item | None = reply.get("Item")
    return item


def _reuse(run: NewRun, held: Item) -> tuple[str, bool]:
    assert run.idempotency_key is not None
    existing = str(held["run_id"]["S"])
    if text_of(held, "request_hash") != run.request_hash:
        raise IdempotencyConflict(run.idempotency_key, existing)
    return existing, False


async def read(table: Table, run_id: str, after_seq: int, limit: int | None) -> list[Record]:
    """The records after `after_seq`, in seq order, at most `limit` (consistent reads)."""
    if limit is not None and limit <= 0:
        return []
    request: dict[str, Any] = {
        "TableName": table.name,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk", "#b": "body"},
        "ExpressionAttributeValues": {
            ":pk": s(run_pk(run_id)),
            ":lo": s(log_sk(max(after_seq + 1, 0))),
            ":hi": s(LOG_LAST),
        },
        "ProjectionExpression": "#b",
        "ConsistentRead": True,
    }
    records: list[Record] = []
    while True:
        if limit is not None:
            request["Limit"] = limit - len(records)
        reply = await table.conn.call("Query", **request)
        records.extend(Record.model_validate_json(item["body"]["S"]) for item in reply["Items"])
        last = reply.get("LastEvaluatedKey")
        if last is None or (limit is not None and len(records) >= limit):
            return records
        request["ExclusiveStartKey"] = last

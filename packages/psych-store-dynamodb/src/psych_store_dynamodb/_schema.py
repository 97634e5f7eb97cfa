"""The table and its indexes: created, checked and versioned by `migrate`.

Migrations are numbered. Each is applied once, in order, and recorded in the schema item
(``pk = sk = "#SCHEMA"``) with a conditional write, so several processes may run `migrate`
at once: `CreateTable` and `UpdateTable` are refused to all but one (``ResourceInUse``), the
others wait for the table to be active, and every one checks the shape it finds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psych_core import StoreError, StoreUnavailable
from psych_store_dynamodb._client import ConditionFailed, Connection, TableBusy, TableMissing
from psych_store_dynamodb._expr import Update
from psych_store_dynamodb._layout import (
    CLAIMABLE_INDEX,
    DUE_INDEX,
    PARENT_INDEX,
    SCHEMA_PK,
    SCHEMA_SK,
    TENANT_INDEX,
    to_text,
)
from psych_store_dynamodb._rows import int_of, n, s


@dataclass(frozen=True, slots=True)
class Index:
    """A global secondary index: its key attributes and what it projects."""

    name: str
    partition: str
    sort: str
    projects: tuple[str, ...] = ()
    """Attributes projected besides the keys (none: ``KEYS_ONLY``)."""

    def definition(self) -> dict[str, Any]:
        projection: dict[str, Any] = {"ProjectionType": "KEYS_ONLY"}
        if self.projects:
            projection = {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(self.projects)}
        return {
            "IndexName": self.name,
            "KeySchema": [
                {"AttributeName": self.partition, "KeyType": "HASH"},
                {"AttributeName": self.sort, "KeyType": "RANGE"},
            ],
            "Projection": projection,
        }


INDEXES = (
    Index(CLAIMABLE_INDEX, "shard", "claim_at"),
    Index(DUE_INDEX, "shard", "wake_at"),
    Index(TENANT_INDEX, "tenant", "created_key", ("status",)),
    Index(PARENT_INDEX, "parent_run_id", "created_key", ("status", "tenant")),
)

KEY_ATTRIBUTES = (
    "pk",
    "sk",
    "shard",
    "claim_at",
    "wake_at",
    "tenant",
    "created_key",
    "parent_run_id",
)
"""Every attribute a key of the table or of an index uses; all are strings."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    indexes: tuple[Index, ...]
    """The indexes the table has from this version on (the table itself exists from 1)."""


MIGRATIONS = (
    Migration(1, "the table, with the indexes claimable, due, by_tenant and by_parent", INDEXES),
)
LATEST_VERSION = MIGRATIONS[-1].version


async def migrate(
    conn: Connection,
    claim_shards: int,
    clock: Callable[[], dt.datetime],
    timeout: float,
) -> None:
    """Create or upgrade the table and record the schema version; see the module docstring."""
    deadline = time.monotonic() + timeout
    description = await _describe(conn)
    if description is None:
        # Another process may be creating it (TableBusy): wait for it below either way.
        with contextlib.suppress(TableBusy):
            await conn.call(
                "CreateTable",
                TableName=conn.table,
                AttributeDefinitions=[
                    {"AttributeName": name, "AttributeType": "S"}
                    for name in ("pk", "sk", *_index_attributes(INDEXES))
                ],
                KeySchema=[
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                GlobalSecondaryIndexes=[index.definition() for index in INDEXES],
                BillingMode="PAY_PER_REQUEST",
            )
    description = await _wait_active(conn, deadline)
    _check_keys(conn, description)
    version = await _read_version(conn, claim_shards)
    for migration in MIGRATIONS:
        if migration.version <= version:
            continue
        for index in migration.indexes:
            description = await _ensure_index(conn, index, description, deadline)
        await _record(conn, migration, claim_shards, clock)
    description = await _wait_active(conn, deadline)
    for index in INDEXES:
        _check_index(conn, index, description)


async def check_version(conn: Connection, claim_shards: int) -> None:
    """Refuse a table whose schema is older or newer than this package's, or sharded otherwise."""
    version = await _read_version(conn, claim_shards)
    if version < LATEST_VERSION:
        raise StoreError(
            f"{conn.where} is at schema version {version}, this psych-store-dynamodb needs "
            f"{LATEST_VERSION}: run `await store.migrate()`"
        )


async def _describe(conn: Connection) -> dict[str, Any] | None:
    try:
        reply = await conn.call("DescribeTable", TableName=conn.table)
    except TableMissing:
        return None
    table: dict[str, Any] = reply["Table"]
    return table


async def _wait_active(conn: Connection, deadline: float) -> dict[str, Any]:
    delay = 0.05
    while True:
        description = await _describe(conn)
        if description is not None and _active(description):
            return description
        if time.monotonic() > deadline:
            state = "missing" if description is None else description.get("TableStatus")
            raise StoreUnavailable(
                f"{conn.where} did not become active in time (it is {state}); run "
                "`await store.migrate()` again once DynamoDB has finished"
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)


def _active(description: dict[str, Any]) -> bool:
    if description.get("TableStatus") != "ACTIVE":
        return False
    indexes = description.get("GlobalSecondaryIndexes", [])
    return all(index.get("IndexStatus", "ACTIVE") == "ACTIVE" for index in indexes)


def _index_attributes(indexes: tuple[Index, ...]) -> list[str]:
    names: list[str] = []
    for index in indexes:
        for name in (index.partition, index.sort):
            if name not in names:
                names.append(name)
    return names


def _check_keys(conn: Connection, description: dict[str, Any]) -> None:
    keys = {k["AttributeName"]: k["KeyType"] for k in description.get("KeySchema", [])}
    types = {a["AttributeName"]: a["AttributeType"] for a in description["AttributeDefinitions"]}
    if keys != {"pk": "HASH", "sk": "RANGE"} or types.get("pk") != "S" or types.get("sk") != "S":
        raise StoreError(
            f"{conn.where} exists but is not keyed as this store needs (partition key pk and "
            f"sort key sk, both strings; it has {keys}): use another table name, or see the "
            "psych-store-dynamodb README for the table's shape"
        )


def _check_index(conn: Connection, index: Index, description: dict[str, Any]) -> None:
    found = {i["IndexName"]: i for i in description.get("GlobalSecondaryIndexes", [])}
    have = found.get(index.name)
    want = index.definition()
    if have is None:
        raise StoreError(f"{conn.where} has no index {index.name!r}: run `await store.migrate()`")
    types = {a["AttributeName"]: a["AttributeType"] for a in description["AttributeDefinitions"]}
    projection = have.get("Projection", {})
    projected = set(projection.get("NonKeyAttributes", []))
    if (
        have.get("KeySchema") != want["KeySchema"]
        or types.get(index.partition) != "S"
        or types.get(index.sort) != "S"
        or (
            projection.get("ProjectionType") != "ALL"
            and (
                projection.get("ProjectionType") != want["Projection"]["ProjectionType"]
                or not set(index.projects) <= projected
            )
        )
    ):
        raise StoreError(
            f"{conn.where} has an index {index.name!r} of another shape than this store needs "
            f"({want}); drop that index and run `await store.migrate()` again"
        )


async def _ensure_index(
    conn: Connection, index: Index, description: dict[str, Any], deadline: float
) -> dict[str, Any]:
    names = {i["IndexName"] for i in description.get("GlobalSecondaryIndexes", [])}
    if index.name in names:
        return description
    # Another process may be adding an index (TableBusy): wait, then look again.
    with contextlib.suppress(TableBusy):
        await conn.call(
            "UpdateTable",
            TableName=conn.table,
            # Every key attribute, not only the new index's: DynamoDB adds these to the
            # table's definitions, and moto (5.2) replaces the table's with them.
            AttributeDefinitions=[
                {"AttributeName": name, "AttributeType": "S"}
                for name in ("pk", "sk", *_index_attributes(INDEXES))
            ],
            GlobalSecondaryIndexUpdates=[{"Create": index.definition()}],
        )
    description = await _wait_active(conn, deadline)
    names = {i["IndexName"] for i in description.get("GlobalSecondaryIndexes", [])}
    if index.name not in names:
        return await _ensure_index(conn, index, description, deadline)
    return description


async def stored_version(conn: Connection) -> int:
    """The schema version the table records: 0 when the table or its schema item does not
    exist. One consistent ``GetItem``, nothing checked against this package, nothing written."""
    try:
        item = await _schema_item(conn)
    except TableMissing:
        return 0
    return 0 if item is None else int_of(item, "version")


async def _schema_item(conn: Connection) -> dict[str, Any] | None:
    reply = await conn.call(
        "GetItem",
        TableName=conn.table,
        Key={"pk": s(SCHEMA_PK), "sk": s(SCHEMA_SK)},
        ConsistentRead=True,
    )
    item: dict[str, Any] | None = reply.get("Item")
    return item


async def _read_version(conn: Connection, claim_shards: int) -> int:
    item = await _schema_item(conn)
    if item is None:
        return 0
    version = int_of(item, "version")
    if version > LATEST_VERSION:
        raise StoreError(
            f"{conn.where} is at schema version {version}, newer than this "
            f"psych-store-dynamodb knows ({LATEST_VERSION}): upgrade psych-store-dynamodb"
        )
    shards = int_of(item, "claim_shards")
    if shards != claim_shards:
        raise StoreError(
            f"{conn.where} spreads its claim index over {shards} shards, and this store was "
            f"opened with claim_shards={claim_shards}: open it with claim_shards={shards} "
            "(every process must use the table's number)"
        )
    return version


async def _record(
    conn: Connection, migration: Migration, claim_shards: int, clock: Callable[[], dt.datetime]
) -> None:
    update = Update()
    update.set("version", n(migration.version))
    shards = update.name("claim_shards")
    update.set_expression(f"{shards} = if_not_exists({shards}, {update.value(n(claim_shards))})")
    steps = update.name("steps")
    applied = {
        "M": {
            "version": n(migration.version),
            "name": s(migration.name),
            "at": s(to_text(clock(), "now")),
        }
    }
    update.set_expression(
        f"{steps} = list_append(if_not_exists({steps}, {update.value({'L': []})}), "
        f"{update.value({'L': [applied]})})"
    )
    update.require(
        f"attribute_not_exists({update.name('pk')}) OR {update.name('version')} < "
        f"{update.value(n(migration.version))}"
    )
    with contextlib.suppress(ConditionFailed):  # another process recorded it first
        await conn.call(
            "UpdateItem",
            TableName=conn.table,
            Key={"pk": s(SCHEMA_PK), "sk": s(SCHEMA_SK)},
            **update.fields(),
        )
    await _read_version(conn, claim_shards)

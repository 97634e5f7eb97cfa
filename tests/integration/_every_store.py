"""A fresh store of each kind, for tests that must hold on every store: memory, SQLite,
PostgreSQL, MySQL/MariaDB and DynamoDB (moto's server).

Each store is new and empty (a file, a schema, a database or a table of its own) and removed
afterwards. A server that does not answer fails the test with the command that starts it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from psych_runtime import MemoryStore
from psych_runtime.errors import StoreUnavailable
from psych_runtime.ports import Store

KINDS = ("memory", "sqlite", "postgres", "mysql", "dynamodb")
"""Every store the project ships."""

DYNAMODB_ENDPOINT = os.environ.get("PSYCH_TEST_DYNAMODB_ENDPOINT", "http://127.0.0.1:4566")


@asynccontextmanager
async def fresh_store(kind: str, folder: Path) -> AsyncIterator[Store]:
    """A new, migrated, empty store of `kind`, removed when the block ends."""
    match kind:
        case "memory":
            yield MemoryStore()
        case "sqlite":
            from psych_store_sqlite import SQLiteStore

            sqlite = SQLiteStore(folder / f"runs-{uuid.uuid4().hex[:8]}.db")
            await sqlite.migrate()
            try:
                yield sqlite
            finally:
                await sqlite.close()
        case "postgres":
            from psych_store_postgres import PostgresStore
            from tests._postgres import connect, drop_schema, new_schema, test_dsn

            (await connect()).terminate()  # fails the test, saying how to start the server
            schema = new_schema("every")
            postgres = PostgresStore(test_dsn(), schema=schema)
            await postgres.migrate()
            try:
                yield postgres
            finally:
                await postgres.close()
                await drop_schema(schema)
        case "mysql":
            from psych_store_mysql import MySQLStore
            from tests._mysql_databases import create_database, drop_database, url_for

            database = await create_database()
            mysql = MySQLStore(url_for(database))
            await mysql.migrate()
            try:
                yield mysql
            finally:
                await mysql.close()
                await drop_database(database)
        case "dynamodb":
            async with _dynamodb() as dynamodb:
                yield dynamodb
        case _:
            raise ValueError(f"no store kind {kind!r}; known: {', '.join(KINDS)}")


@asynccontextmanager
async def _dynamodb() -> AsyncIterator[Store]:
    import aioboto3  # type: ignore[import-untyped]

    from psych_store_dynamodb import DynamoDBStore

    session = aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    table = f"psych-every-{uuid.uuid4().hex}"
    store = DynamoDBStore(
        table, endpoint_url=DYNAMODB_ENDPOINT, region_name="us-east-1", session=session
    )
    try:
        await store.migrate()
    except StoreUnavailable as exc:
        await store.close()
        pytest.fail(
            f"moto's DynamoDB server does not answer at {DYNAMODB_ENDPOINT} ({exc}); start it "
            "with `scripts/dev-services.sh start` and export the PSYCH_TEST_DYNAMODB_ENDPOINT "
            "it prints"
        )
    try:
        yield store
    finally:
        await store.close()
        async with session.client(
            "dynamodb", endpoint_url=DYNAMODB_ENDPOINT, region_name="us-east-1"
        ) as client:
            await client.delete_table(TableName=table)

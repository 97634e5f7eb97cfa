"""The PostgreSQL server the store tests use, and a fresh schema per test.

The server is the one `scripts/dev-services.sh start` (or `scripts/services/postgres.sh start`)
brings up; its DSN comes from PSYCH_TEST_POSTGRES_DSN, with the default those scripts print.
When it does not answer, a test fails (never skips) with a message saying how to start it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from psych_store_postgres import PostgresStore
from tests._pg_proxy import PgProxy, proxy_to

DSN_VARIABLE = "PSYCH_TEST_POSTGRES_DSN"
DEFAULT_DSN = "postgresql://psych:psych@127.0.0.1:5432/psych_test"


def test_dsn() -> str:
    """The test server's DSN."""
    return os.environ.get(DSN_VARIABLE) or DEFAULT_DSN


test_dsn.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


async def connect(dsn: str | None = None) -> asyncpg.Connection:
    """A connection to the test server; the test fails with how to start it if there is none."""
    dsn = dsn or test_dsn()
    try:
        return await asyncpg.connect(dsn, timeout=5)
    except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {dsn} ({type(exc).__name__}: {exc}). Start it with "
            f"`scripts/dev-services.sh start` (or set {DSN_VARIABLE} to a server of your own)",
            pytrace=False,
        )


def new_schema(prefix: str = "t") -> str:
    """A schema name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


async def drop_schema(schema: str, dsn: str | None = None) -> None:
    """Remove a test's schema and everything in it."""
    conn = await connect(dsn)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """A new schema's name, once the server answers; the schema is dropped afterwards."""
    (await connect()).terminate()
    name = new_schema()
    try:
        yield name
    finally:
        await drop_schema(name)


@contextlib.asynccontextmanager
async def store_behind_proxy(
    schema: str, **options: Any
) -> AsyncIterator[tuple[PgProxy, PostgresStore]]:
    """A migrated `PostgresStore` of `schema` that reaches the test server through a
    `PgProxy` (which counts its round trips and cuts its connections); `options` are the
    store's (pool sizes, mostly)."""
    async with (
        proxy_to(test_dsn()) as proxy,
        PostgresStore(proxy.dsn, schema=schema, **options) as store,
    ):
        await store.migrate()
        yield proxy, store

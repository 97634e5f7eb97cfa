"""Every user memory passes the user memory contract: `LocalUserMemory` in the box,
`SQLiteUserMemory` on a fresh file, `PostgresUserMemory` on a real server in a fresh schema."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from psych_runtime.conversations import LocalUserMemory
from psych_runtime.errors import StoreError
from psych_runtime.ports import UserMemory
from psych_runtime.testing.memory_contract import TENANT, USER, UserMemoryContract
from psych_store_postgres import SCHEMA_VERSION as POSTGRES_STORE_VERSION
from psych_store_postgres import PostgresStore, PostgresUserMemory
from psych_store_sqlite import SCHEMA_VERSION as SQLITE_STORE_VERSION
from psych_store_sqlite import SQLiteStore, SQLiteUserMemory
from tests._postgres import connect, drop_schema, new_schema, test_dsn
from tests.contract.test_postgres_store import readme_grants

pytestmark = pytest.mark.contract


class TestLocalUserMemory(UserMemoryContract):
    async def create_memory(self) -> LocalUserMemory:
        return LocalUserMemory()


class TestSQLiteUserMemory(UserMemoryContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path

    async def create_memory(self) -> SQLiteUserMemory:
        memory = SQLiteUserMemory(self.folder / "memory.db")
        await memory.migrate()
        return memory

    async def close_memory(self, memory: UserMemory) -> None:
        assert isinstance(memory, SQLiteUserMemory)
        await memory.close()


class TestPostgresUserMemory(UserMemoryContract):
    async def create_memory(self) -> PostgresUserMemory:
        (await connect()).terminate()  # fails the test at once, saying how to start the server
        memory = PostgresUserMemory(test_dsn(), schema=new_schema("m"), max_size=4)
        await memory.migrate()
        return memory

    async def close_memory(self, memory: UserMemory) -> None:
        assert isinstance(memory, PostgresUserMemory)
        await memory.close()
        await drop_schema(memory.schema)


# -- what is each database's own -----------------------------------------------------------------


async def test_sqlite_memory_and_store_share_a_file_each_with_its_own_schema(
    tmp_path: Path,
) -> None:
    db = tmp_path / "psych.db"
    async with SQLiteUserMemory(db) as memory, SQLiteStore(db) as store:
        await memory.migrate()  # before the store's: neither needs the other
        await store.migrate()
        await memory.migrate()  # again: nothing to do
        fact = await memory.remember(TENANT, USER, "Prefers tea", key="k1")
        assert await store.get_run("t", "run-1") is None
    with contextlib.closing(sqlite3.connect(db)) as conn:
        store_versions = conn.execute("SELECT version FROM psych_schema_version").fetchall()
        memory_versions = conn.execute("SELECT version FROM psych_memory_schema_version").fetchall()
        rows = conn.execute("SELECT fact_id, folded FROM psych_user_facts").fetchall()
    assert store_versions == [(v,) for v in range(1, SQLITE_STORE_VERSION + 1)]
    assert memory_versions == [(1,)]
    assert rows == [(fact.id, "prefers tea")]
    async with SQLiteUserMemory(db) as again:
        assert await again.recall(TENANT, USER) == [fact], "the facts outlive the process's memory"


async def test_sqlite_memory_newer_than_the_package_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SQLiteUserMemory(db) as memory:
        await memory.migrate()
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("INSERT INTO psych_memory_schema_version VALUES (99, 'future', 'now')")
        with pytest.raises(StoreError, match="upgrade psych-store-sqlite"):
            await memory.migrate()


async def test_sqlite_memory_without_its_tables_says_to_migrate(tmp_path: Path) -> None:
    async with SQLiteUserMemory(tmp_path / "empty.db") as memory:
        with pytest.raises(StoreError, match=r"migrate\(\)"):
            await memory.recall(TENANT, USER)


def test_sqlite_memory_refuses_an_in_memory_database() -> None:
    with pytest.raises(ValueError, match="LocalUserMemory"):
        SQLiteUserMemory(":memory:")


async def test_postgres_memory_and_store_migrate_one_schema_at_once() -> None:
    (await connect()).terminate()
    schema = new_schema("m")
    try:
        async with (
            PostgresUserMemory(test_dsn(), schema=schema) as memory,
            PostgresStore(test_dsn(), schema=schema) as store,
        ):
            # Both may create the schema: they take turns on its advisory lock.
            await asyncio.gather(memory.migrate(), store.migrate(), memory.migrate())
            fact = await memory.remember(TENANT, USER, "Prefers tea", key="k1")
            assert await memory.recall(TENANT, USER) == [fact]
            assert await store.get_run("t", "run-1") is None
        conn = await connect()
        try:
            versions = await conn.fetch(f"SELECT version FROM {schema}.memory_schema_version")
            store_versions = await conn.fetch(f"SELECT version FROM {schema}.schema_version")
        finally:
            await conn.close()
        assert [row["version"] for row in versions] == [1]
        assert [row["version"] for row in store_versions] == list(
            range(1, POSTGRES_STORE_VERSION + 1)
        )
    finally:
        await drop_schema(schema)


async def test_postgres_memory_works_with_the_documented_worker_grants() -> None:
    (await connect()).terminate()
    schema = new_schema("m")
    role = f"psych_worker_{uuid.uuid4().hex[:8]}"
    admin = await connect()
    try:
        async with PostgresUserMemory(test_dsn(), schema=schema) as owner:
            await owner.migrate()  # by the schema's owner, before the grants
        grants = (
            readme_grants()
            .replace("psych_worker", role)
            .replace("SCHEMA psych ", f"SCHEMA {schema} ")
            .replace("'change-me'", "'worker-password'")
        )
        await admin.execute(grants)
        parts = urlsplit(test_dsn())
        dsn = urlunsplit(
            parts._replace(netloc=f"{role}:worker-password@{parts.hostname}:{parts.port or 5432}")
        )
        async with PostgresUserMemory(dsn, schema=schema) as worker:
            await worker.migrate()  # at the latest version: only read
            fact = await worker.remember(TENANT, USER, "Prefers tea", key="k1")
            assert await worker.recall(TENANT, USER, query="tea") == [fact]
            assert await worker.forget(TENANT, USER, fact.id)
            await worker.remember(TENANT, USER, "Lives in Lyon", key="k2")
            assert await worker.erase(TENANT, USER) == 1
    finally:
        await admin.execute(
            f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}; "
            f"REVOKE ALL ON SCHEMA {schema} FROM {role}; DROP ROLE {role}"
        )
        await admin.close()
        await drop_schema(schema)


async def test_postgres_memory_refuses_a_bad_schema_name_before_any_io() -> None:
    for schema in ("Psych", "psych; drop table x", ""):
        with pytest.raises(ValueError, match="schema"):
            PostgresUserMemory(test_dsn(), schema=schema)

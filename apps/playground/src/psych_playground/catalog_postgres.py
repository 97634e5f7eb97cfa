"""The catalog in the store's PostgreSQL database, in a schema of its own, through asyncpg.

The table lives beside the store's schema (``psych`` by default), in ``<schema>_playground``,
so the store's own migrations never meet it. Connections come from a small pool opened on
first use.
"""

from __future__ import annotations

import asyncio

import asyncpg

from psych_playground.catalog import Entry, KindConflict, SpecKind

_COLUMNS = "name, kind, version, published_at, spec"


class PostgresCatalog:
    """The catalog in table ``<schema>_playground.specs`` of the database at `dsn`."""

    def __init__(self, dsn: str, *, schema: str = "psych") -> None:
        if not schema.replace("_", "").isalnum():
            raise ValueError(f"schema {schema!r}: use letters, digits and '_' only")
        self.dsn = dsn
        self.table = f"{schema}_playground.specs"
        self.schema = f"{schema}_playground"
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def migrate(self) -> None:
        async with (await self._connections()).acquire() as conn, conn.transaction():
            # Serialised: two processes starting at once must not race to create the table.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", self.table)
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            await conn.execute(
                f"""CREATE TABLE IF NOT EXISTS {self.table} (
                    id bigserial PRIMARY KEY,
                    tenant text NOT NULL,
                    name text NOT NULL,
                    kind text NOT NULL,
                    version text NOT NULL,
                    spec text NOT NULL,
                    published_at timestamptz NOT NULL,
                    UNIQUE (tenant, name, version)
                )"""
            )

    async def insert(self, tenant: str, entry: Entry) -> tuple[Entry, bool]:
        async with (await self._connections()).acquire() as conn, conn.transaction():
            taken = await conn.fetchval(
                f"SELECT kind FROM {self.table} WHERE tenant = $1 AND name = $2 LIMIT 1",
                tenant,
                entry.name,
            )
            if taken is not None and taken != entry.kind:
                raise KindConflict(
                    f"{entry.name!r} is the name of a published {taken}; publish the "
                    f"{entry.kind} under another name"
                )
            added = await conn.fetchval(
                f"INSERT INTO {self.table} (tenant, name, kind, version, spec, published_at) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, name, version) DO NOTHING "
                "RETURNING id",
                tenant,
                entry.name,
                entry.kind,
                entry.version,
                entry.spec_json,
                entry.published_at,
            )
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM {self.table} "
                "WHERE tenant = $1 AND name = $2 AND version = $3",
                tenant,
                entry.name,
                entry.version,
            )
        assert row is not None
        return _entry(row), added is not None

    async def entries(self, tenant: str, name: str | None = None) -> list[Entry]:
        pool = await self._connections()
        if name is None:
            rows = await pool.fetch(
                f"SELECT {_COLUMNS} FROM {self.table} WHERE tenant = $1 ORDER BY name, id DESC",
                tenant,
            )
        else:
            rows = await pool.fetch(
                f"SELECT {_COLUMNS} FROM {self.table} WHERE tenant = $1 AND name = $2 "
                "ORDER BY id DESC",
                tenant,
                name,
            )
        return [_entry(row) for row in rows]

    async def find(self, tenant: str, name: str, version: str | None = None) -> Entry | None:
        pool = await self._connections()
        query = f"SELECT {_COLUMNS} FROM {self.table} WHERE tenant = $1 AND name = $2"
        if version is None:
            row = await pool.fetchrow(f"{query} ORDER BY id DESC LIMIT 1", tenant, name)
        else:
            row = await pool.fetchrow(f"{query} AND version = $3", tenant, name, version)
        return None if row is None else _entry(row)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _connections(self) -> asyncpg.Pool:
        async with self._opening:
            if self._pool is None:
                self._pool = await asyncpg.create_pool(
                    self.dsn,
                    min_size=0,
                    max_size=2,
                    server_settings={"application_name": "psych-playground"},
                )
            return self._pool


def _entry(row: asyncpg.Record) -> Entry:
    kinds: dict[str, SpecKind] = {"agent": "agent", "workflow": "workflow"}
    return Entry(row["name"], kinds[row["kind"]], row["version"], row["published_at"], row["spec"])

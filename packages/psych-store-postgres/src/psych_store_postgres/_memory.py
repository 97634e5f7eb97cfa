"""`PostgresUserMemory`: facts about end users in PostgreSQL, shared by every host."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import asyncpg

from psych_core.ports import (
    Fact,
    UserMemory,
    check_fact,
    check_owner,
    check_recall,
    folded,
    query_terms,
)
from psych_store_postgres._connections import Connection, Connections, Settings, describe_dsn
from psych_store_postgres._memory_schema import migrate
from psych_store_postgres._sql import check_schema_name

_COLUMNS = "fact_id, text, at, key, run_id"


@dataclass(frozen=True, slots=True)
class _Statements:
    """The statements of one schema."""

    insert: str
    by_key: str
    recall: str
    forget: str
    erase: str

    @classmethod
    def for_schema(cls, schema: str) -> _Statements:
        table = f"{check_schema_name(schema)}.user_facts"
        return cls(
            # Concurrent inserts with one key: the later ones wait for the first to commit,
            # then insert nothing; their next statement (a fresh snapshot) reads its row.
            insert=(
                f"INSERT INTO {table} (tenant, user_id, fact_id, key, text, folded, run_id, at) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, statement_timestamp()) "
                f"ON CONFLICT (tenant, user_id, key) DO NOTHING RETURNING {_COLUMNS}"
            ),
            by_key=(
                f"SELECT {_COLUMNS} FROM {table} WHERE tenant = $1 AND user_id = $2 AND key = $3"
            ),
            # Words are matched with strpos() on the folded text: exact, never a pattern.
            recall=(
                f"SELECT {_COLUMNS} FROM {table} WHERE tenant = $1 AND user_id = $2 "
                "AND (SELECT bool_and(strpos(folded, term) > 0) FROM unnest($3::text[]) AS term) "
                "IS NOT FALSE ORDER BY n DESC LIMIT $4"
            ),
            forget=f"DELETE FROM {table} WHERE tenant = $1 AND user_id = $2 AND fact_id = $3",
            erase=f"DELETE FROM {table} WHERE tenant = $1 AND user_id = $2",
        )


class PostgresUserMemory(UserMemory):
    """A `UserMemory` in a PostgreSQL database, shared by workers and apps on any number of
    hosts.

    Its table (``user_facts``) and version table (``memory_schema_version``) live in
    `schema`: the store's (beside the runs) or one of their own; they are migrated apart from
    the store's tables (`migrate`). Each call is one statement in autocommit (`remember`
    two when its key is taken), on a pool the memory opens on first use in the running event
    loop. `remember` inserts with ``ON CONFLICT DO NOTHING`` on (tenant, user, key), so
    concurrent calls with one key store once; times are the database's clock.

    A connection that cannot be had is waited for, with backoff, up to `retry_for` seconds;
    a `remember` whose connection broke in flight is sent again (its key makes that safe); a
    `forget` or `erase` that broke in flight raises `StoreUnavailable` (calling it again is
    safe, though its answer then counts nothing already deleted).

    Args:
        dsn: a libpq connection string or URL, e.g. ``postgresql://psych@db:5432/app``.
        schema: the schema that holds the memory's tables; `migrate` creates it.
        min_size: connections the pool keeps open.
        max_size: connections the pool opens at most.
        connect_timeout: seconds to open a connection.
        command_timeout: seconds a statement may take before the call gives up (None: no
            limit).
        retry_for: seconds a call keeps trying through connection failures before it raises
            `StoreUnavailable`.
        application_name: how the memory's connections appear in ``pg_stat_activity``.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "psych",
        min_size: int = 0,
        max_size: int = 4,
        connect_timeout: float = 5.0,
        command_timeout: float | None = 30.0,
        retry_for: float = 10.0,
        application_name: str = "psych-memory",
    ) -> None:
        self._sql = _Statements.for_schema(schema)
        self._schema = schema
        self._where = describe_dsn(dsn, schema)
        self._connections = Connections(
            Settings(
                dsn=dsn,
                listen_dsn=dsn,
                min_size=min_size,
                max_size=max_size,
                connect_timeout=connect_timeout,
                command_timeout=command_timeout,
                retry_for=retry_for,
                application_name=application_name,
            ),
            f"{self._where}, user memory",
        )

    @property
    def schema(self) -> str:
        """The schema that holds the memory's tables."""
        return self._schema

    def __repr__(self) -> str:
        return f"PostgresUserMemory({self._where})"

    async def close(self) -> None:
        """Close the pool. Calling it again does nothing."""
        await self._connections.close()

    async def migrate(self) -> None:
        """Create or upgrade the memory's tables: numbered steps in one transaction under the
        schema's advisory lock, safe to run at once from several processes."""
        await self._connections.run(
            "migrate()",
            lambda conn, _again: migrate(conn, self._schema, self._where),
            resend=True,
        )

    async def remember(
        self, tenant: str, user: str, text: str, *, key: str, run_id: str | None = None
    ) -> Fact:
        """Store `text` once per `key`; see `UserMemory.remember`."""
        check_fact(tenant, user, text, key)
        fact_id = uuid.uuid4().hex
        values = (tenant, user, fact_id, key, text, folded(text), run_id)

        async def store(conn: Connection, _again: bool) -> Fact:
            while True:
                row = await conn.fetchrow(self._sql.insert, *values)
                if row is None:
                    row = await conn.fetchrow(self._sql.by_key, tenant, user, key)
                if row is not None:  # None: forgotten between the two statements
                    return _fact(row)

        return await self._connections.run(f"remember(key {key!r})", store, resend=True)

    async def recall(
        self, tenant: str, user: str, *, query: str | None = None, limit: int = 20
    ) -> list[Fact]:
        """The user's facts, newest first; see `UserMemory.recall`."""
        check_recall(tenant, user, limit)
        terms = list(query_terms(query))

        async def read(conn: Connection, _again: bool) -> list[Fact]:
            rows = await conn.fetch(self._sql.recall, tenant, user, terms, limit)
            return [_fact(row) for row in rows]

        return await self._connections.run("recall()", read, resend=True)

    async def forget(self, tenant: str, user: str, fact_id: str) -> bool:
        """Delete one fact and its key; see `UserMemory.forget`."""
        check_owner(tenant, user)
        deleted = await self._delete(
            f"forget({fact_id!r})", self._sql.forget, (tenant, user, fact_id)
        )
        return deleted > 0

    async def erase(self, tenant: str, user: str) -> int:
        """Delete every fact and key of the user in one statement; see `UserMemory.erase`."""
        check_owner(tenant, user)
        return await self._delete("erase()", self._sql.erase, (tenant, user))

    async def _delete(self, what: str, statement: str, args: tuple[str, ...]) -> int:
        async def delete(conn: Connection, _again: bool) -> int:
            status = await conn.execute(statement, *args)
            return int(status.split()[-1])  # "DELETE n"

        hint = "call it again: deleting again is safe, though it counts nothing already deleted"
        return await self._connections.run(what, delete, resend=False, hint=hint)


def _fact(row: asyncpg.Record) -> Fact:
    return Fact(
        id=row["fact_id"], text=row["text"], at=row["at"], key=row["key"], run_id=row["run_id"]
    )

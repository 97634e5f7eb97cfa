"""`SQLiteUserMemory`: facts about end users in a SQLite file, shared by the processes of one
host (the store's file, or one of its own)."""

from __future__ import annotations

import os
import sqlite3
import uuid
from functools import partial

from psych_core.ports import (
    Fact,
    UserMemory,
    check_fact,
    check_owner,
    check_recall,
    folded,
    query_terms,
)
from psych_store_sqlite._connection import open_connection, shared_file
from psych_store_sqlite._lane import Lane
from psych_store_sqlite._memory_schema import migrate
from psych_store_sqlite._time import from_micros, now_micros

_COLUMNS = "fact_id, text, at, key, run_id"


class SQLiteUserMemory(UserMemory):
    """A `UserMemory` in one SQLite file, shared by any number of processes on one host.

    Its table (``psych_user_facts``) and version table (``psych_memory_schema_version``) may
    sit in the store's file beside the runs, or in a file of their own; they are migrated
    apart from the store's (`migrate`). Every sqlite call runs on one thread the memory owns;
    each write is one ``BEGIN IMMEDIATE`` transaction, so `remember` checks its key and
    inserts atomically across processes. The file is in WAL mode with ``synchronous=FULL``,
    like the store's; a write that waits past `busy_timeout` raises `StoreUnavailable`.
    Times are the host's clock.

    Call `migrate` once before use (safe in every process at start-up), and `close` (or use
    ``async with``) when done.

    Args:
        path: the database file; created when it does not exist.
        busy_timeout: seconds a write waits for another process's write transaction.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self._path = shared_file(
            path,
            busy_timeout,
            who="SQLiteUserMemory",
            instead="psych_runtime.conversations.LocalUserMemory for a memory that dies with "
            "the process",
        )
        self._lane = Lane(
            "psych-sqlite-memory",
            partial(open_connection, self._path, busy_timeout, read_only=False),
            self._path,
            busy_timeout,
        )

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    def __repr__(self) -> str:
        return f"SQLiteUserMemory({self._path!r})"

    async def close(self) -> None:
        """Close the connection and end the thread. Calling it again does nothing."""
        await self._lane.close()

    async def migrate(self) -> None:
        """Create or upgrade the memory's tables: numbered steps in one transaction, safe to
        run at once from several processes."""
        await self._lane.run(migrate, self._path)

    async def remember(
        self, tenant: str, user: str, text: str, *, key: str, run_id: str | None = None
    ) -> Fact:
        """Store `text` once per `key`, in one transaction; see `UserMemory.remember`."""
        check_fact(tenant, user, text, key)
        return await self._lane.transact(_remember, tenant, user, text, key, run_id)

    async def recall(
        self, tenant: str, user: str, *, query: str | None = None, limit: int = 20
    ) -> list[Fact]:
        """The user's facts, newest first; see `UserMemory.recall`."""
        check_recall(tenant, user, limit)
        return await self._lane.run(_recall, tenant, user, query_terms(query), limit)

    async def forget(self, tenant: str, user: str, fact_id: str) -> bool:
        """Delete one fact and its key; see `UserMemory.forget`."""
        check_owner(tenant, user)
        deleted = await self._lane.transact(_delete, "AND fact_id = ?", (tenant, user, fact_id))
        return deleted > 0

    async def erase(self, tenant: str, user: str) -> int:
        """Delete every fact and key of the user in one transaction; see `UserMemory.erase`."""
        check_owner(tenant, user)
        return await self._lane.transact(_delete, "", (tenant, user))


def _fact(row: tuple[str, str, int, str, str | None]) -> Fact:
    fact_id, text, at, key, run_id = row
    return Fact(id=fact_id, text=text, at=from_micros(at), key=key, run_id=run_id)


def _remember(
    conn: sqlite3.Connection, tenant: str, user: str, text: str, key: str, run_id: str | None
) -> Fact:
    held = conn.execute(
        f"SELECT {_COLUMNS} FROM psych_user_facts WHERE tenant = ? AND user_id = ? AND key = ?",
        (tenant, user, key),
    ).fetchone()
    if held is not None:
        return _fact(held)
    fact_id, at = uuid.uuid4().hex, now_micros()
    conn.execute(
        "INSERT INTO psych_user_facts "
        "(tenant, user_id, fact_id, key, text, folded, run_id, at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (tenant, user, fact_id, key, text, folded(text), run_id, at),
    )
    return Fact(id=fact_id, text=text, at=from_micros(at), key=key, run_id=run_id)


def _recall(
    conn: sqlite3.Connection, tenant: str, user: str, terms: tuple[str, ...], limit: int
) -> list[Fact]:
    # instr() compares exactly: a query's % or _ is a character, never a pattern.
    matching = "".join(" AND instr(folded, ?) > 0" for _ in terms)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM psych_user_facts WHERE tenant = ? AND user_id = ?{matching} "
        "ORDER BY n DESC LIMIT ?",
        (tenant, user, *terms, limit),
    ).fetchall()
    return [_fact(row) for row in rows]


def _delete(conn: sqlite3.Connection, condition: str, args: tuple[str, ...]) -> int:
    cursor = conn.execute(
        f"DELETE FROM psych_user_facts WHERE tenant = ? AND user_id = ? {condition}", args
    )
    return cursor.rowcount

"""The catalog in the SQLite file of the store: the stdlib's sqlite3, run in a thread.

Each call opens its own connection and closes it, so nothing is held between requests and
several processes share the file as the store's own connections do (the store has put it in
WAL mode; a write waits up to `busy_timeout` for another process's).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from psych_playground.catalog import Entry, KindConflict, SpecKind

_SCHEMA = """
CREATE TABLE IF NOT EXISTS playground_specs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    version TEXT NOT NULL,
    spec TEXT NOT NULL,
    published_at TEXT NOT NULL,
    UNIQUE (tenant, name, version)
)
"""
_COLUMNS = "name, kind, version, published_at, spec"


class SqliteCatalog:
    """The catalog in table ``playground_specs`` of the SQLite file at `path`."""

    def __init__(self, path: Path, *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self.busy_timeout = busy_timeout

    async def migrate(self) -> None:
        await asyncio.to_thread(self._run, lambda conn: conn.execute(_SCHEMA), write=True)

    async def insert(self, tenant: str, entry: Entry) -> tuple[Entry, bool]:
        return await asyncio.to_thread(
            self._run, lambda conn: _insert(conn, tenant, entry), write=True
        )

    async def entries(self, tenant: str, name: str | None = None) -> list[Entry]:
        query = f"SELECT {_COLUMNS} FROM playground_specs WHERE tenant = ?"
        values = [tenant]
        if name is not None:
            query += " AND name = ?"
            values.append(name)
        query += " ORDER BY name, id DESC"
        rows = await asyncio.to_thread(
            self._run, lambda conn: conn.execute(query, values).fetchall()
        )
        return [_entry(row) for row in rows]

    async def find(self, tenant: str, name: str, version: str | None = None) -> Entry | None:
        query = f"SELECT {_COLUMNS} FROM playground_specs WHERE tenant = ? AND name = ?"
        values = [tenant, name]
        if version is not None:
            query += " AND version = ?"
            values.append(version)
        query += " ORDER BY id DESC LIMIT 1"
        row = await asyncio.to_thread(
            self._run, lambda conn: conn.execute(query, values).fetchone()
        )
        return None if row is None else _entry(row)

    async def close(self) -> None:
        return  # nothing is held between calls

    def _run[T](self, work: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        with self._transaction(write=write) as conn:
            return work(conn)

    @contextlib.contextmanager
    def _transaction(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            # A write takes the file's write lock at once, so it waits for another process's
            # writes at its start (busy_timeout) instead of failing half-way.
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()


def _insert(conn: sqlite3.Connection, tenant: str, entry: Entry) -> tuple[Entry, bool]:
    taken = conn.execute(
        "SELECT kind FROM playground_specs WHERE tenant = ? AND name = ? LIMIT 1",
        (tenant, entry.name),
    ).fetchone()
    if taken is not None and taken[0] != entry.kind:
        raise KindConflict(
            f"{entry.name!r} is the name of a published {taken[0]}; publish the {entry.kind} "
            "under another name"
        )
    added = conn.execute(
        "INSERT INTO playground_specs (tenant, name, kind, version, spec, published_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, name, version) DO NOTHING",
        (
            tenant,
            entry.name,
            entry.kind,
            entry.version,
            entry.spec_json,
            entry.published_at.isoformat(),
        ),
    ).rowcount
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM playground_specs WHERE tenant = ? AND name = ? AND version = ?",
        (tenant, entry.name, entry.version),
    ).fetchone()
    return _entry(row), added == 1


def _entry(row: tuple[str, str, str, str, str]) -> Entry:
    name, kind, version, published_at, spec = row
    kinds: dict[str, SpecKind] = {"agent": "agent", "workflow": "workflow"}
    return Entry(name, kinds[kind], version, dt.datetime.fromisoformat(published_at), spec)

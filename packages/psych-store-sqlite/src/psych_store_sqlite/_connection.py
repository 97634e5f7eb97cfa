"""Connections with the store's settings, write transactions, and sqlite errors translated.

Every function here blocks: they run in a `Lane`'s thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from psych_core import PsychError, StoreError, StoreUnavailable


def shared_file(
    path: str | os.PathLike[str], busy_timeout: float, *, who: str, instead: str
) -> str:
    """`path` as a string, checked to name a file several connections can share (not an
    in-memory database), with a positive `busy_timeout`: `ValueError` naming `who` and what
    to use `instead` otherwise."""
    checked = os.fspath(path)
    if checked in ("", ":memory:") or checked.startswith("file::memory:"):
        raise ValueError(
            f"{who} needs a file that several connections share, not an in-memory "
            f"database; use {instead}"
        )
    if busy_timeout <= 0:
        raise ValueError(f"busy_timeout must be positive, not {busy_timeout}")
    return checked


# Primary result codes (https://www.sqlite.org/rescode.html).
_BUSY = 5
_LOCKED = 6
_NOMEM = 7
_READONLY = 8
_IOERR = 10
_CORRUPT = 11
_FULL = 13
_CANTOPEN = 14
_PROTOCOL = 15
_NOTADB = 26
_UNAVAILABLE = frozenset({_BUSY, _LOCKED, _NOMEM, _IOERR, _FULL, _CANTOPEN, _PROTOCOL})


def translate(exc: sqlite3.Error, path: str, busy_timeout: float) -> PsychError:
    """The core's error for a sqlite3 error: unavailable (retry later) or a plain refusal."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    message = str(exc)
    if primary in (_BUSY, _LOCKED) or "database is locked" in message:
        return StoreUnavailable(
            f"SQLite store {path}: the database stayed locked past the busy timeout of "
            f"{busy_timeout} s (another process holds a long write transaction); retry later, "
            "or raise busy_timeout"
        )
    if primary in _UNAVAILABLE:
        return StoreUnavailable(f"SQLite store {path}: {message}; check the disk and retry")
    if primary in (_CORRUPT, _NOTADB):
        return StoreError(
            f"SQLite store {path}: {message}; the file is damaged or is not a database. "
            "Restore it from a backup or point the store at another file"
        )
    if primary == _READONLY:
        return StoreError(
            f"SQLite store {path}: {message}; the process needs write access to the file and "
            "to its directory (SQLite creates -wal and -shm files beside it)"
        )
    if "no such table" in message:
        return StoreError(
            f"SQLite store {path}: the Psych schema is missing ({message}); call "
            "`await store.migrate()` once before using the store"
        )
    return StoreError(f"SQLite store {path}: {message}")


def open_connection(path: str, busy_timeout: float, *, read_only: bool) -> sqlite3.Connection:
    """A connection with the store's settings in force.

    WAL (readers never block the writer), ``synchronous=FULL`` (a commit is on disk when
    it returns), ``busy_timeout`` (wait for another process's write instead of failing) and
    foreign keys. ``isolation_level=None`` leaves transactions to us: every write is an
    explicit ``BEGIN IMMEDIATE``.
    """
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        mode = _enable_wal(conn, busy_timeout)
        if mode != "wal":
            raise StoreError(
                f"SQLite store {path}: SQLite kept journal_mode={mode} instead of WAL; use a "
                "file on a local disk (WAL needs shared memory, so no network file systems "
                "and no ':memory:')"
            )
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        if read_only:
            conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection, busy_timeout: float) -> str:
    # Switching a new file to WAL needs a moment of exclusive access, and SQLite does not
    # always call the busy handler for it: when several processes open a new file at once,
    # try again until the busy timeout has passed. A file already in WAL answers at once.
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            row = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return str(row[0]).lower()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def write_transaction[T](
    conn: sqlite3.Connection, job: Callable[..., T], args: tuple[Any, ...] = ()
) -> T:
    """Run ``job(conn, *args)`` in one ``BEGIN IMMEDIATE`` transaction: committed if it
    returns, else undone.

    ``IMMEDIATE`` takes the write lock before the first read, so what a transaction reads
    cannot change before it writes (no lost update between processes), and waiting for
    another process's lock goes through the busy timeout.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = job(conn, *args)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return result


type Outcome = tuple[bool, Any]
"""(True, what a piece of work returned) or (False, the exception it raised)."""

_SAVEPOINT = "SAVEPOINT psych_write"
_KEEP = "RELEASE psych_write"
_UNDO = "ROLLBACK TO psych_write"


def each_in_a_savepoint(
    conn: sqlite3.Connection, calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]]
) -> list[Outcome]:
    """Run each ``work(conn, *args)`` of `calls` in a savepoint of its own, inside the
    transaction already open: one that raises is undone alone and its exception is its
    outcome, the others stay. When SQLite undid the whole transaction (an I/O error, a full
    disk), that error is raised: nothing of any of them is left to commit.

    The writer lane runs the writes queued together this way (`_lane`), and so does a group
    of appends (`_append.append_each`)."""
    outcomes: list[Outcome] = []
    for work, args in calls:
        conn.execute(_SAVEPOINT)
        try:
            result = work(conn, *args)
        except Exception as exc:  # a refusal (LeaseLost, Conflict, ...): only this one is undone
            if not conn.in_transaction:
                raise
            conn.execute(_UNDO)
            conn.execute(_KEEP)
            outcomes.append((False, exc))
        else:
            conn.execute(_KEEP)
            outcomes.append((True, result))
    return outcomes

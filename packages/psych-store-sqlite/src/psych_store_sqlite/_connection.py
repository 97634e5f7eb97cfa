"""Connections, the threads that own them, write transactions, and sqlite errors translated.

sqlite3 blocks, so no sqlite call ever runs on the event loop: each `Lane` is one thread that
owns one connection, and every job on that connection runs in that thread, in order. A store
has two lanes: writes (one at a time, as SQLite allows) and reads (WAL lets them run while a
write is in progress, in this process or another).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from psych_core import PsychError, StoreError, StoreUnavailable

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


def write_transaction[T](conn: sqlite3.Connection, job: Callable[[sqlite3.Connection], T]) -> T:
    """Run `job` in one ``BEGIN IMMEDIATE`` transaction: committed if it returns, else undone.

    ``IMMEDIATE`` takes the write lock before the first read, so what a transaction reads
    cannot change before it writes (no lost update between processes), and waiting for
    another process's lock goes through the busy timeout.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = job(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return result


class Lane:
    """One thread and the one connection it owns; jobs run there one at a time, in order.

    The connection is opened by the first job, so creating a store does no IO. A job that
    fails with a sqlite error raises the core's error instead (`translate`). A job whose
    caller was cancelled before the job started is skipped.

    The thread is a daemon fed by a queue, which costs less per call than an executor (a
    step makes one call). It ends when the lane is closed, or when the lane is garbage
    collected without being closed, and closes its connection as it ends.
    """

    def __init__(
        self, name: str, opener: Callable[[], sqlite3.Connection], path: str, busy_timeout: float
    ) -> None:
        self._path = path
        self._jobs: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(
            target=_serve,
            args=(self._jobs, opener, path, busy_timeout),
            name=name,
            daemon=True,
        )
        self._started = False
        # If the lane is dropped without close(), its thread still ends and closes the file.
        weakref.finalize(self, self._jobs.put, None)

    async def run[T](self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run `job` with this lane's connection in this lane's thread."""
        if self._closed:
            raise StoreError(f"SQLite store {self._path} is closed; create a new SQLiteStore")
        return await self._submit(job)

    async def close(self) -> None:
        """Close the connection in its thread, then let the thread end."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            await self._submit(_close_lane)

    async def _submit[T](self, job: Callable[[sqlite3.Connection], T]) -> T:
        if not self._started:
            self._started = True
            self._thread.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, job))
        return await future


_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[sqlite3.Connection], Any]]


def _close_lane(conn: sqlite3.Connection) -> None:
    """The job that ends a lane: its connection is closed and its thread returns."""


def _serve(
    jobs: queue.SimpleQueue[_Item | None],
    opener: Callable[[], sqlite3.Connection],
    path: str,
    busy_timeout: float,
) -> None:
    """A lane's thread: run each job with the one connection, hand the outcome to its loop."""
    connection: list[sqlite3.Connection] = []  # opened by the first job
    try:
        while (item := jobs.get()) is not None:
            if not _run_one(item, connection, opener, path, busy_timeout):
                return
            # Drop the job before waiting for the next: it may hold the store, which must be
            # free to be collected (and so end this thread) when its owner lets go of it.
            del item
    finally:
        for conn in connection:
            conn.close()


def _run_one(
    item: _Item,
    connection: list[sqlite3.Connection],
    opener: Callable[[], sqlite3.Connection],
    path: str,
    busy_timeout: float,
) -> bool:
    """Run one job and hand its outcome to its loop; False when the job ends the lane."""
    loop, future, job = item
    if job is _close_lane:
        while connection:
            connection.pop().close()
        _settle_soon(loop, future, True, None)
        return False
    if future.cancelled():  # a benign race: at worst the job runs for nobody
        return True
    try:
        if not connection:
            connection.append(opener())
        result = job(connection[0])
    except sqlite3.Error as exc:
        error = translate(exc, path, busy_timeout)
        error.__cause__ = exc
        _settle_soon(loop, future, False, error)
    except BaseException as exc:  # handed to the caller, whatever it is
        _settle_soon(loop, future, False, exc)
    else:
        _settle_soon(loop, future, True, result)
    return True


def _settle_soon(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], ok: bool, value: Any
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
        loop.call_soon_threadsafe(_settle, future, ok, value)


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # cancelled while the job ran
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)

"""Lanes: the threads that own the store's connections, and how work reaches them.

sqlite3 blocks, so no sqlite call ever runs on the event loop: each `Lane` is one thread that
owns one connection, and every job on that connection runs in that thread, in order. A store
has two lanes: writes (one at a time, as SQLite allows) and reads (WAL lets them run while a
write is in progress, in this process or another).

The writer commits in groups: the writes already queued when its thread takes one (up to
`GROUP_MAX`) share one ``BEGIN IMMEDIATE`` transaction, each in a savepoint of its own, so each
is still all or nothing and none is answered before the commit is on disk. With one write at a
time this is exactly one transaction per write; with many runs in flight, one ``fsync`` serves
many steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from psych_core import StoreError
from psych_store_sqlite._connection import (
    Outcome,
    each_in_a_savepoint,
    translate,
    write_transaction,
)

GROUP_MAX = 64
"""The most writes that share one commit."""


class _Job(NamedTuple):
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    work: Callable[..., Any]
    args: tuple[Any, ...]
    transact: bool


class Lane:
    """One thread and the one connection it owns; jobs run there one at a time, in order.

    The connection is opened by the first job, so creating a store does no IO. A job that
    fails with a sqlite error raises the core's error instead (`translate`). A job whose
    caller was cancelled before the job started is skipped.

    The thread is a daemon fed by a queue: a call costs one wake-up of the thread and one of
    the event loop, less than an executor's (README, "What a step costs"). Jobs are plain
    functions and their arguments, never closures built per call. The thread ends when the
    lane is closed, or when the lane is garbage collected without being closed, and closes its
    connection as it ends.
    """

    def __init__(
        self, name: str, opener: Callable[[], sqlite3.Connection], path: str, busy_timeout: float
    ) -> None:
        self._path = path
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(
            target=_serve,
            args=(_Worker(self._jobs, opener, path, busy_timeout),),
            name=name,
            daemon=True,
        )
        self._started = False
        # If the lane is dropped without close(), its thread still ends and closes the file.
        weakref.finalize(self, self._jobs.put, None)

    def run[T](self, work: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``work(connection, *args)`` for this lane's thread; await the result.

        A plain function returning the future (not a coroutine): the job is queued at the
        call, and a step pays for no extra coroutine frame.
        """
        return self._submit(work, args, transact=False)

    def transact[T](self, work: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Like `run`, with the work in a ``BEGIN IMMEDIATE`` transaction (shared with the
        writes queued beside it, each in its own savepoint): all of it is written, or none."""
        return self._submit(work, args, transact=True)

    async def close(self) -> None:
        """Close the connection in its thread, then let the thread end."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            await self._submit(_close_lane, (), transact=False, closing=True)

    def _submit[T](
        self,
        work: Callable[..., T],
        args: tuple[Any, ...],
        *,
        transact: bool,
        closing: bool = False,
    ) -> asyncio.Future[T]:
        if self._closed and not closing:
            raise StoreError(f"SQLite store {self._path} is closed; create a new SQLiteStore")
        if not self._started:
            self._started = True
            self._thread.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put(_Job(loop, future, work, args, transact))
        return future


def _close_lane(conn: sqlite3.Connection) -> None:
    """The job that ends a lane: its connection is closed and its thread returns."""


class _Worker:
    """What a lane's thread holds: its queue, and its connection once opened."""

    def __init__(
        self,
        jobs: queue.SimpleQueue[_Job | None],
        opener: Callable[[], sqlite3.Connection],
        path: str,
        busy_timeout: float,
    ) -> None:
        self.jobs = jobs
        self.opener = opener
        self.path = path
        self.busy_timeout = busy_timeout
        self.connection: sqlite3.Connection | None = None
        self.held: _Job | None = None  # taken from the queue after a group, for next time
        self.stop = False

    def connect(self) -> sqlite3.Connection:
        if self.connection is None:
            self.connection = self.opener()
        return self.connection

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def error(self, exc: BaseException) -> BaseException:
        """The exception the caller gets: the core's error for a sqlite one."""
        if isinstance(exc, sqlite3.Error):
            error = translate(exc, self.path, self.busy_timeout)
            error.__cause__ = exc
            return error
        return exc

    def next_job(self) -> _Job | None:
        """The next job, waiting for one; None when the lane ends."""
        if self.held is not None:
            job, self.held = self.held, None
            return job
        return None if self.stop else self.jobs.get()

    def queued_writes(self, first: _Job) -> list[_Job]:
        """`first` and the writes queued behind it now, without waiting for more."""
        group = [first]
        # This thread is the queue's only consumer: what it sees queued stays there.
        while len(group) < GROUP_MAX and not self.jobs.empty():
            job = self.jobs.get_nowait()
            if job is None:
                self.stop = True
                break
            if not job.transact:
                self.held = job
                break
            group.append(job)
        return group


def _serve(worker: _Worker) -> None:
    """A lane's thread: run each job with the one connection, hand the outcome to its loop."""
    try:
        while (job := worker.next_job()) is not None:
            if job.work is _close_lane:
                worker.close()
                _settle(job.loop, [(job.future, (True, None))])
                return
            if job.transact:
                _write_group(worker, worker.queued_writes(job))
            elif not job.future.cancelled():  # a benign race: at worst it runs for nobody
                _settle(job.loop, [(job.future, _attempt(worker, job))])
            # Drop the job before waiting for the next: it may hold the store, which must be
            # free to be collected (and so end this thread) when its owner lets go of it.
            del job
    finally:
        worker.close()


def _attempt(worker: _Worker, job: _Job) -> Outcome:
    try:
        conn = worker.connect()
        if job.transact:
            return True, write_transaction(conn, job.work, job.args)
        return True, job.work(conn, *job.args)
    except BaseException as exc:  # handed to the caller, whatever it is
        return False, worker.error(exc)


def _write_group(worker: _Worker, group: list[_Job]) -> None:
    """Run writes in one transaction, one savepoint each, and settle them after the commit;
    when the transaction fails, every one of them fails with its error (none was written)."""
    live = [job for job in group if not job.future.cancelled()]
    if len(live) <= 1:  # a write alone: its own transaction, no savepoint
        for job in live:
            _settle(job.loop, [(job.future, _attempt(worker, job))])
        return
    try:
        calls = [(job.work, job.args) for job in live]
        outcomes = [
            (ok, value if ok else worker.error(value))
            for ok, value in write_transaction(worker.connect(), each_in_a_savepoint, (calls,))
        ]
    except BaseException as exc:
        outcomes = [(False, worker.error(exc))] * len(live)
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Outcome]]] = {}
    for job, outcome in zip(live, outcomes, strict=True):
        by_loop.setdefault(job.loop, []).append((job.future, outcome))
    for loop, settled in by_loop.items():
        _settle(loop, settled)


def _settle(
    loop: asyncio.AbstractEventLoop,
    settled: list[tuple[asyncio.Future[Any], Outcome]],
) -> None:
    """Hand outcomes to their loop: one wake-up for all of them."""
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
        loop.call_soon_threadsafe(_resolve, settled)


def _resolve(settled: list[tuple[asyncio.Future[Any], Outcome]]) -> None:
    for future, (ok, value) in settled:
        if future.done():  # cancelled while the job ran
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

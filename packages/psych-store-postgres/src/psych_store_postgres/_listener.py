"""One dedicated connection that LISTENs for the store's notifications and wakes waiters.

Two channels per schema: ``<schema>.work`` (a run became claimable: admitted, woken, released)
and ``<schema>.records`` (new records on a watched run; the payload is its id). The connection is
opened on the first `wait`, kept alive with a ping, and reopened with backoff when it drops.
While it is down waiters poll instead; when it comes back every waiter is woken once, since a
notification may have been missed meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

type _AnyConnection = asyncpg.Connection[Any] | PoolConnectionProxy[Any]

log = logging.getLogger("psych_store_postgres.listener")

_PING_EVERY = 15.0
_PING_TIMEOUT = 5.0
_FIRST_DELAY = 0.05
_LAST_DELAY = 2.0
_FIRST_CONNECT_WAIT = 1.0
"""How long a first `wait` gives the listener to connect before it polls instead."""


class Listener:
    """Wakes in-process waiters on the store's notifications; see the module docstring."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        work_channel: str,
        records_channel: str,
        where: str,
    ) -> None:
        self._connect = connect
        self._work_channel = work_channel
        self._records_channel = records_channel
        self._where = where
        self._work_waiters: set[asyncio.Event] = set()
        self._run_waiters: dict[str, set[asyncio.Event]] = {}
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._dropped = asyncio.Event()
        self._listening = False
        self._closed = False

    @property
    def listening(self) -> bool:
        """Whether notifications are arriving now (else waiters must poll)."""
        return self._listening

    async def start(self) -> bool:
        """Start listening if not yet; return whether notifications arrive now.

        The first call waits up to a second for the connection; later calls never wait.
        """
        if self._closed:
            return False
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name="psych-postgres-listener")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_FIRST_CONNECT_WAIT):
                    await self._settled.wait()
        return self._listening

    @contextlib.contextmanager
    def subscription(self, run_id: str | None) -> Iterator[asyncio.Event]:
        """An event set when work appears (`run_id` None) or records land on `run_id`."""
        event = asyncio.Event()
        if run_id is None:
            self._work_waiters.add(event)
        else:
            self._run_waiters.setdefault(run_id, set()).add(event)
        try:
            yield event
        finally:
            if run_id is None:
                self._work_waiters.discard(event)
            else:
                waiters = self._run_waiters.get(run_id)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._run_waiters[run_id]

    async def close(self) -> None:
        """Stop listening and close the connection."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._wake_all()

    # -- the connection ---------------------------------------------------------------------

    async def _supervise(self) -> None:
        delay = _FIRST_DELAY
        failures = 0
        while not self._closed:
            try:
                conn = await self._open()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._settled.set()
                failures += 1
                # Once per outage at WARNING; every further try at DEBUG.
                log.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "Postgres store %s: cannot listen for notifications (%s); waiters poll "
                    "until it can",
                    self._where,
                    exc,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, _LAST_DELAY)
                continue
            if failures:
                log.warning("Postgres store %s: listening again", self._where)
            delay = _FIRST_DELAY
            failures = 0
            self._listening = True
            self._settled.set()
            self._wake_all()  # anything notified while nobody listened
            try:
                await self._keep_alive(conn)
            finally:
                self._listening = False
                conn.terminate()
                self._wake_all()

    async def _open(self) -> asyncpg.Connection:
        conn = await self._connect()
        try:
            self._dropped.clear()
            conn.add_termination_listener(self._on_termination)
            await conn.add_listener(self._work_channel, self._on_notification)
            await conn.add_listener(self._records_channel, self._on_notification)
        except BaseException:
            conn.terminate()
            raise
        return conn

    async def _keep_alive(self, conn: asyncpg.Connection) -> None:
        while not self._closed and not conn.is_closed():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_PING_EVERY):
                    await self._dropped.wait()
            if self._dropped.is_set() or conn.is_closed():
                return
            try:
                await conn.execute("SELECT 1", timeout=_PING_TIMEOUT)
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                return

    def _on_termination(self, conn: _AnyConnection) -> None:
        self._listening = False
        self._dropped.set()
        self._wake_all()

    def _on_notification(
        self, conn: _AnyConnection, pid: int, channel: str, payload: object
    ) -> None:
        if channel == self._work_channel:
            for event in self._work_waiters:
                event.set()
        else:
            for event in self._run_waiters.get(str(payload), ()):
                event.set()

    def _wake_all(self) -> None:
        for event in self._work_waiters:
            event.set()
        for waiters in self._run_waiters.values():
            for event in waiters:
                event.set()

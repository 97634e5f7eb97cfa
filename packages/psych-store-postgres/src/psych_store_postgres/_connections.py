"""The connection pool, and the one loop every operation goes through: take a connection, run,
translate what went wrong, and send again what is safe to send again.

The pool is asyncpg's, with its per-release reset turned off: by default asyncpg runs
``SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`` each time a connection goes
back, a round trip that cost about 29% of throughput. The store never changes session state on
a pooled connection (no SET, no LISTEN, no cursor, no session advisory lock; migrations take a
transaction-scoped lock), and asyncpg still rolls back a transaction left open by a cancelled
call before the connection is reused, so there is nothing to reset.

A connection that comes back from an operation that ended cleanly (no exception, no open
transaction) is held by the store and lent again to the next operation without going through
the pool: asyncpg's acquire and release cost about 35 µs of CPU and as much wall time per
statement (a queue, a proxy, a shielded task, an inactivity timer), a tenth of an append.
Everything else goes back through the pool, which settles a cancelled statement, rolls back an
open transaction and replaces a broken connection. A held connection goes to the pool instead
when a caller is waiting on the pool, so nobody waits for a connection the store holds, and
when it has not been lent for `HELD_FOR` seconds, so that an idle store's connections are
still closed by the pool's `max_inactive_connection_lifetime`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from psych_adapter_kit import read_in_pieces
from psych_core import PsychError, StoreError
from psych_store_postgres._errors import (
    Handoff,
    NotCommitted,
    broken_before_sending,
    lost,
    refused_at_connect,
    rolled_back,
    translate,
    unavailable,
    uncertain,
)

type Connection = PoolConnectionProxy[asyncpg.Record]
"""A connection lent by the store's pool."""

log = logging.getLogger("psych_store_postgres")

_FIRST_DELAY = 0.05
_LAST_DELAY = 1.0

HELD_FOR = 60.0
"""Seconds a held connection may wait for its next operation before it goes back to the pool
(which closes it after `max_inactive_connection_lifetime` more)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """How the store connects; see `PostgresStore` for each one's meaning."""

    dsn: str
    listen_dsn: str
    min_size: int
    max_size: int
    connect_timeout: float
    command_timeout: float | None
    retry_for: float
    application_name: str

    def __post_init__(self) -> None:
        if not 0 <= self.min_size <= self.max_size or self.max_size < 1:
            raise ValueError(
                "need 0 <= min_size <= max_size and max_size >= 1, not "
                f"min_size={self.min_size}, max_size={self.max_size}"
            )
        if self.retry_for < 0 or self.connect_timeout <= 0:
            raise ValueError("retry_for must be >= 0 and connect_timeout > 0")


def describe_dsn(dsn: str, schema: str) -> str:
    """Where the store is, for messages: host, port, database and schema; never a password."""
    if "://" not in dsn:
        return f"(schema {schema})"
    parts = urlsplit(dsn)
    host = parts.hostname or "localhost"
    port = parts.port or 5432
    database = parts.path.lstrip("/") or parts.username or "postgres"
    return f"{host}:{port}/{database} (schema {schema})"


def _lendable(conn: Connection) -> bool:
    """Whether `conn` is open, outside a transaction, and still lent by the pool (asyncpg
    takes back a connection that broke)."""
    try:
        return not conn.is_closed() and not conn.is_in_transaction()
    except asyncpg.InterfaceError:  # released: the pool has it back
        return False


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset: nothing to undo (see the module docstring)."""


async def read_replies_in_pieces(conn: asyncpg.Connection) -> None:
    """A new connection's setup (the pool's ``init``): its socket read in pieces below
    glibc's mmap threshold (`psych_adapter_kit.read_in_pieces`), not 256 KiB at a time,
    so that each reply to a step's statement does not map and unmap a buffer."""
    read_in_pieces(getattr(conn, "_transport", None))  # asyncpg keeps it there


class Connections:
    """The store's pool, opened on first use in the running event loop, and its retry loop."""

    def __init__(self, settings: Settings, where: str) -> None:
        self.settings = settings
        self.where = where
        self._pool: asyncpg.Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._held: list[tuple[Connection, float]] = []  # (connection, when it came back)
        self._acquiring = 0  # operations waiting on the pool for a connection
        self._sweep: asyncio.TimerHandle | None = None  # the next `_give_back_idle`
        self._giving_back: set[asyncio.Task[None]] = set()

    def _server_settings(self) -> dict[str, str]:
        # A claim or a deletion holds row locks inside a transaction: if the process stops
        # between its statements, the server ends it rather than keep the locks.
        return {
            "application_name": self.settings.application_name,
            "idle_in_transaction_session_timeout": "60000",
        }

    async def pool(self) -> asyncpg.Pool:
        """The pool, created the first time it is needed."""
        if self._closed:
            raise StoreError(f"Postgres store {self.where} is closed; create a new store")
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            raise StoreError(
                f"Postgres store {self.where} is bound to the event loop it first ran in; "
                "create one store per event loop (for example inside the function that "
                "asyncio.run() runs)"
            )
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                settings = self.settings
                self._pool = await asyncpg.create_pool(
                    settings.dsn,
                    min_size=settings.min_size,
                    max_size=settings.max_size,
                    timeout=settings.connect_timeout,
                    command_timeout=settings.command_timeout,
                    max_inactive_connection_lifetime=300.0,
                    reset=_keep_session,
                    init=read_replies_in_pieces,
                    server_settings=self._server_settings(),
                )
                self._loop = loop
        return self._pool

    async def connect(self) -> asyncpg.Connection:
        """A connection outside the pool (the listener's)."""
        conn = await asyncpg.connect(
            self.settings.listen_dsn,
            timeout=self.settings.connect_timeout,
            server_settings={"application_name": f"{self.settings.application_name} listen"},
        )
        await read_replies_in_pieces(conn)
        return conn

    async def run[T](
        self,
        what: str,
        op: Callable[[Connection, bool], Awaitable[T]],
        *,
        resend: bool,
        hint: str = "try again",
    ) -> T:
        """Run ``op(connection, again)`` on a pooled connection, retrying what is safe.

        A connection that could not be had, or a transaction the server rolled back, is tried
        again with backoff for up to ``retry_for`` seconds. When the connection broke while
        `op` was in flight, `op` runs again only if `resend` (with ``again`` true, so it can
        recognise its own earlier success); otherwise `StoreUnavailable` says the outcome is
        unknown, with `hint`. `op` raises `NotCommitted` for a break it knows left nothing
        committed.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.retry_for
        delay = _FIRST_DELAY
        again = False
        while True:
            problem: BaseException
            try:
                pool = await self.pool()
                conn = await self._take(pool)
            except StoreError:
                raise
            except Exception as exc:
                if not refused_at_connect(exc):
                    raise translate(self.where, what, exc) from exc
                problem = exc
            else:
                clean = False
                try:
                    result = await op(conn, again)
                    clean = True
                    return result
                except NotCommitted as exc:
                    problem = exc.cause
                except (PsychError, Handoff):
                    raise  # the contract's own refusals (Conflict, RunNotFound, ...)
                except Exception as exc:
                    if rolled_back(exc):
                        problem = exc
                    elif broken_before_sending(exc):
                        with contextlib.suppress(Exception):
                            conn.terminate()  # never lend it again
                        problem = exc
                    elif lost(exc, conn):
                        if not resend:
                            raise uncertain(self.where, what, exc, hint) from exc
                        log.warning(
                            "Postgres store %s: the connection broke while %s was in flight "
                            "(%s); sending it again",
                            self.where,
                            what,
                            type(exc).__name__,
                        )
                        again = True
                        problem = exc
                    else:
                        raise translate(self.where, what, exc) from exc
                finally:
                    if not (clean and self._hold(conn, loop.time())):
                        await self._release(pool, conn)
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise unavailable(self.where, what, problem, self.settings.retry_for)
            log.info("Postgres store %s: %s waits for the database (%r)", self.where, what, problem)
            await asyncio.sleep(min(delay * random.uniform(0.5, 1.5), remaining))
            delay = min(delay * 2, _LAST_DELAY)

    async def _take(self, pool: asyncpg.Pool) -> Connection:
        """The connection held last, else one from the pool."""
        while self._held:
            conn, _ = self._held.pop()
            if _lendable(conn):
                return conn
            await self._release(pool, conn)  # the pool replaces it (if it has not yet)
        self._acquiring += 1
        try:
            # No timeout here: opening a connection has its own (connect_timeout), and a
            # connection in use comes back within its statement's command_timeout.
            return await pool.acquire()
        finally:
            self._acquiring -= 1

    def _hold(self, conn: Connection, now: float) -> bool:
        """Keep `conn` for the next operation; False when it must go back to the pool (the
        store is closing, an operation waits on the pool, or it is not clean)."""
        if self._closed or self._acquiring or not _lendable(conn):
            return False
        self._held.append((conn, now))
        if self._sweep is None:
            self._sweep = asyncio.get_running_loop().call_later(HELD_FOR, self._give_back_idle)
        return True

    def _give_back_idle(self) -> None:
        """Every `HELD_FOR` seconds while connections are held: those not lent since go
        back to the pool, which closes them when they stay idle."""
        self._sweep = None
        pool = self._pool
        if self._closed or pool is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        idle = [conn for conn, since in self._held if now - since >= HELD_FOR]
        self._held = [(conn, since) for conn, since in self._held if now - since < HELD_FOR]
        if idle:
            task = loop.create_task(self._release_each(pool, idle))
            self._giving_back.add(task)
            task.add_done_callback(self._giving_back.discard)
        if self._held:
            self._sweep = loop.call_later(HELD_FOR, self._give_back_idle)

    async def _release_each(self, pool: asyncpg.Pool, conns: list[Connection]) -> None:
        for conn in conns:
            await self._release(pool, conn)

    @staticmethod
    async def _release(pool: asyncpg.Pool, conn: Connection) -> None:
        # A broken connection is terminated by the pool and replaced on the next acquire;
        # a failure here must not hide the operation's own outcome.
        with contextlib.suppress(Exception):
            await pool.release(conn)

    async def close(self) -> None:
        """Close the pool: wait briefly for connections in use, then cut them."""
        self._closed = True
        pool, self._pool = self._pool, None
        held, self._held = self._held, []
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        if pool is None:
            return
        await self._release_each(pool, [conn for conn, _ in held])
        try:
            await asyncio.wait_for(pool.close(), timeout=10)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            pool.terminate()

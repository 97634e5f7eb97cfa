"""The connection pool, and `Pool.run`: one call of the store on one pooled connection, with
the retries that are safe and a time limit.

The pool is small and plain: at most `size` connections, opened on demand, kept while they
stay healthy, closed when they fail, when they have been idle past `recycle` seconds (the
server's ``wait_timeout`` would close them anyway), or when a call was cancelled while it used
one. A connection released inside a transaction, or whose last text was not answered in
full (`Connection.in_doubt`: an error part-way, a lost answer, a cancellation), is closed,
never reused: no call ever inherits another's transaction, or a session whose state is
unknown. Closing it is what rolls back whatever it left open.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
import weakref
from collections.abc import Awaitable, Callable

from psych_core import PsychError, StoreError, StoreLimits, StoreUnavailable
from psych_store_mysql._driver import Connection, Settings, close_quietly, connect
from psych_store_mysql._failures import Kind, classify, translate
from psych_store_mysql._schema import Server, inspect

_FIRST_BACKOFF = 0.01
_LAST_BACKOFF = 0.5


class Pool:
    """Up to `size` connections to one database, shared by the calls of one store.

    Args:
        settings: where and how to connect.
        size: the most connections open at once; a call waits for a free one.
        recycle: seconds after which an idle connection is closed rather than reused.
        timeout: seconds one call may take, waiting for a connection included.
        retry_for: seconds a call keeps retrying what is safe to retry.
        limits: what one append may carry; the pool's first connection checks that the
            server can take it (`inspect`).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        size: int,
        recycle: float,
        timeout: float,
        retry_for: float,
        limits: StoreLimits,
    ) -> None:
        self.settings = settings
        self._size = size
        self._recycle = recycle
        self._timeout = timeout
        self._retry_for = retry_for
        self._limits = limits
        self._server: Server | None = None
        self._free: collections.deque[Connection] = collections.deque()
        self._open: set[Connection] = set()
        self._slots = asyncio.Semaphore(size)
        self._closed = False
        # A store dropped without close() still closes its sockets (no ResourceWarning).
        self._finalizer = weakref.finalize(self, _close_all, self._open)

    @property
    def server(self) -> Server | None:
        """What the server is, once a connection has been made."""
        return self._server

    @property
    def open_connections(self) -> int:
        """How many connections are open now (in use or idle)."""
        return len(self._open)

    async def run[T](
        self, job: Callable[[Connection, bool], Awaitable[T]], *, what: str, resend: bool
    ) -> T:
        """Run `job` on a pooled connection, retrying what is safe to retry.

        `job` gets the connection and a flag saying that an earlier try of this call may have
        been applied (its answer was lost), for calls that can check.

        A deadlock or lock wait timeout (nothing written) is retried with backoff. A lost or
        refused connection is retried when nothing was sent yet, or when `resend` says the
        call is idempotent; otherwise it is `StoreUnavailable`, since the call may or may not
        have been applied. Retries stop after `retry_for` seconds; a call that takes longer
        than `timeout` is abandoned (its connection closed) with `StoreUnavailable`.

        Args:
            what: the call, for error messages (``"append to run R"``).
            resend: whether running the call twice is the same as running it once.
        """
        if self._closed:
            raise StoreError(
                f"MySQL store {self.settings.where} is closed; create a new MySQLStore"
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._retry_for
        delay = _FIRST_BACKOFF
        uncertain = False
        while True:
            sent = False
            try:
                async with asyncio.timeout(self._timeout):
                    conn = await self._acquire()
                    conn.sent = False
                    try:
                        result = await job(conn, uncertain)
                    except BaseException as exc:
                        sent = conn.sent
                        self._release(conn, discard=not isinstance(exc, PsychError))
                        raise
                    self._release(conn)
                    return result
            except PsychError:
                raise
            except TimeoutError as exc:
                if not sent:
                    raise StoreUnavailable(
                        f"MySQL store {self.settings.where}: {what}: no connection within "
                        f"{self._timeout} s (all {self._size} of the store's connections were "
                        "busy, or the server did not answer); nothing was sent. Retry later, "
                        "or raise the store's timeout or max_connections"
                    ) from exc
                raise StoreUnavailable(
                    f"MySQL store {self.settings.where}: {what}: no answer within "
                    f"{self._timeout} s (the server stalled, or a lock was held that long); "
                    "it may or may not have been applied: read back before doing it again"
                ) from exc
            except Exception as exc:
                kind = classify(exc)
                retry = kind is Kind.ROLLED_BACK or (
                    kind is Kind.UNREACHABLE and (resend or not sent)
                )
                if not retry:
                    if kind is Kind.UNREACHABLE:
                        raise StoreUnavailable(
                            f"MySQL store {self.settings.where}: {what}: the connection was "
                            f"lost before the answer came ({exc}); the call may or may not "
                            "have been applied: read back before doing it again"
                        ) from exc
                    raise translate(exc, self.settings, what) from exc
                if loop.time() + delay > deadline:
                    raise translate(exc, self.settings, what) from exc
                uncertain = uncertain or (sent and kind is Kind.UNREACHABLE)
                await asyncio.sleep(random.uniform(delay / 2, delay))
                delay = min(delay * 2, _LAST_BACKOFF)

    async def _acquire(self) -> Connection:
        await self._slots.acquire()
        try:
            now = time.monotonic()
            while self._free:
                conn = self._free.pop()
                if conn.closed or conn.looks_broken() or now - conn.last_used > self._recycle:
                    self._forget(conn)
                    continue
                return conn
            return await self._connect()
        except BaseException:
            self._slots.release()
            raise

    async def _connect(self) -> Connection:
        known = self._server
        conn = await connect(self.settings, known.max_allowed_packet if known else 1 << 30)
        self._open.add(conn)
        try:
            if self._server is None:
                self._server = await inspect(conn, self.settings, self._limits)
            conn.set_max_packet(self._server.max_allowed_packet)
        except BaseException:
            self._forget(conn)
            raise
        return conn

    def _release(self, conn: Connection, *, discard: bool = False) -> None:
        try:
            if discard or self._closed or conn.closed or conn.in_doubt or conn.in_transaction:
                self._forget(conn)
            else:
                self._free.append(conn)
        finally:
            self._slots.release()

    def _forget(self, conn: Connection) -> None:
        self._open.discard(conn)
        conn.close()

    async def close(self) -> None:
        """Close the idle connections now; those in use close when their call ends."""
        self._closed = True
        while self._free:
            conn = self._free.pop()
            self._open.discard(conn)
            await conn.quit()


def _close_all(connections: set[Connection]) -> None:
    for conn in list(connections):
        close_quietly(conn)
    connections.clear()

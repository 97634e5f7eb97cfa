"""`PostgresLiveChannel`: live text between processes, by LISTEN/NOTIFY on the store's database.

Each run has a channel of its own, ``<schema>.live.<digest of the run id>``, so a process is
sent only the pieces of the runs it follows; the payload names the run too, and pieces of
other runs (two ids whose digests meet) are dropped on arrival. A NOTIFY payload holds less
than 8000 bytes, so a long piece is sent as several, each a `LiveText` with its own offset,
in one statement (PostgreSQL delivers a transaction's notifications together and in order).
Nothing is stored: a notification nobody listens for is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from psych_core import LiveChannel, LiveText, StoreUnavailable
from psych_store_postgres._connections import describe_dsn, read_replies_in_pieces
from psych_store_postgres._sql import check_schema_name

type _AnyConnection = asyncpg.Connection[Any] | PoolConnectionProxy[Any]

log = logging.getLogger("psych_store_postgres.live")

MAX_PAYLOAD_BYTES = 7900
"""The longest NOTIFY payload sent; PostgreSQL refuses 8000 bytes and more."""

DEFAULT_BUFFER = 1024
"""Pieces a subscriber may fall behind by before pieces are dropped for it."""

_NOTIFY = "SELECT count(pg_notify($1, payload)) FROM unnest($2::text[]) AS payload"
_CHANNEL_BYTES = 63  # PostgreSQL's longest identifier


class LiveConnectionLost(ConnectionError):
    """The listening connection broke: pieces published from now on would not arrive."""


class PostgresLiveChannel(LiveChannel):
    """A `LiveChannel` across processes and hosts: LISTEN/NOTIFY in the store's database.

    Workers publish (``Runtime(live=PostgresLiveChannel(dsn))``); the processes that serve chat
    screens subscribe through `stream_text`. Point both at the database (and `schema`) of
    their `PostgresStore`. The channel opens two connections of its own, on first use: one
    that sends (one statement per piece, in autocommit) and one that listens (LISTEN on the
    channel of each run followed, UNLISTEN when its last subscriber leaves). Close it with
    `close` (or ``async with``).

    Best effort, as the port allows: a publish that cannot reach the database raises (the
    runtime logs it and goes on without live text for that model call); a subscriber more than
    `buffer` pieces behind misses pieces (counted in `dropped`); when the listening
    connection breaks, every subscription's iterator raises `LiveConnectionLost`
    (`stream_text` then follows the log alone, and a new subscription connects again).

    Why NOTIFY: the database is already there, and it costs one round trip per piece with no
    table and no cleanup. Each NOTIFY takes PostgreSQL's global notification lock at commit,
    so pieces are published by one sender per model call, joined while it is busy (a fast
    model sends fewer, longer pieces, not more statements).

    Args:
        dsn: the database, as for `PostgresStore`.
        schema: names the channels (``<schema>.live.*``): use the store's.
        buffer: pieces each subscriber may have waiting.
        connect_timeout: seconds to open a connection.
        command_timeout: seconds one publish may take.
        application_name: how its connections appear in ``pg_stat_activity``.
        listen_dsn: where the listening connection goes, when `dsn` is a pooler that does
            not keep sessions (LISTEN needs one); `dsn` by default.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "psych",
        buffer: int = DEFAULT_BUFFER,
        connect_timeout: float = 5.0,
        command_timeout: float = 5.0,
        application_name: str = "psych-live",
        listen_dsn: str | None = None,
    ) -> None:
        if buffer < 1:
            raise ValueError(f"buffer must be at least 1, not {buffer}")
        self._dsn = dsn
        self._listen_dsn = listen_dsn or dsn
        self._prefix = f"{check_schema_name(schema)}.live."
        self._buffer = buffer
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        self._application_name = application_name
        self._where = describe_dsn(dsn, schema)
        self._sender: asyncpg.Connection | None = None
        self._sending = asyncio.Lock()
        self._listener: asyncpg.Connection | None = None
        self._listening = asyncio.Lock()
        self._subscribers: dict[str, set[asyncio.Queue[LiveText | LiveConnectionLost]]] = {}
        self._channels: dict[str, int] = {}  # subscriptions per channel LISTENed to
        self._closed = False
        self.published = 0
        self.dropped = 0

    def channel_of(self, run_id: str) -> str:
        """The NOTIFY channel of `run_id`'s pieces."""
        room = _CHANNEL_BYTES - len(self._prefix)
        return self._prefix + hashlib.sha256(run_id.encode()).hexdigest()[:room]

    def __repr__(self) -> str:
        return f"PostgresLiveChannel({self._where})"

    # -- publishing --------------------------------------------------------------------------

    async def publish(self, text: LiveText) -> None:
        """NOTIFY the run's channel with `text` (split into several pieces when long).

        Raises `StoreUnavailable` when the database cannot be reached or the statement fails;
        the runtime bounds the call in time and never fails a run for it.
        """
        payloads = payloads_of(text)
        if not payloads:
            return
        async with self._sending:
            try:
                conn = await self._sending_connection()
                await conn.execute(
                    _NOTIFY, self.channel_of(text.run_id), payloads, timeout=self._command_timeout
                )
            except BaseException as exc:
                # A statement cut off (a timeout, a cancel) leaves the connection in doubt.
                sender, self._sender = self._sender, None
                if sender is not None:
                    sender.terminate()
                if isinstance(exc, Exception):
                    raise StoreUnavailable(
                        f"live channel {self._where}: run {text.run_id}, seq {text.seq}: "
                        f"cannot publish ({type(exc).__name__}: {exc})"
                    ) from exc
                raise
        self.published += len(payloads)

    async def _sending_connection(self) -> asyncpg.Connection:
        if self._closed:
            raise StoreUnavailable(f"live channel {self._where} is closed")
        if self._sender is None or self._sender.is_closed():
            self._sender = await self._connect(self._dsn, "send")
        return self._sender

    async def _connect(self, dsn: str, role: str) -> asyncpg.Connection:
        conn = await asyncpg.connect(
            dsn,
            timeout=self._connect_timeout,
            server_settings={"application_name": f"{self._application_name} {role}"},
        )
        await read_replies_in_pieces(conn)
        return conn

    # -- subscribing -------------------------------------------------------------------------

    @asynccontextmanager
    async def subscribe(self, run_id: str) -> AsyncIterator[AsyncIterator[LiveText]]:
        """The pieces published for `run_id` while the block runs, in publish order; LISTEN
        is in place when the block begins."""
        queue: asyncio.Queue[LiveText | LiveConnectionLost] = asyncio.Queue(self._buffer)
        channel = self.channel_of(run_id)
        async with self._listening:
            conn = await self._listening_connection()
            if not self._channels.get(channel):
                await conn.add_listener(channel, self._on_notification)
            else:
                # Pieces published before now may still be on their way to the listener: a
                # round trip lets them land first (PostgreSQL sends a session's notifications
                # before it answers), so they are not handed to this subscription.
                await conn.execute("SELECT 1")
            self._channels[channel] = self._channels.get(channel, 0) + 1
            self._subscribers.setdefault(run_id, set()).add(queue)
        try:
            yield _drain(queue)
        finally:
            await self._unsubscribe(run_id, channel, queue)

    async def _unsubscribe(
        self, run_id: str, channel: str, queue: asyncio.Queue[LiveText | LiveConnectionLost]
    ) -> None:
        async with self._listening:
            subscribers = self._subscribers.get(run_id)
            if subscribers is None or queue not in subscribers:
                return  # the connection broke meanwhile: nothing is listened to any more
            subscribers.discard(queue)
            if not subscribers:
                del self._subscribers[run_id]
            self._channels[channel] -= 1
            if self._channels[channel]:
                return
            del self._channels[channel]
            conn = self._listener
            if conn is not None and not conn.is_closed():
                with contextlib.suppress(Exception):
                    await conn.remove_listener(channel, self._on_notification)

    async def _listening_connection(self) -> asyncpg.Connection:
        if self._closed:
            raise StoreUnavailable(f"live channel {self._where} is closed")
        if self._listener is None or self._listener.is_closed():
            try:
                conn = await self._connect(self._listen_dsn, "listen")
            except Exception as exc:
                raise StoreUnavailable(
                    f"live channel {self._where}: cannot listen ({type(exc).__name__}: {exc})"
                ) from exc
            conn.add_termination_listener(self._on_termination)
            self._listener = conn
        return self._listener

    def _on_notification(
        self, conn: _AnyConnection, pid: int, channel: str, payload: object
    ) -> None:
        piece = piece_of(str(payload))
        if piece is None:
            log.warning(
                "live channel %s: an unreadable payload on %s, dropped", self._where, channel
            )
            return
        for queue in self._subscribers.get(piece.run_id, ()):
            try:
                queue.put_nowait(piece)
            except asyncio.QueueFull:
                self.dropped += 1

    def _on_termination(self, conn: _AnyConnection) -> None:
        if conn is self._listener:
            self._listener = None
        if not self._closed:
            log.warning("live channel %s: the listening connection broke", self._where)
        lost = LiveConnectionLost(f"live channel {self._where}: the listening connection broke")
        for subscribers in self._subscribers.values():
            for queue in subscribers:
                # Room is made for the news: the pieces before it are moot without the rest.
                while queue.full():
                    queue.get_nowait()
                queue.put_nowait(lost)
        self._subscribers.clear()
        self._channels.clear()

    # -- closing -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Close both connections; subscriptions still open end with `LiveConnectionLost`."""
        self._closed = True
        for conn in (self._sender, self._listener):
            if conn is not None and not conn.is_closed():
                try:
                    await asyncio.wait_for(conn.close(), timeout=5)
                except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                    conn.terminate()
        self._sender = None


async def _drain(queue: asyncio.Queue[LiveText | LiveConnectionLost]) -> AsyncIterator[LiveText]:
    while True:
        item = await queue.get()
        if isinstance(item, LiveConnectionLost):
            raise item
        yield item


def payloads_of(text: LiveText, limit: int = MAX_PAYLOAD_BYTES) -> list[str]:
    """`text` as NOTIFY payloads of at most `limit` bytes each: one `LiveText` per payload,
    the later ones starting where the one before ended."""
    # Valid UTF-8 only (a lone surrogate cannot be sent; the log keeps the true text).
    clean = text.text.encode("utf-8", "replace").decode("utf-8")
    if not clean:
        return []
    envelope = _payload(text.run_id, text.attempt, text.seq, text.offset, "")
    # A character takes at most 6 bytes in the JSON (a control character as \\u00XX).
    room = (limit - len(envelope.encode())) // 6
    if room < 1:
        raise ValueError(f"run id {text.run_id[:40]!r}... leaves no room in a NOTIFY payload")
    return [
        _payload(
            text.run_id, text.attempt, text.seq, text.offset + start, clean[start : start + room]
        )
        for start in range(0, len(clean), room)
    ]


def _payload(run_id: str, attempt: int, seq: int, offset: int, text: str) -> str:
    return json.dumps(
        {"r": run_id, "a": attempt, "s": seq, "o": offset, "t": text},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def piece_of(payload: str) -> LiveText | None:
    """The `LiveText` in a payload made by `payloads_of`; None when it is not one."""
    try:
        data = json.loads(payload)
        piece = LiveText(
            run_id=data["r"], attempt=data["a"], seq=data["s"], offset=data["o"], text=data["t"]
        )
    except (ValueError, TypeError, KeyError):
        return None
    strings = (piece.run_id, piece.text)
    numbers = (piece.attempt, piece.seq, piece.offset)
    if not all(isinstance(value, str) for value in strings) or not all(
        type(value) is int for value in numbers
    ):
        return None
    return piece

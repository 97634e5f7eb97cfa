"""A TCP proxy in front of the test PostgreSQL server that reads the wire protocol as it passes.

It counts the client's round trips (each Sync or Flush of the extended protocol, and each
simple Query, waits for the server's answer), and injects faults: it can cut a connection
right after the server answered a Sync (the statement committed, the client never hears so),
or cut every connection at once. Loopback only; used by the store's tests, never by the store.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import struct
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

_SSL_REQUEST = 80877103
_GSSENC_REQUEST = 80877104
_CANCEL_REQUEST = 80877102


class PgProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to the server of `dsn`."""

    def __init__(self, dsn: str) -> None:
        parts = urlsplit(dsn)
        self._dsn = parts
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._server: asyncio.Server | None = None
        self.port = 0
        self.sent: collections.Counter[str] = collections.Counter()
        """Typed client messages forwarded, by type letter ('S' Sync, 'Q' Query, 'B' Bind...)."""
        self.answer_cut = 0
        """How many ReadyForQuery answers the proxy swallowed by cutting the connection."""
        self._cut_next_answer = False
        self._pipes: set[_Pipe] = set()

    @property
    def dsn(self) -> str:
        """The DSN that goes through the proxy."""
        netloc = self._dsn.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        netloc_text = f"{netloc[0]}@{host}" if len(netloc) == 2 else host
        return urlunsplit(self._dsn._replace(netloc=netloc_text))

    @property
    def round_trips(self) -> int:
        """Client requests that each wait for the server's answer: a Sync or a simple Query
        (answered by ReadyForQuery), or a Flush (asyncpg prepares a statement with Parse,
        Describe and Flush, then waits for the description)."""
        return self.sent["S"] + self.sent["Q"] + self.sent["H"]

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self.cut_all()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut_next_answer(self) -> None:
        """Cut the connection that next receives a ReadyForQuery for a Sync, instead of
        delivering it: the server has done the work, the client never hears the answer."""
        self._cut_next_answer = True

    def cut_all(self) -> None:
        """Cut every connection through the proxy at once."""
        for pipe in list(self._pipes):
            pipe.cut()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.close()
            return
        pipe = _Pipe(self, reader, writer, up_reader, up_writer)
        self._pipes.add(pipe)
        try:
            await pipe.run()
        finally:
            self._pipes.discard(pipe)

    def _take_cut(self) -> bool:
        if self._cut_next_answer:
            self._cut_next_answer = False
            self.answer_cut += 1
            return True
        return False


class _Pipe:
    def __init__(
        self,
        proxy: PgProxy,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        self.proxy = proxy
        self.reader, self.writer = reader, writer
        self.up_reader, self.up_writer = up_reader, up_writer
        self.cut_on_ready = False

    def cut(self) -> None:
        for writer in (self.writer, self.up_writer):
            with contextlib.suppress(Exception):
                writer.transport.abort()

    async def run(self) -> None:
        downward: asyncio.Task[None] | None = None
        try:
            if not await self._start_up():
                return
            upward = asyncio.create_task(self._client_to_server())
            downward = asyncio.create_task(self._server_to_client())
            await asyncio.wait({upward, downward}, return_when=asyncio.FIRST_COMPLETED)
            for task in (upward, downward):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.cut()

    async def _start_up(self) -> bool:
        """Forward the untyped messages that open a connection: SSLRequest or GSSENCRequest
        (answered by one byte), then the startup message. False for a cancel request."""
        while True:
            head = await self.reader.readexactly(8)
            length, code = struct.unpack("!ii", head)
            rest = await self.reader.readexactly(length - 8)
            self.up_writer.write(head + rest)
            await self.up_writer.drain()
            if code in (_SSL_REQUEST, _GSSENC_REQUEST):
                # 'N' (the tests use no TLS): go on in plain text.
                self.writer.write(await self.up_reader.readexactly(1))
                await self.writer.drain()
                continue
            if code == _CANCEL_REQUEST:
                with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                    await self.up_reader.read()
                return False
            return True

    async def _client_to_server(self) -> None:
        async for kind, message in _messages(self.reader):
            self.proxy.sent[kind] += 1
            if kind == "S" and self.proxy._take_cut():
                self.cut_on_ready = True
            self.up_writer.write(message)
            await self.up_writer.drain()

    async def _server_to_client(self) -> None:
        async for kind, message in _messages(self.up_reader):
            if kind == "Z" and self.cut_on_ready:
                self.cut()
                return
            self.writer.write(message)
            await self.writer.drain()


async def _messages(reader: asyncio.StreamReader) -> AsyncIterator[tuple[str, bytes]]:
    while True:
        head = await reader.readexactly(5)
        (length,) = struct.unpack("!i", head[1:])
        body = await reader.readexactly(length - 4)
        yield chr(head[0]), head + body


@contextlib.asynccontextmanager
async def proxy_to(dsn: str) -> AsyncIterator[PgProxy]:
    """A running proxy to the server of `dsn`, closed on exit."""
    proxy = PgProxy(dsn)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()

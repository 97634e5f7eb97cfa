"""A TCP proxy on loopback between a store and the MySQL server: it counts round trips, knows
which command is in flight on each connection, and can lose an answer, cut a connection
part-way or freeze it on purpose (fault injection on a real connection to a real server).

Each command a client sends is one MySQL packet whose sequence number is 0 (the handshake's
packets from the client are numbered 1 and up, and a command longer than 16 MiB continues in
packets numbered 1, 2, ...). So the packets numbered 0 from the client are exactly its
commands, each one round trip. A command is in flight from its first byte until the last
packet of its answer has been passed to the client: an OK, EOF or ERR packet whose status does
not say that more results follow (the proxy reads the answer's packets to know, as the
client does: result sets are a column count, column definitions, an EOF, rows and an EOF).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

_MORE_RESULTS = 0x0008  # SERVER_MORE_RESULTS_EXISTS in an OK or EOF packet's status
_COM_QUIT = 0x01
_COM_QUERY = 0x03
# An answer that is the server ending the session (ER_CONNECTION_KILLED, ER_SERVER_SHUTDOWN)
# leaves its command interrupted, not answered.
_SESSION_ENDED = frozenset({1927, 1053})


@dataclass(frozen=True)
class Interruption:
    """A connection that ended while a command was in flight.

    Attributes:
        cause: ``"client"`` (the client went: closed, or its process was killed), ``"server"``
            (the server ended the session: ``KILL CONNECTION``, a restart) or ``"cut"`` (the
            proxy cut it, `Proxy.cut`).
        command: the start of the command's text (``COM_QUERY``), to tell what was cut.
    """

    cause: str
    command: str


def _lenenc(payload: bytes, at: int) -> tuple[int, int]:
    """A length-encoded integer at `at`: (value, the offset after it)."""
    first = payload[at]
    if first < 0xFB:
        return first, at + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(payload[at + 1 : at + 1 + width], "little"), at + 1 + width


class _Answer:
    """Follows the answer to one command, packet by packet, until it is complete.

    Attributes:
        error: the error number of the ERR packet that ended it, if one did.
    """

    def __init__(self) -> None:
        self._state = "first"  # "first" | "columns" | "columns-eof" | "rows"
        self._columns = 0
        self.error: int | None = None

    def feed(self, payload: bytes, size: int) -> bool:
        """Take the answer's next packet (the start of its payload, and the payload's size);
        True when it was the last one."""
        kind = payload[0] if payload else 0x00
        if kind == 0xFF and self._state in ("first", "rows"):
            self.error = int.from_bytes(payload[1:3], "little")
            return True
        if self._state == "first":
            if kind == 0x00:  # OK: header, affected rows, insert id, status
                _, at = _lenenc(payload, 1)
                _, at = _lenenc(payload, at)
                return not self._more(payload, at)
            if kind == 0xFB:  # a LOCAL INFILE request (never asked for): nothing follows
                return True
            self._columns, _ = _lenenc(payload, 0)
            self._state = "columns"
            return False
        if self._state == "columns":
            self._columns -= 1
            if self._columns == 0:
                self._state = "columns-eof"
            return False
        if self._state == "columns-eof":
            self._state = "rows"
            return False
        if kind == 0xFE and size < 9:  # EOF: header, warnings, status
            self._state = "first"
            return not self._more(payload, 3)
        return False  # a row

    @staticmethod
    def _more(payload: bytes, at: int) -> bool:
        status = int.from_bytes(payload[at : at + 2], "little")
        return bool(status & _MORE_RESULTS)


class _Packets:
    """Splits one direction of the stream into packets, keeping absolute stream offsets and
    the start of each payload (a command of megabytes is not kept whole)."""

    _KEEP = 256

    def __init__(self) -> None:
        self.received = 0  # bytes of this direction received so far
        self._header = b""  # the current packet's header, as far as it came
        self._payload = b""  # the start of its payload
        self._left = 0  # payload bytes of the current packet still to come
        self._start = 0  # stream offset of the current packet

    def feed(self, data: bytes) -> list[tuple[int, int, int, bytes, int]]:
        """Add `data`; return the packets it completes as (offset, length with the header,
        seq, start of the payload, payload size)."""
        packets = []
        at, end = 0, len(data)
        while True:
            if len(self._header) < 4:
                take = min(4 - len(self._header), end - at)
                self._header += data[at : at + take]
                at += take
                if len(self._header) < 4:
                    break
                self._left = int.from_bytes(self._header[:3], "little")
                self._payload = b""
            take = min(self._left, end - at)
            room = self._KEEP - len(self._payload)
            if room > 0:
                self._payload += data[at : at + min(take, room)]
            at += take
            self._left -= take
            if self._left:
                break
            size = int.from_bytes(self._header[:3], "little")
            packets.append((self._start, 4 + size, self._header[3], self._payload, size))
            self._start += 4 + size
            self._header = b""
        self.received += end
        return packets


@dataclass(eq=False)  # each link is itself: kept in a set
class _Link:
    """One client connection through the proxy, and what is in flight on it."""

    up: _Packets = field(default_factory=_Packets)
    down: _Packets = field(default_factory=_Packets)
    session: int | None = None
    command: str | None = None  # the command in flight, if any
    answer: _Answer | None = None
    up_cut: int | None = None  # cut the connection once this many bytes went to the server
    down_cut: int | None = None  # ... or once this many went to the client
    cause: str | None = None  # who ended it, once it ended (see `Interruption`)
    frozen: bool = False  # nothing passes any more, and the server's side stays open
    server_open: bool = True  # until the server closes its side

    def end(self, cause: str) -> None:
        """Note who ended the link; the first to notice decides."""
        self.cause = self.cause or cause


class Proxy:
    """Forwards 127.0.0.1:`port` to the server, counting the commands clients send.

    Attributes:
        commands: commands sent through the proxy so far (by every connection).
        lost: answers lost on purpose (`lose_answers`).
        interruptions: connections that ended with a command in flight, in order.
    """

    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._links: set[_Link] = set()
        self._lose_next = 0
        self._cut_next: tuple[int | None, str] | None = None
        self._watchers: list[tuple[str, asyncio.Future[str]]] = []
        self._freeze_next: str | None = None
        self._closing = asyncio.Event()
        self.commands = 0
        self.lost = 0
        self.interruptions: list[Interruption] = []

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def sessions(self) -> list[int]:
        """The server's ids of the sessions open through the proxy (for ``KILL``): those of
        live connections, and of frozen ones the server has not closed."""
        return [
            link.session
            for link in self._links
            if link.session and link.server_open and (link.cause is None or link.frozen)
        ]

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    def lose_answers(self, count: int = 1) -> None:
        """The next `count` commands reach the server, which runs them, but their answers
        never reach the client: the proxy waits for the server to finish, then drops the
        connection."""
        self._lose_next += count

    def cut(self, command: str = "", at: int | None = None) -> None:
        """Cut the connection that sends the next command (the next that starts with
        `command`) once `at` bytes of its exchange (the command's, then its answer's) have
        passed: part-way through the command's text when `at` is shorter than it, else
        part-way through the answer (one byte short of its end at the latest, so the client
        never has all of it). With `at` None: as soon as the whole command has gone, so the
        server runs all of it for a client that is gone. Both sides are closed: the client
        sees a lost connection, the server a client that went."""
        self._cut_next = (at, command)

    def freeze(self, command: str = "") -> None:
        """Freeze the connection that sends the next command that starts with `command`, as
        a network cut between the hosts would: that command and all after it never arrive,
        nothing comes back, and the server's side of the connection stays open (until the
        proxy closes) even when the client gives up and closes its own."""
        self._freeze_next = command

    async def sent(self, command: str = "") -> str:
        """Wait until a command that starts with `command` goes to the server; return the
        start of its text."""
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._watchers.append((command, waiter))
        try:
            return await waiter
        finally:
            self._watchers = [(c, w) for c, w in self._watchers if w is not waiter]

    async def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        # The connections end on their own once their sockets are closed.
        await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), 10)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(client_w)
        try:
            server_r, server_w = await asyncio.open_connection(*self._upstream)
        except OSError:
            client_w.close()
            self._writers.discard(client_w)
            self._tasks.discard(task)
            return
        self._writers.add(server_w)
        link = _Link()
        self._links.add(link)
        losing = asyncio.Event()
        up = asyncio.create_task(self._pump_commands(link, client_r, server_w, losing))
        down = asyncio.create_task(self._pump_answers(link, server_r, client_w, losing))
        try:
            done, _ = await asyncio.wait((up, down), return_when=asyncio.FIRST_COMPLETED)
            link.end("client" if up in done else "server")
            if link.frozen:  # the server is never told: its session waits for a client
                await self._closing.wait()
            if losing.is_set():
                await asyncio.sleep(0.3)  # the server finishes the command, answering nobody
            elif link.command is not None:
                assert link.cause is not None
                self.interruptions.append(Interruption(link.cause, link.command))
        finally:
            for writer in (client_w, server_w):
                writer.close()
                self._writers.discard(writer)
            for pump in (up, down):
                pump.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            self._links.discard(link)
            self._tasks.discard(task)

    async def _pump_commands(
        self,
        link: _Link,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        losing: asyncio.Event,
    ) -> None:
        while data := await _read(reader):
            lose = False
            for offset, length, seq, payload, _ in link.up.feed(data):
                if seq != 0 or not payload or payload[0] == _COM_QUIT:
                    continue
                self.commands += 1
                text = payload[1:121] if payload[0] == _COM_QUERY else b"?"
                link.command = text.decode("utf-8", "replace")
                link.answer = _Answer()
                if self._lose_next:
                    self._lose_next -= 1
                    lose = True
                if self._cut_next is not None and link.command.startswith(self._cut_next[1]):
                    at, self._cut_next = self._cut_next[0], None
                    if at is None or at <= length:
                        link.up_cut = offset + (length if at is None else at)
                    else:  # the answer starts where the previous one ended
                        link.down_cut = link.down.received + at - length
                if self._freeze_next is not None and link.command.startswith(self._freeze_next):
                    self._freeze_next = None
                    link.frozen = True
                for prefix, waiter in self._watchers:
                    if link.command.startswith(prefix) and not waiter.done():
                        waiter.set_result(link.command)
            if lose:  # before the command goes: no byte of its answer may pass
                self.lost += 1
                losing.set()
            if link.frozen:
                continue  # dropped, as by a cable cut
            if link.up_cut is not None and link.up_cut <= link.up.received:
                keep = len(data) - (link.up.received - link.up_cut)
                writer.write(data[:keep])
                link.end("cut")
                return
            if not await _write(writer, data):
                link.end("server")
                return
            if lose:
                return
        link.end("client")

    async def _pump_answers(
        self,
        link: _Link,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        losing: asyncio.Event,
    ) -> None:
        while data := await _read(reader):
            if losing.is_set() or link.frozen:
                continue  # swallowed
            complete_at = None
            killed = False
            for offset, length, seq, payload, size in link.down.feed(data):
                if link.session is None and seq == 0 and payload[:1] == b"\x0a":
                    # The handshake: version 10, the server's version, then the session id.
                    end = payload.index(b"\x00", 1)
                    link.session = int.from_bytes(payload[end + 1 : end + 5], "little")
                elif link.answer is not None and link.answer.feed(payload, size):
                    killed = link.answer.error in _SESSION_ENDED
                    link.answer = None
                    complete_at = offset + length
            if link.down_cut is not None and complete_at is not None:
                link.down_cut = min(link.down_cut, complete_at - 1)
            if link.down_cut is not None and link.down_cut < link.down.received:
                keep = len(data) - (link.down.received - link.down_cut)
                writer.write(data[: max(keep, 0)])
                link.end("cut")
                return
            if complete_at is not None and not killed:
                # Before the answer goes: the client may send its next command at once.
                link.command = None
            if not await _write(writer, data):
                link.end("client")
                return
        link.server_open = False
        link.end("server")


async def _read(reader: asyncio.StreamReader) -> bytes:
    """The next bytes, or none when the other side closed or reset the connection."""
    try:
        return await reader.read(65536)
    except ConnectionError:
        return b""


async def _write(writer: asyncio.StreamWriter, data: bytes) -> bool:
    """Pass `data` on; False when the other side is gone."""
    try:
        writer.write(data)
        await writer.drain()
    except ConnectionError:
        return False
    return True

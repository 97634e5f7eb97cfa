"""A TCP proxy on loopback between a store and the MySQL server: it counts round trips and
can lose an answer on purpose (fault injection on a real connection to a real server).

Each command a client sends is one MySQL packet whose sequence number is 0 (the handshake's
packets from the client are numbered 1 and up, and a command longer than 16 MiB continues in
packets numbered 1, 2, ...). So the packets numbered 0 from the client are exactly its
commands, each one round trip.
"""

from __future__ import annotations

import asyncio
import contextlib


class Proxy:
    """Forwards 127.0.0.1:`port` to the server, counting the commands clients send.

    Attributes:
        commands: commands sent through the proxy so far (by every connection).
    """

    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._lose_next = 0
        self.commands = 0
        self.lost = 0

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    def lose_answers(self, count: int = 1) -> None:
        """The next `count` commands reach the server, which runs them, but their answers
        never reach the client: the proxy waits for the server to finish, then drops the
        connection."""
        self._lose_next += count

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
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
            self._tasks.discard(task)
            return
        self._writers.add(server_w)
        losing = asyncio.Event()
        down = asyncio.create_task(self._pump_answers(server_r, client_w, losing))
        try:
            await self._pump_commands(client_r, server_w, losing)
        finally:
            if losing.is_set():
                await asyncio.sleep(0.3)  # the server finishes the command, answering nobody
            down.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await down
            for writer in (client_w, server_w):
                writer.close()
                self._writers.discard(writer)
            self._tasks.discard(task)

    async def _pump_commands(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        losing: asyncio.Event,
    ) -> None:
        pending = b""
        while data := await reader.read(65536):
            pending += data
            lose = False
            while len(pending) >= 4:
                length = int.from_bytes(pending[:3], "little")
                if len(pending) < 4 + length:
                    break
                if pending[3] == 0:
                    self.commands += 1
                    if self._lose_next:
                        self._lose_next -= 1
                        lose = True
                pending = pending[4 + length :]
            if lose:  # before the command goes: no byte of its answer may pass
                self.lost += 1
                losing.set()
            writer.write(data)
            await writer.drain()
            if lose:
                return

    async def _pump_answers(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        losing: asyncio.Event,
    ) -> None:
        while data := await reader.read(65536):
            if losing.is_set():
                continue  # swallowed
            writer.write(data)
            await writer.drain()

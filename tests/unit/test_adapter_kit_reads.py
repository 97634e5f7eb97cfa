"""`read_in_pieces`: a driver's asyncio transport reads at most `READ_PIECE` bytes a `recv`, on
a real loopback connection, and a reply larger than a piece still arrives whole."""

from __future__ import annotations

import asyncio

from psych_adapter_kit import READ_PIECE, read_in_pieces


class _Collect(asyncio.Protocol):
    def __init__(self, expected: int) -> None:
        self.reads: list[int] = []
        self.data = bytearray()
        self.expected = expected
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.reads.append(len(data))
        self.data += data
        if len(self.data) >= self.expected and not self.done.done():
            self.done.set_result(None)


async def test_a_selector_transport_reads_in_pieces_and_a_large_reply_arrives_whole() -> None:
    payload = bytes(range(256)) * (3 * READ_PIECE // 256 + 7)  # over three pieces

    async def serve(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_connection(
            lambda: _Collect(len(payload)), "127.0.0.1", port
        )
        try:
            assert getattr(transport, "max_size", None) == 256 * 1024  # asyncio's own
            assert read_in_pieces(transport)
            assert transport.max_size == READ_PIECE  # type: ignore[attr-defined]
            assert not read_in_pieces(transport), "already in pieces: nothing to change"
            await asyncio.wait_for(protocol.done, 10)
        finally:
            transport.close()
    finally:
        server.close()
        await server.wait_closed()
    assert bytes(protocol.data) == payload
    assert max(protocol.reads) <= READ_PIECE
    assert len(protocol.reads) >= 4


def test_a_transport_without_a_read_size_is_left_as_it_is() -> None:
    class Other:  # uvloop's transports, TLS transports: no max_size
        pass

    class Smaller:
        max_size = 4096

    assert not read_in_pieces(None)
    assert not read_in_pieces(Other())
    smaller = Smaller()
    assert not read_in_pieces(smaller)
    assert smaller.max_size == 4096
    assert READ_PIECE < 128 * 1024, "below glibc's default mmap threshold"

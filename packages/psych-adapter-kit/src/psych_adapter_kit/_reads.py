"""Socket reads that do not map and unmap memory for every reply from a database.

asyncio's selector transport reads with ``sock.recv(transport.max_size)``: 256 KiB, which
Python allocates as a bytes object before the read and shrinks to what arrived after it.
glibc serves an allocation of 128 KiB or more (``M_MMAP_THRESHOLD``) with ``mmap``, so a
connection that waits for one short reply at a time (a store's round trip per durable step)
pays ``mmap``, ``mremap`` and ``munmap`` for each reply (CPython issue #85451 describes the
same pattern). Measured on a 2-core KVM host with asyncpg: a bare INSERT round trip cost this
process about 140 us of CPU with 256 KiB reads and about 100 with 64 KiB, most of it the
kernel's; and under ``strace`` the three calls per reply were gone.

`read_in_pieces` lowers ``max_size`` on one transport, the driver's, so that each read's
buffer comes from the heap. A reply larger than a piece arrives in more reads, as it would
from a socket anyway. Other event loops' transports (uvloop's reads into a buffer of its own)
and TLS transports (asyncio reads those into a buffer of its own) have no ``max_size``: they
are left as they are.
"""

from __future__ import annotations

READ_PIECE = 64 * 1024
"""Bytes a transport reads at most per ``recv``: below glibc's 128 KiB mmap threshold."""


def read_in_pieces(transport: object) -> bool:
    """Have `transport` read at most `READ_PIECE` bytes per ``recv``, when it is asyncio's
    selector socket transport (it has an integer ``max_size``); whether it was changed."""
    size = getattr(transport, "max_size", None)
    if not isinstance(size, int) or size <= READ_PIECE:
        return False
    transport.max_size = READ_PIECE  # type: ignore[attr-defined]  # checked just above
    return True

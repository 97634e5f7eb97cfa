"""Run ids: sortable and unique (ULID-like: 48 bits of milliseconds, 80 random bits)."""

from __future__ import annotations

import datetime as dt
import os

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32: no I, L, O, U


def new_run_id(now: dt.datetime) -> str:
    """A 26-character id that sorts by creation time (to the millisecond)."""
    millis = int(now.timestamp() * 1000)
    value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


def new_worker_id() -> str:
    """An id for a worker process: host, pid and a random suffix."""
    return f"{os.uname().nodename}:{os.getpid()}:{os.urandom(3).hex()}"

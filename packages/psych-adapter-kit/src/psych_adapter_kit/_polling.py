"""Waiting for a change by asking again, with backoff: `Store.wait` for a store that has no
notifications to wait on (SQLite, MySQL, DynamoDB), and the fallback of one that does.

The first pauses are short, so a change is noticed soon after it lands; they double up to a
ceiling, which bounds how often an idle waiter asks the database. Nothing is held between
asks: cancelling the waiter stops it at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Pauses between two asks: `first` seconds, doubling up to `longest`."""

    first: float = 0.005
    longest: float = 0.2

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.longest:
            raise ValueError(
                f"a backoff needs 0 < first <= longest, not first={self.first}, "
                f"longest={self.longest}"
            )

    def after(self, pause: float) -> float:
        """The pause that follows `pause`."""
        return min(pause * 2, self.longest)


async def poll_until(
    ready: Callable[[], Awaitable[bool]], timeout: float, backoff: Backoff
) -> bool:
    """Ask `ready` until it answers True, or until `timeout` seconds have passed; say which.

    `ready` is asked at once (even with a `timeout` of 0), then after each pause of
    `backoff`; the last pause ends at the deadline, where it is asked a last time. What
    `ready` raises is raised here.
    """
    deadline = time.monotonic() + timeout
    pause = backoff.first
    while not await ready():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(pause, remaining))
        pause = backoff.after(pause)
    return True

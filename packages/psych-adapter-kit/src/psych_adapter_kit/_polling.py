"""Waiting for a change by asking again, with backoff: `Store.wait` for a store that has no
notifications to wait on (SQLite, MySQL, DynamoDB), and the fallback of one that does.

The first pauses are short, so a change is noticed soon after it lands; they double up to a
ceiling, which bounds how often an idle waiter asks the database. Nothing is held between
asks: cancelling the waiter stops it at once.

An ask in flight when its waiter is cancelled is not cut short but let run to its end
(`let_finish`), its answer dropped: cutting a query off costs more than the query. asyncpg
asks the server to cancel it on a new connection (a process the server forks for it), and a
MySQL connection whose answer was never read is closed and opened again for the next call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


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
    `ready` raises is raised here. Cancelled while `ready` is being asked, it stops at once
    and leaves that ask to finish (`let_finish`).
    """
    deadline = time.monotonic() + timeout
    pause = backoff.first
    while not await let_finish(ready()):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(pause, remaining))
        pause = backoff.after(pause)
    return True


_LEFT_TO_FINISH: set[asyncio.Future[Any]] = set()
"""Asks whose waiter was cancelled, held until they end (the loop keeps only weak references
to its tasks)."""


async def let_finish[T](ask: Awaitable[T]) -> T:
    """`ask`'s answer; when the caller is cancelled first, its `CancelledError` is raised at
    once and `ask` runs on, in a task of its own, to its end, its outcome dropped.

    For a short ask whose connection is worth more than the ask: cut off mid-flight, it
    would cost a cancel request or a new connection (see the module's docstring). Not for a
    write whose outcome matters: the caller, gone, cannot learn it.
    """
    task = asyncio.ensure_future(ask)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done():
            _LEFT_TO_FINISH.add(task)
            task.add_done_callback(_dropped)
        raise


def _dropped(task: asyncio.Future[Any]) -> None:
    _LEFT_TO_FINISH.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: nobody waits for it any more

"""`LocalLiveChannel`: live text between the tasks of one process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psych_core import LiveChannel, LiveText

DEFAULT_BUFFER = 1024
"""Pieces a subscriber may fall behind by before the channel drops pieces for it."""


class LocalLiveChannel(LiveChannel):
    """A `LiveChannel` within one process and event loop: a worker and the screens that
    follow its runs in the same process (a session, a test, a single-process app).

    `publish` hands the piece to every subscriber of the run at once and never waits: a
    subscriber that has fallen `buffer` pieces behind misses the piece (counted in
    `dropped`; `stream_text` sees the gap in the offsets and waits for the log's text). For
    workers and screens in different processes, use a channel that crosses them
    (``psych_store_postgres.PostgresLiveChannel``).

    Args:
        buffer: pieces each subscriber may have waiting.

    Attributes:
        published: pieces published (whether or not anyone listened).
        dropped: pieces a subscriber missed because its buffer was full.
    """

    def __init__(self, *, buffer: int = DEFAULT_BUFFER) -> None:
        if buffer < 1:
            raise ValueError(f"buffer must be at least 1, not {buffer}")
        self._buffer = buffer
        self._subscribers: dict[str, set[asyncio.Queue[LiveText]]] = {}
        self.published = 0
        self.dropped = 0

    async def publish(self, text: LiveText) -> None:
        """Hand `text` to the run's subscribers; never waits, never raises."""
        self.published += 1
        for queue in self._subscribers.get(text.run_id, ()):
            try:
                queue.put_nowait(text)
            except asyncio.QueueFull:
                self.dropped += 1

    @asynccontextmanager
    async def subscribe(self, run_id: str) -> AsyncIterator[AsyncIterator[LiveText]]:
        """The pieces published for `run_id` while the block runs, in publish order."""
        queue: asyncio.Queue[LiveText] = asyncio.Queue(self._buffer)
        self._subscribers.setdefault(run_id, set()).add(queue)
        try:
            yield _drain(queue)
        finally:
            queues = self._subscribers.get(run_id)
            if queues is not None:
                queues.discard(queue)
                if not queues:
                    del self._subscribers[run_id]

    def __repr__(self) -> str:
        runs = len(self._subscribers)
        return f"LocalLiveChannel(runs followed={runs}, published={self.published})"


async def _drain(queue: asyncio.Queue[LiveText]) -> AsyncIterator[LiveText]:
    while True:
        yield await queue.get()

"""`OpenedOnce`: a client an adapter opens on first use, in the running event loop, once.

SDK clients (aioboto3's, for one) are async context managers bound to the event loop that
opened them, so an adapter built outside any loop opens its client when it is first used.
Calls that arrive together wait for one opener; `close` closes what was opened and refuses
later use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack


class OpenedOnce[T]:
    """What `open` opens, on first use; closed by `close`.

    Args:
        open: opens the client, entering what must be closed with it on the stack it is given
            (the stack is closed if `open` raises, so a half-opened client leaks nothing).
        closed: the error to raise for a use after `close` (it names the adapter and where).
    """

    def __init__(
        self,
        open: Callable[[AsyncExitStack], Awaitable[T]],
        closed: Callable[[], Exception],
    ) -> None:
        self._open = open
        self._closed_error = closed
        self._value: T | None = None
        self._stack: AsyncExitStack | None = None
        self._opening = asyncio.Lock()
        self._closed = False

    @property
    def opened(self) -> T | None:
        """The client when it is open, else None (never opens it)."""
        return self._value

    async def get(self) -> T:
        """The open client, opened now if it is not yet; the `closed` error after `close`."""
        if self._value is not None:
            return self._value
        if self._closed:
            raise self._closed_error()
        async with self._opening:  # one opener; the others find its client
            if self._value is None:
                stack = AsyncExitStack()
                try:
                    value = await self._open(stack)
                except BaseException:
                    await stack.aclose()
                    raise
                self._stack, self._value = stack, value
            return self._value

    async def close(self) -> None:
        """Close what was opened; calling it again does nothing."""
        self._closed = True
        stack, self._stack, self._value = self._stack, None, None
        if stack is not None:
            await stack.aclose()

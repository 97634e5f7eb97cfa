"""What every port whose adapters hold resources shares: `close`, and ``async with``."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self


class Closing(Protocol):
    """`close` releases what the adapter holds (connections, threads); calling it again does
    nothing, and the adapter is not used after it. ``async with adapter:`` closes it at the
    end of the block. An adapter that subclasses its port inherits all three; this default
    `close` holds nothing, and an adapter with connections or threads overrides it."""

    async def close(self) -> None:
        """Release what the adapter holds; calling it again does nothing."""
        return  # a statement of its own: with a docstring alone, type checkers see no body

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

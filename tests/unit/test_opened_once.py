"""`OpenedOnce`: one opener, a failed open leaks nothing, closed means closed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

from psych_adapter_kit import OpenedOnce


class Client:
    def __init__(self) -> None:
        self.closed = False


async def test_calls_that_arrive_together_share_one_opened_client() -> None:
    opened: list[Client] = []

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[Client]:
        client = Client()
        opened.append(client)
        try:
            yield client
        finally:
            client.closed = True

    async def open(stack: AsyncExitStack) -> Client:
        await asyncio.sleep(0.01)  # the others arrive while this one opens
        return await stack.enter_async_context(connect())

    once = OpenedOnce(open, lambda: RuntimeError("closed"))
    assert [once.opened] == [None]  # a list: the property changes, a narrowed name would not
    clients = await asyncio.gather(*(once.get() for _ in range(5)))
    assert len(opened) == 1
    assert all(client is opened[0] for client in clients)
    assert once.opened is opened[0]
    await once.close()
    assert opened[0].closed
    assert [once.opened] == [None]
    with pytest.raises(RuntimeError, match="closed"):
        await once.get()
    await once.close()  # again: nothing


async def test_a_failed_open_closes_what_it_entered_and_the_next_use_tries_again() -> None:
    entered: list[str] = []
    attempts = 0

    @contextlib.asynccontextmanager
    async def part(name: str) -> AsyncIterator[None]:
        entered.append(name)
        try:
            yield
        finally:
            entered.remove(name)

    async def open(stack: AsyncExitStack) -> str:
        nonlocal attempts
        attempts += 1
        await stack.enter_async_context(part(f"session {attempts}"))
        if attempts == 1:
            raise ConnectionError("refused")
        return "client"

    once = OpenedOnce(open, lambda: RuntimeError("closed"))
    with pytest.raises(ConnectionError):
        await once.get()
    assert entered == []  # the half-opened session was closed
    assert await once.get() == "client"
    assert entered == ["session 2"]
    await once.close()
    assert entered == []

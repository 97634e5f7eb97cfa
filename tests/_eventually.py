"""Waiting in a test for something another task or the server does in its own time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest


async def eventually(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 10) -> None:
    """Ask `check` every 20 ms until it answers True; fail the test, naming `what`, if it has
    not within `seconds`."""
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {seconds:g} s")
        await asyncio.sleep(0.02)

"""The adapter kit's polling: `Store.wait` for the stores that have no notifications (SQLite,
MySQL, DynamoDB) and PostgreSQL's fallback while it cannot listen."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from psych_adapter_kit import Backoff, let_finish, poll_until

QUICK = Backoff(first=0.001, longest=0.002)


class _Asked:
    """A `ready` that answers True from its `ready_at`-th ask on (never, with None)."""

    def __init__(self, ready_at: int | None) -> None:
        self.ready_at = ready_at
        self.times = 0

    async def __call__(self) -> bool:
        self.times += 1
        return self.ready_at is not None and self.times >= self.ready_at


def test_pauses_double_up_to_the_ceiling() -> None:
    backoff = Backoff(first=0.005, longest=0.03)
    pauses = [backoff.first]
    for _ in range(4):
        pauses.append(backoff.after(pauses[-1]))
    assert pauses == [0.005, 0.01, 0.02, 0.03, 0.03]


@pytest.mark.parametrize(("first", "longest"), [(0.0, 1.0), (-1.0, 1.0), (0.5, 0.1)])
def test_a_backoff_that_cannot_pause_or_shrinks_is_refused(first: float, longest: float) -> None:
    with pytest.raises(ValueError, match="a backoff needs 0 < first <= longest"):
        Backoff(first=first, longest=longest)


async def test_it_asks_until_ready_and_says_so() -> None:
    ready = _Asked(ready_at=3)
    assert await poll_until(ready, 60.0, QUICK) is True
    assert ready.times == 3


async def test_ready_at_once_is_asked_once() -> None:
    ready = _Asked(ready_at=1)
    assert await poll_until(ready, 60.0, QUICK) is True
    assert ready.times == 1


async def test_a_timeout_of_zero_still_asks_once() -> None:
    ready = _Asked(ready_at=None)
    assert await poll_until(ready, 0.0, QUICK) is False
    assert ready.times == 1


async def test_past_the_timeout_it_gives_up_after_a_last_ask_at_the_deadline() -> None:
    ready = _Asked(ready_at=None)
    assert await poll_until(ready, 0.02, QUICK) is False
    assert ready.times >= 2, "asked at once and again when the deadline came"


async def test_what_ready_raises_is_raised() -> None:
    async def broken() -> bool:
        raise ConnectionError("the database went away")

    with pytest.raises(ConnectionError, match="went away"):
        await poll_until(broken, 60.0, QUICK)


class _SlowAsk:
    """A `ready` whose ask takes until `release` is set, recording how it ended."""

    def __init__(self, answer: bool | Exception = False) -> None:
        self.answer = answer
        self.asking = asyncio.Event()
        self.release = asyncio.Event()
        self.ended: list[str] = []

    async def __call__(self) -> bool:
        self.asking.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.ended.append("cut off")
            raise
        self.ended.append("finished")
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_a_waiter_cancelled_mid_ask_stops_at_once_and_the_ask_runs_to_its_end() -> None:
    ready = _SlowAsk()
    waiter = asyncio.create_task(poll_until(ready, 60.0, QUICK))
    await ready.asking.wait()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert ready.ended == [], "the waiter stopped before its ask ended"
    ready.release.set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert ready.ended == ["finished"]


async def test_a_waiter_cancelled_between_asks_leaves_nothing_running() -> None:
    asked = _Asked(ready_at=None)
    waiter = asyncio.create_task(poll_until(asked, 60.0, Backoff(first=10.0, longest=10.0)))
    for _ in range(10):  # a few turns of the loop: the first ask, then the pause
        await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert asked.times == 1
    assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []


async def test_what_a_dropped_ask_raises_is_not_reported_as_never_retrieved() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        ready = _SlowAsk(answer=ConnectionError("the database went away"))
        waiter = asyncio.create_task(let_finish(ready()))
        await ready.asking.wait()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        ready.release.set()
        for _ in range(3):
            await asyncio.sleep(0)
        assert ready.ended == ["finished"]
        gc.collect()
        assert reported == []
    finally:
        loop.set_exception_handler(None)


async def test_let_finish_gives_the_answer_when_nobody_cancels() -> None:
    ready = _SlowAsk(answer=True)
    ready.release.set()
    assert await let_finish(ready()) is True

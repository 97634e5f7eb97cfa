"""The adapter kit's polling: `Store.wait` for the stores that have no notifications (SQLite,
MySQL, DynamoDB) and PostgreSQL's fallback while it cannot listen."""

from __future__ import annotations

import pytest

from psych_adapter_kit import Backoff, poll_until

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

"""`Lease`: what an attempt knows of its lease on its own clock, and what it does before an
effect that is not safe to repeat.

(A worker stalled past its lease on every store: tests/integration/test_stale_worker.py; one
cut off from the database by the network: tests/integration/test_partitioned_worker.py.)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import logging
from typing import Any, cast

import pytest

from psych_runtime import (
    AgentSpec,
    CodeTool,
    Leases,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Worker,
    dispatch,
)
from psych_runtime.errors import LeaseExpired, LeaseLost, StoreUnavailable
from psych_runtime.ports import RenewResult, Store
from psych_runtime.runtime import Lease, with_lease
from psych_runtime.testing.fake_model import FakeModel

TTL = dt.timedelta(seconds=30)
SPEC = AgentSpec(name="s", model=ModelRef(model="fake"))


async def _claimed(store: MemoryStore) -> tuple[str, int]:
    run_id = await dispatch(store.scoped(Scope(tenant="t")), SPEC, "hi")
    claim = await store.claim("w", TTL)
    assert claim is not None
    return run_id, claim.attempt


class Unreachable:
    """The store, except that renewals cannot reach it."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        raise StoreUnavailable("the network is down")


async def test_a_fresh_lease_lets_an_effect_start_without_asking_the_store() -> None:
    store = MemoryStore()
    run_id, attempt = await _claimed(store)
    lease = Lease(cast(Store, Unreachable(store)), run_id, attempt, TTL)
    assert lease.remaining() == pytest.approx(30, abs=1)
    await lease.ensure(lease.safe_margin(None), "a call")  # no renewal needed


async def test_a_lease_too_short_for_the_effect_is_renewed_first() -> None:
    store = MemoryStore()
    run_id, attempt = await _claimed(store)
    loop = asyncio.get_running_loop()
    lease = Lease(store, run_id, attempt, TTL, granted_at=loop.time() - 25)
    assert lease.remaining() < 6
    await lease.ensure(lease.safe_margin(None), "a call")
    assert lease.remaining() > 29


async def test_an_expired_lease_another_attempt_took_refuses_the_effect() -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    store = MemoryStore(clock=lambda: now[0])
    run_id, attempt = await _claimed(store)
    now[0] += TTL * 2
    assert await store.claim("other", TTL) is not None
    loop = asyncio.get_running_loop()
    lease = Lease(store, run_id, attempt, TTL, granted_at=loop.time() - 60)
    with pytest.raises(LeaseLost):
        await lease.ensure(1.0, "tool call 2.0 ('charge')")


async def test_a_lease_that_cannot_be_renewed_refuses_the_effect_naming_it() -> None:
    store = MemoryStore()
    run_id, attempt = await _claimed(store)
    loop = asyncio.get_running_loop()
    lease = Lease(
        cast(Store, Unreachable(store)), run_id, attempt, TTL, granted_at=loop.time() - 29
    )
    with pytest.raises(LeaseExpired) as refused:
        await lease.ensure(lease.safe_margin(5.0), "tool call 2.0 ('charge')")
    message = str(refused.value)
    assert message.startswith(f"run {run_id}: attempt {attempt} stopped: its lease has")
    assert "tool call 2.0 ('charge')" in message and "the network is down" in message


def test_the_margin_is_the_effects_timeout_but_never_more_than_half_the_lease() -> None:
    class Nothing:
        pass

    async def check() -> None:
        lease = Lease(cast(Store, Nothing()), "r", 1, TTL)
        assert lease.safe_margin(None) == 15
        assert lease.safe_margin(2.0) == 2.0
        assert lease.safe_margin(60.0) == 15

    asyncio.run(check())


async def test_work_stops_once_the_lease_has_run_out_unrenewed() -> None:
    store = MemoryStore()
    run_id, attempt = await _claimed(store)
    ttl = dt.timedelta(seconds=0.3)
    lease = Lease(cast(Store, Unreachable(store)), run_id, attempt, ttl)
    ran_past: list[bool] = []

    async def long_work() -> None:
        await asyncio.sleep(5)
        ran_past.append(True)

    with pytest.raises(LeaseExpired, match="ran out while the store could not be reached"):
        await asyncio.wait_for(with_lease(lease, long_work()), 3)
    assert ran_past == []


async def test_a_lost_lease_leaves_no_task_pending(caplog: pytest.LogCaptureFixture) -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    store = MemoryStore(clock=lambda: now[0])
    started = asyncio.Event()

    async def slow() -> str:
        """Take a while."""
        started.set()
        await asyncio.sleep(10)
        return "done"

    spec = AgentSpec(name="s", model=ModelRef(model="fake"), tools=(CodeTool(name="slow"),))
    await dispatch(store.scoped(Scope(tenant="t")), spec, "go")
    worker = Worker(
        store,
        Runtime(
            model=FakeModel().turn(tool_calls=[("slow", {})]),
            tools=[slow],
            leases=Leases(ttl=dt.timedelta(seconds=0.3)),
        ),
    )
    caplog.set_level(logging.WARNING)
    serving = asyncio.create_task(worker.run_until_idle())
    await asyncio.wait_for(started.wait(), 5)
    now[0] += dt.timedelta(seconds=10)
    assert await store.claim("other", TTL) is not None  # takes the run over
    await asyncio.wait_for(serving, 5)
    await asyncio.sleep(0)
    assert "lost its lease" in caplog.text
    # A task left pending is reported "destroyed but it is pending" when it is collected.
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    assert left == []
    gc.collect()
    assert "Task was destroyed but it is pending" not in caplog.text

"""A worker stalled past its lease right after it recorded a call's start never runs the call
when it is not safe to repeat, on every store.

The stalled worker sees the store through `Stalling`: the append that records the start lands,
and then that worker's calls to the store wait (as a paused process, a long GC pause or a
frozen VM would) until the test lets it go. Meanwhile its lease runs out, another worker claims
the run, settles the call `unknown` and finishes the run. The tools write to a ledger outside
the runs: an unsafe call must never appear in it from the stalled worker. A safe one may run
(and the second worker runs it again, as it may).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any, cast

import pytest

from psych_runtime import (
    AgentSpec,
    CodeTool,
    Leases,
    ModelRef,
    Runtime,
    Scope,
    Worker,
    dispatch,
    read_log,
    status,
)
from psych_runtime.ports import Batch, RenewResult, Store
from psych_runtime.records import ToolCallStarted
from psych_runtime.testing.fake_model import FakeModel
from tests.integration._every_store import KINDS, fresh_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TTL = dt.timedelta(seconds=1)
SCOPE = Scope(tenant="stale")


class Stalling:
    """A worker's view of `store` that stalls right after the first append recording a
    call's start: that append has landed, but it, and every later renewal or claim, answer
    only once `go_on` is called."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.stalled = asyncio.Event()
        self._go_on = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def go_on(self) -> None:
        self._go_on.set()

    async def append(self, run_id: str, attempt: int, batch: Batch) -> Any:
        result = await self._store.append(run_id, attempt, batch)
        starts = any(isinstance(record.body, ToolCallStarted) for record in batch.records)
        if starts and not self.stalled.is_set():
            self.stalled.set()
            await self._go_on.wait()
        return result

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        await self._until_let_go()
        return await self._store.renew(run_id, attempt, ttl)

    async def claim(self, worker_id: str, ttl: dt.timedelta, **options: Any) -> Any:
        await self._until_let_go()
        return await self._store.claim(worker_id, ttl, **options)

    async def _until_let_go(self) -> None:
        # A paused process claims and renews nothing until it is let go.
        if self.stalled.is_set():
            await self._go_on.wait()


async def _expired(store: Store, run_id: str) -> None:
    """Until the stalled attempt's lease has expired on the store's own clock."""
    while True:
        row = await store.get_run(SCOPE.tenant, run_id)
        assert row is not None
        # SQL stores keep leases on the database's clock, the others on the caller's: both
        # are this machine's clock here, so a margin past the expiry by it is enough.
        now = dt.datetime.now(dt.UTC) - dt.timedelta(milliseconds=200)
        if row.lease_expires_at is not None and row.lease_expires_at < now:
            return
        await asyncio.sleep(0.1)


async def _stalled_then_taken_over(
    store: Store, *, safe: bool, ledger: list[str]
) -> tuple[str, Stalling]:
    def charge(order: str) -> str:
        """Charge an order."""
        ledger.append(order)
        return f"charged {order}"

    spec = AgentSpec(
        name="pay",
        model=ModelRef(model="fake"),
        tools=(CodeTool(name="charge", safe_to_retry=safe),),
    )
    run_id = await dispatch(store.scoped(SCOPE), spec, "charge A1")
    stalling = Stalling(store)
    stale = Worker(
        cast(Store, stalling),
        Runtime(
            model=FakeModel().turn(tool_calls=[("charge", {"order": "A1"})]),
            tools=[charge],
            leases=Leases(ttl=TTL),
        ),
        poll_interval=0.05,
        worker_id="stale",
    )
    serving = asyncio.create_task(stale.run_until_idle())
    await asyncio.wait_for(stalling.stalled.wait(), 30)
    await asyncio.wait_for(_expired(store, run_id), 30)
    taker = Worker(
        store,
        Runtime(model=FakeModel().turn(text="done"), tools=[charge], leases=Leases(ttl=TTL)),
        poll_interval=0.05,
        worker_id="taker",
    )
    while (await status(store.scoped(SCOPE), run_id)).status != "completed":
        await taker.run_until_idle()
        await asyncio.sleep(0.05)
    stalling.go_on()
    await asyncio.wait_for(serving, 30)
    return run_id, stalling


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stalled_worker_never_runs_an_unsafe_call_after_its_lease(
    kind: str, tmp_path: Path
) -> None:
    ledger: list[str] = []
    async with fresh_store(kind, tmp_path) as store:
        run_id, _ = await _stalled_then_taken_over(store, safe=False, ledger=ledger)
        records = await read_log(store.scoped(SCOPE), run_id)
    assert ledger == [], f"{kind}: the unsafe call ran {len(ledger)} time(s)"
    types = [record.body.type for record in records]
    assert "tool_call_settled" in types
    assert "tool_call_finished" not in types
    assert types[-1] == "run_completed"
    assert [record.seq for record in records] == list(range(len(records)))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_safe_call_is_run_again_by_the_worker_that_took_over(
    kind: str, tmp_path: Path
) -> None:
    ledger: list[str] = []
    async with fresh_store(kind, tmp_path) as store:
        run_id, _ = await _stalled_then_taken_over(store, safe=True, ledger=ledger)
        records = await read_log(store.scoped(SCOPE), run_id)
    assert 1 <= len(ledger) <= 2
    finished = [r for r in records if r.body.type == "tool_call_finished"]
    assert len(finished) == 1
    assert finished[0].attempt == 2, "the worker that took over ran the safe call again"
    assert records[-1].body.type == "run_completed"

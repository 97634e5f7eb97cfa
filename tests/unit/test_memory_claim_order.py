"""`MemoryStore` keeps its open runs in claim order (two heaps), so a claim does not look at
every open run. Whatever happens to the runs, a claim takes exactly the run a look at every
open run would take, and the heaps stay within a few times the open runs."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from psych_runtime import AgentSpec, MemoryStore, ModelRef, RunStatusName, Scope, dispatch
from psych_runtime.adapters._memory_store import NEVER_BEFORE
from psych_runtime.ports import Batch, RunIndex
from psych_runtime.records import Record, Resume, ToolCallFinished

HOME = Scope(tenant="acme")
SPEC = AgentSpec(name="order", model=ModelRef(model="fake"))
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
FINAL: tuple[RunStatusName, ...] = ("completed", "failed", "cancelled")


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


def every_open_run_looked_at(
    store: MemoryStore, now: dt.datetime, max_attempts: int
) -> tuple[str | None, set[str]]:
    """What a claim must do, found by looking at every run: the run it takes (None: none),
    and the runs it ends on the way for having had `max_attempts` claims."""
    ready = [
        run
        for run in store._runs.values()
        if run.row.runnable_at is not None
        and run.row.runnable_at <= now
        and run.row.status not in FINAL
    ]
    ready.sort(
        key=lambda run: (
            run.row.lease_owner is None,
            run.row.runnable_at or NEVER_BEFORE,
            run.order,
        )
    )
    ended: set[str] = set()
    for run in ready:
        if run.row.claims < max_attempts:
            return run.row.run_id, ended
        ended.add(run.row.run_id)
    return None, ended


def leased(store: MemoryStore) -> list[str]:
    return sorted(
        run_id
        for run_id, run in store._runs.items()
        if run.row.lease_owner is not None and run.row.status not in FINAL
    )


async def append(store: MemoryStore, run_id: str, index: RunIndex) -> None:
    row = store._runs[run_id].row
    record = Record(
        run_id=run_id,
        seq=row.next_seq,
        attempt=row.attempt,
        at=START,
        body=ToolCallFinished(call_id="1.0", result=row.next_seq),
    )
    batch = Batch((record,), f"b{row.next_seq}", index, inbox_seen=row.inbox_last)
    await store.append(run_id, row.attempt, batch)


@pytest.mark.parametrize("seed", range(6))
async def test_a_claim_takes_what_a_look_at_every_open_run_takes(seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    store = MemoryStore(clock=clock)
    scoped = store.scoped(HOME)
    claims = 0
    for step in range(600):
        move = rng.random()
        mine = leased(store)
        if move < 0.18 or not store._runs:
            await dispatch(scoped, SPEC, f"run {step}")
        elif move < 0.45:
            max_attempts = rng.choice((1, 2, 3, 100))
            ttl = dt.timedelta(seconds=rng.choice((1, 5, 30)))
            wanted, ended = every_open_run_looked_at(store, clock.now, max_attempts)
            claim = await store.claim(f"w{step}", ttl, max_attempts=max_attempts)
            assert (claim.run_id if claim else None) == wanted, f"seed {seed}, step {step}"
            for run_id in ended:
                assert store._runs[run_id].row.status == "failed", run_id
                assert run_id not in store._open, f"{run_id} ended and is still open"
            claims += claim is not None
        elif move < 0.55 and mine:
            run_id = rng.choice(mine)
            row = store._runs[run_id].row
            later = rng.choice((None, clock.now + dt.timedelta(seconds=rng.choice((1, 20)))))
            await store.release(run_id, row.attempt, later)
        elif move < 0.63 and mine:
            run_id = rng.choice(mine)
            ttl = dt.timedelta(seconds=rng.choice((1, 5, 60)))
            await store.renew(run_id, store._runs[run_id].row.attempt, ttl)
        elif move < 0.71 and mine:
            due = rng.choice((None, clock.now + dt.timedelta(seconds=rng.choice((2, 15)))))
            await append(store, rng.choice(mine), RunIndex("waiting", "external", due))
        elif move < 0.77 and mine:
            await append(store, rng.choice(mine), RunIndex(rng.choice(FINAL)))
        elif move < 0.80 and mine:
            await append(store, rng.choice(mine), RunIndex("running"))
        elif move < 0.87:
            waiting = [r for r, run in store._runs.items() if run.row.status == "waiting"]
            if waiting:
                await store.signal("acme", rng.choice(waiting), Resume(), f"k{step}")
        elif move < 0.90:
            await store.delete_run("acme", rng.choice(sorted(store._runs)))
        else:
            clock.now += dt.timedelta(seconds=rng.choice((0.5, 2, 10, 40)))
    assert claims > 50, "the walk claimed too little to say anything"
    not_ended = {run_id for run_id, run in store._runs.items() if run.row.status not in FINAL}
    assert set(store._open) == not_ended


async def test_the_claim_order_stays_within_a_few_times_the_open_runs() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    scoped = store.scoped(HOME)
    run_ids = [await dispatch(scoped, SPEC, f"run {n}") for n in range(10)]
    for run_id in run_ids:
        assert await store.claim("w", dt.timedelta(seconds=30), run_id=run_id) is not None
    for turn in range(2000):  # each renewal puts the run in again, at its new expiry
        clock.now += dt.timedelta(seconds=1)
        run_id = run_ids[turn % len(run_ids)]
        await store.renew(run_id, store._runs[run_id].row.attempt, dt.timedelta(seconds=30))
    order = store._claim_order
    held = len(order._leased) + len(order._free)
    assert held <= 2 * len(store._open) + 64 + 1
    clock.now += dt.timedelta(seconds=31)  # every lease has expired: the first to expire goes
    first = min(run_ids, key=lambda run_id: store._runs[run_id].row.runnable_at or START)
    claim = await store.claim("w2", dt.timedelta(seconds=30))
    assert claim is not None and claim.run_id == first


async def test_ended_and_deleted_runs_leave_the_open_runs_at_once() -> None:
    store = MemoryStore()
    scoped = store.scoped(HOME)
    ending, deleted, kept = [await dispatch(scoped, SPEC, f"run {n}") for n in range(3)]
    assert await store.claim("w", dt.timedelta(minutes=1), run_id=ending) is not None
    await append(store, ending, RunIndex("completed"))
    assert await store.delete_run("acme", deleted)
    assert set(store._open) == {kept}
    claim = await store.claim("w", dt.timedelta(minutes=1))
    assert claim is not None and claim.run_id == kept
    assert await store.claim("w", dt.timedelta(minutes=1)) is None

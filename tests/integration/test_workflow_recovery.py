"""A worker killed anywhere in a workflow run (in a tool, or at any step boundary: after each
commit, after a tool returned) is taken over by the next attempt, and the run ends exactly as an
uninterrupted one: no completed step runs again, no unsafe step runs twice, and an unsafe step
cut off is settled ``unknown`` and retried under the same idempotency key. On `MemoryStore` and
`SQLiteStore`; the crash test with real processes is in the crash suites."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import psych_runtime
from psych_runtime import CodeTool, ToolContext, WorkflowSpec
from psych_runtime.records import ToolCallFinished, ToolCallSettled, ToolCallStarted
from psych_runtime.runtime import drive, registry_of
from psych_runtime.runtime._faults import install
from psych_runtime.workflows import (
    ForeachStep,
    MapStep,
    Obj,
    ParallelStep,
    Ref,
    Retry,
    SleepStep,
    ToolStep,
    WaitStep,
)
from tests.integration._workflow_world import World, world_of


class WorkerDied(BaseException):
    """Stands in for a kill -9: nothing after it runs, nothing is released."""


class Shop:
    """Tools that count each time they run, and apply an effect once per idempotency key, as
    a careful API does."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []  # (call id, attempt)
        self.effects: dict[str, str] = {}  # idempotency key -> the call that applied it
        self.kill_in: str | None = None

    def _ran(self, ctx: ToolContext) -> None:
        self.runs.append((ctx.call_id, ctx.attempt))
        if self.kill_in == ctx.call_id:
            self.kill_in = None
            raise WorkerDied

    def _apply(self, ctx: ToolContext) -> None:
        # The API behind an unsafe tool: a request under a key it has seen is not applied again.
        self.effects.setdefault(ctx.idempotency_key, ctx.call_id)

    async def create(self, email: str, ctx: ToolContext) -> dict[str, Any]:
        """Create a customer (not safe to run twice)."""
        self._apply(ctx)
        self._ran(ctx)
        return {"id": "c1", "orders": [100, 200, 300]}

    async def charge(self, cents: int, ctx: ToolContext) -> str:
        """Charge an amount (not safe to run twice)."""
        self._apply(ctx)
        self._ran(ctx)
        return f"charged {cents}"

    async def quote(self, cents: int, ctx: ToolContext) -> int:
        """Price a shipment (safe to run again)."""
        self._ran(ctx)
        return cents // 10

    def tools(self) -> list[Any]:
        return [self.create, self.charge, self.quote]


AGAIN_IF_UNKNOWN = Retry(attempts=3, backoff=0, on=("outcome_unknown",))

SPEC = WorkflowSpec(
    name="checkout",
    steps=(
        ToolStep(
            name="create",
            tool=CodeTool(name="create"),
            arguments={"email": Ref("input.email")},
            retry=AGAIN_IF_UNKNOWN,
        ),
        ParallelStep(
            name="settle",
            branches={
                "bill": (
                    ForeachStep(
                        name="orders",
                        items=Ref("steps.create.output.orders"),
                        concurrency=2,
                        steps=(
                            ToolStep(
                                name="charge",
                                tool=CodeTool(name="charge"),
                                arguments={"cents": Ref("item")},
                                retry=AGAIN_IF_UNKNOWN,
                            ),
                            ToolStep(
                                name="quote",
                                tool=CodeTool(name="quote", safe_to_retry=True),
                                arguments={"cents": Ref("item")},
                            ),
                        ),
                    ),
                ),
                "wait": (WaitStep(name="paid", event="paid"), SleepStep(name="cool", seconds=0.05)),
            },
        ),
        MapStep(
            name="summary",
            output=Obj(
                fields={
                    "customer": Ref("steps.create.output.id"),
                    "quotes": Ref("steps.orders.output"),
                    "paid": Ref("steps.paid.output"),
                }
            ),
        ),
    ),
)
EXPECTED = {"customer": "c1", "quotes": [10, 20, 30], "paid": {"ok": True}}


@contextmanager
def killed_at(point: int | None, reached: list[str]) -> Iterator[None]:
    """Die at the `point`-th step boundary the runtime reaches (never when None)."""

    def hook(name: str) -> None:
        reached.append(name)
        if point is not None and len(reached) == point:
            raise WorkerDied

    previous = install(hook)
    try:
        yield
    finally:
        install(previous)


async def _run(world: World, shop: Shop, point: int | None) -> tuple[str, list[str], set[int]]:
    """Run the checkout to its end, dying once at `point`; the run, the points reached, and
    the attempts that died."""
    runtime = world.runtime(shop.tools())
    registry = registry_of(runtime)
    run_id = await psych_runtime.dispatch(
        world.scoped, SPEC, json.dumps({"email": "ann@example.com"}), clock=world.clock
    )
    await psych_runtime.send_event(world.scoped, run_id, "paid", {"ok": True})
    reached: list[str] = []
    deaths: set[int] = set()
    with killed_at(point, reached):
        for _ in range(60):
            claim = await world.store.claim("w", world.ttl, run_id=run_id)
            if claim is None:
                now = await psych_runtime.status(world.scoped, run_id)
                if now.status in ("completed", "failed", "cancelled"):
                    break
                if now.status == "waiting" and now.due_at is not None:
                    await world.pass_until(now.due_at)
                else:
                    await world.pass_lease()
                continue
            try:
                await drive(world.store, claim, runtime, registry)
            except WorkerDied:
                deaths.add(claim.attempt)
                await world.pass_lease()
    return run_id, reached, deaths


@pytest.fixture(params=["memory", "sqlite"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


BOUNDARIES = 31
"""The step boundaries an uninterrupted checkout reaches (each one a place to die)."""
SHORT = dt.timedelta(seconds=0.5)
"""The lease on the host's clock: how long each take-over after a crash waits."""


async def _check(world: World, shop: Shop, run_id: str, deaths: set[int]) -> None:
    done = await psych_runtime.status(world.scoped, run_id)
    assert done.status == "completed", done.error
    assert (await psych_runtime.report(world.scoped, run_id)).output == EXPECTED
    log = await psych_runtime.read_log(world.scoped, run_id)
    assert [r.seq for r in log] == list(range(len(log))), "a log never has a gap"
    finished_by = {r.body.call_id: r.attempt for r in log if isinstance(r.body, ToolCallFinished)}
    for call_id, attempt in shop.runs:
        # No completed step runs again: no later attempt ran a call whose result was in.
        assert attempt <= finished_by.get(call_id, attempt), call_id
    # No unsafe call ran twice; a retry of one whose outcome was unknown carried its key.
    unsafe = [
        c for c, _ in shop.runs if c.split("[")[0] in ("create", "orders") and "quote" not in c
    ]
    assert len(unsafe) == len(set(unsafe)), unsafe
    assert sorted(shop.effects) == sorted(
        f"{run_id}:{key}" for key in ("create", *(f"orders[{i}].charge" for i in range(3)))
    )
    # Every unknown outcome is a call whose worker died while it was in flight.
    started_by: dict[str, int] = {}
    for record in log:
        if isinstance(record.body, ToolCallStarted):
            started_by[record.body.call_id] = record.attempt
        if isinstance(record.body, ToolCallSettled):
            assert started_by[record.body.call_id] in deaths, record.body.call_id


async def test_a_clean_run_completes_as_expected(kind: str, tmp_path: Path) -> None:
    async with world_of(kind, tmp_path, ttl=SHORT) as world:
        shop = Shop()
        run_id, reached, deaths = await _run(world, shop, None)
        assert deaths == set() and len(reached) == BOUNDARIES
        await _check(world, shop, run_id, deaths)


@pytest.mark.parametrize("point", range(1, BOUNDARIES + 1))
async def test_a_worker_killed_at_any_step_boundary_resumes_the_workflow(
    kind: str, point: int, tmp_path: Path
) -> None:
    async with world_of(kind, tmp_path, ttl=SHORT) as world:
        shop = Shop()
        run_id, _, deaths = await _run(world, shop, point)
        assert len(deaths) == 1
        await _check(world, shop, run_id, deaths)


@pytest.mark.parametrize(
    "call", ["create", "orders[0].charge", "orders[1].quote", "orders[2].charge"]
)
async def test_a_worker_killed_inside_a_tool_step_resumes_the_workflow(
    kind: str, call: str, tmp_path: Path
) -> None:
    async with world_of(kind, tmp_path, ttl=SHORT) as world:
        shop = Shop()
        shop.kill_in = call
        run_id, _, deaths = await _run(world, shop, None)
        assert len(deaths) == 1
        await _check(world, shop, run_id, deaths)
        log = await psych_runtime.read_log(world.scoped, run_id)
        settled = [r.body.call_id for r in log if isinstance(r.body, ToolCallSettled)]
        if call.endswith("quote"):
            # A safe step cut off is run again; an unsafe one is settled unknown, then retried
            # under the same idempotency key (the API applied it once).
            assert settled == [] and [c for c, _ in shop.runs].count(call) == 2
        else:
            # (A call running beside it when the worker died may be cut off too.)
            assert call in settled and [c for c, _ in shop.runs].count(call) == 1
            assert f"{call}#2" in [c for c, _ in shop.runs]

"""`Worker` in one process on the memory store: claims, concurrency, drain, rolling deploys."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Worker,
    dispatch,
)
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")


def spec_with(*tools: CodeTool) -> AgentSpec:
    return AgentSpec(name="support", model=ModelRef(model="fake"), tools=tools)


async def lookup(order_id: str) -> str:
    """Look up an order."""
    await asyncio.sleep(0.05)
    return f"{order_id} shipped"


def scripted(runs: int) -> FakeModel:
    model = FakeModel()
    for index in range(runs):
        model.turn(tool_calls=[("lookup", {"order_id": f"A{index}"})])
        model.turn(text="Shipped.")
    return model


async def test_a_worker_runs_what_dispatch_admitted_until_idle() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    spec = spec_with(CodeTool(name="lookup"))
    run_ids = [await dispatch(scoped, spec, f"where is A{i}?") for i in range(3)]
    for run_id in run_ids:
        assert (await psych_runtime.status(scoped, run_id)).status == "queued"
    worker = Worker(store, Runtime(model=_per_run_model(), tools=[lookup]), worker_id="w1")
    await worker.run_until_idle()
    for run_id in run_ids:
        status = await psych_runtime.status(scoped, run_id)
        assert status.status == "completed", status
        row = await store.get_run("acme", run_id)
        assert row is not None and row.lease_owner is None and row.runnable_at is None
        log = await psych_runtime.read_log(scoped, run_id)
        assert log[1].body == psych_runtime.records.AttemptStarted(worker_id="w1")


def _per_run_model() -> psych_runtime.ports.ModelClient:
    """A model that answers each run from its own script, whatever order runs interleave in."""

    class PerRun:
        def __init__(self) -> None:
            self.models: dict[str, FakeModel] = {}

        async def complete(
            self, request: psych_runtime.ports.ModelRequest
        ) -> psych_runtime.ports.ModelResponse:
            model = self.models.setdefault(request.run_id, scripted(1))
            return await model.complete(request)

    return PerRun()


async def test_concurrency_drives_several_runs_at_once() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    spec = spec_with(CodeTool(name="lookup"))
    running = 0
    peak = 0

    async def slow_lookup(order_id: str) -> str:
        """Look up slowly."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.1)
        running -= 1
        return "shipped"

    slow_lookup.__name__ = "lookup"
    for i in range(4):
        await dispatch(scoped, spec, f"order {i}")
    worker = Worker(store, Runtime(model=_per_run_model(), tools=[slow_lookup]), concurrency=4)
    await worker.run_until_idle()
    assert peak == 4
    page = await scoped.list_runs()
    assert {row.status for row in page.items} == {"completed"}


async def test_stop_drains_each_attempt_at_a_step_boundary_and_releases_the_lease() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    started = asyncio.Event()

    async def long_lookup(order_id: str) -> str:
        """Look up, slowly."""
        started.set()
        await asyncio.sleep(0.2)
        return "shipped"

    long_lookup.__name__ = "lookup"
    run_id = await dispatch(scoped, spec_with(CodeTool(name="lookup")), "where is A1?")
    worker = Worker(store, Runtime(model=_per_run_model(), tools=[long_lookup]), poll_interval=0.05)
    serving = asyncio.create_task(worker.run())
    await started.wait()
    worker.stop()
    await asyncio.wait_for(serving, timeout=10)
    log = await psych_runtime.read_log(scoped, run_id)
    # The call in hand finished and was recorded; the next model call was not made.
    assert [r.body.type for r in log][-2:] == ["tool_call_started", "tool_call_finished"]
    row = await store.get_run("acme", run_id)
    assert row is not None and row.lease_owner is None and row.status == "queued"
    # Another worker picks it up where it stopped.
    await Worker(store, Runtime(model=_per_run_model(), tools=[long_lookup])).run_until_idle()
    status = await psych_runtime.status(scoped, run_id)
    assert status.status == "completed" and status.attempt == 2


async def test_a_worker_without_a_tool_releases_the_run_for_another_with_backoff() -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    store = MemoryStore(clock=lambda: now[0])
    scoped = store.scoped(SCOPE)
    run_id = await dispatch(scoped, spec_with(CodeTool(name="lookup")), "where is A1?")

    class FixedClock:
        def now(self) -> dt.datetime:
            return now[0]

    old = Worker(store, Runtime(model=_per_run_model(), tools=[], clock=FixedClock()))
    await old.run_until_idle()
    row = await store.get_run("acme", run_id)
    assert row is not None and row.status == "queued" and row.lease_owner is None
    assert row.runnable_at == now[0] + dt.timedelta(seconds=5)
    assert (await psych_runtime.status(scoped, run_id)).status != "failed"

    now[0] += dt.timedelta(seconds=6)
    await Worker(store, Runtime(model=_per_run_model(), tools=[lookup])).run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"


async def test_a_run_claimed_max_attempts_times_fails_with_attempts_exhausted() -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    store = MemoryStore(clock=lambda: now[0])
    scoped = store.scoped(SCOPE)
    run_id = await dispatch(scoped, spec_with(), "hi")
    ttl = dt.timedelta(seconds=10)
    for _ in range(3):
        assert await store.claim("crashy", ttl, max_attempts=3) is not None
        now[0] += ttl * 2  # the worker died: its lease expires
    assert await store.claim("crashy", ttl, max_attempts=3) is None
    status = await psych_runtime.status(scoped, run_id)
    assert status.status == "failed" and status.failure_reason == "attempts_exhausted"
    assert status.error is not None and run_id in status.error


async def test_an_attempt_that_dies_is_reported_and_its_slot_serves_the_next_run(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    from psych_runtime.runtime import _drive, _worker

    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    spec = spec_with(CodeTool(name="lookup"))
    doomed = await dispatch(scoped, spec, "where is A0?")
    others = [await dispatch(scoped, spec, f"where is A{i}?") for i in (1, 2)]
    real_drive = _drive.drive

    async def dying_drive(
        store: psych_runtime.ports.Store, claim: psych_runtime.ports.Claim, *args: Any, **kw: Any
    ) -> Any:
        if claim.run_id == doomed:  # fault injection: the task ends like a crash
            raise RuntimeError("the process is going down")
        return await real_drive(store, claim, *args, **kw)

    monkeypatch.setattr(_worker, "drive", dying_drive)
    caplog.set_level(logging.ERROR, logger="psych_runtime")
    worker = Worker(store, Runtime(model=_per_run_model(), tools=[lookup]), concurrency=1)
    await asyncio.wait_for(worker.run_until_idle(), 10)
    assert f"run {doomed}: the attempt died (RuntimeError" in caplog.text
    for run_id in others:  # the one slot went on to the next runs
        assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    row = await store.get_run("acme", doomed)
    assert row is not None and row.status == "running" and row.lease_owner is not None, (
        "its lease is left to expire, as after a crash"
    )


async def test_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        Worker(MemoryStore(), Runtime(model=FakeModel()), concurrency=0)


async def test_the_worker_logs_claims_and_ends_at_info_naming_run_and_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    done = await dispatch(scoped, spec_with(CodeTool(name="lookup")), "where is A0?")
    caplog.set_level(logging.INFO, logger="psych_runtime")
    model = _per_run_model()
    await Worker(store, Runtime(model=model, tools=[lookup]), worker_id="w1").run_until_idle()
    failing = await dispatch(scoped, spec_with(), "hi")
    await Worker(
        store, Runtime(model=FakeModel()), worker_id="w2"
    ).run_until_idle()  # no turn scripted
    text = caplog.text
    assert f"worker w1 claimed run {done} attempt 1 (tenant acme)" in text
    assert f"run {done} attempt 1 completed" in text
    assert f"run {failing} attempt 1 failed (model_error)" in text


def test_the_library_is_quiet_unless_the_app_configures_logging() -> None:
    import logging

    handlers = logging.getLogger("psych_runtime").handlers
    assert any(isinstance(handler, logging.NullHandler) for handler in handlers)

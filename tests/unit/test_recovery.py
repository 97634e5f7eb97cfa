"""After an attempt dies, the next one settles or re-runs what was cut off: never guesses."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Scope
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import ToolCallSettled
from psych_runtime.runtime import Leases, Runtime, dispatch, drive, registry_of
from psych_runtime.testing.fake_model import FakeModel


class WorkerDied(BaseException):
    """Stands in for a kill -9 between a call's start and its finish."""


class Clock:
    def __init__(self) -> None:
        self.now_value = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def now(self) -> dt.datetime:
        return self.now_value


TTL = dt.timedelta(seconds=30)


async def _crash_then_recover(tool: CodeTool) -> tuple[list[str], psych_runtime.Report, FakeModel]:
    effects: list[str] = []
    die = True

    async def charge(order_id: str) -> str:
        """Charge the customer."""
        nonlocal die
        effects.append(order_id)
        if die:
            die = False
            raise WorkerDied
        return f"charged {order_id}"

    clock = Clock()
    store = MemoryStore(clock=clock.now)
    scoped = store.scoped(Scope(tenant="acme"))
    spec = AgentSpec(name="billing", model=ModelRef(model="fake"), tools=(tool,))
    model = FakeModel().turn(tool_calls=[("charge", {"order_id": "A1"})]).turn(text="Done.")
    runtime = Runtime(model=model, tools=[charge], leases=Leases(ttl=TTL))
    registry = registry_of(runtime)
    run_id = await dispatch(scoped, spec, "charge A1")

    first = await store.claim("w1", TTL)
    assert first is not None
    with pytest.raises(WorkerDied):
        await drive(store, first, runtime, registry)
    assert await store.claim("w2", TTL) is None  # the dead worker's lease still holds

    clock.now_value += TTL + dt.timedelta(seconds=1)
    second = await store.claim("w2", TTL)
    assert second is not None and second.attempt == 2
    state = (await drive(store, second, runtime, registry)).state
    assert state is not None and state.status == "completed"
    return effects, await psych_runtime.report(scoped, run_id), model


async def test_an_unsafe_call_cut_off_by_a_crash_is_settled_unknown_and_never_repeated() -> None:
    effects, report, model = await _crash_then_recover(CodeTool(name="charge"))
    assert effects == ["A1"]
    call = report.tool_calls[0]
    assert call.outcome == "unknown" and call.starts == 1
    told = [m for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert told[0].is_error and "outcome of this call is unknown" in told[0].content
    assert report.attempts == 2


async def test_a_safe_call_cut_off_by_a_crash_is_run_again() -> None:
    effects, report, _ = await _crash_then_recover(CodeTool(name="charge", safe_to_retry=True))
    assert effects == ["A1", "A1"]
    call = report.tool_calls[0]
    assert call.outcome == "succeeded" and call.starts == 2
    assert call.result == "charged A1"


async def test_a_model_call_lost_in_a_crash_is_repeated() -> None:
    class DyingModel(FakeModel):
        died = False

        async def complete(
            self, request: psych_runtime.ports.ModelRequest, **options: Any
        ) -> psych_runtime.ports.ModelResponse:
            if not self.died:
                self.died = True
                raise WorkerDied
            return await super().complete(request, **options)

    clock = Clock()
    store = MemoryStore(clock=clock.now)
    scoped = store.scoped(Scope(tenant="acme"))
    spec = AgentSpec(name="a", model=ModelRef(model="fake"))
    model = DyingModel().turn(text="hello")
    await dispatch(scoped, spec, "hi")
    runtime = Runtime(model=model, leases=Leases(ttl=TTL))
    registry = registry_of(runtime)
    first = await store.claim("w1", TTL)
    assert first is not None
    with pytest.raises(WorkerDied):
        await drive(store, first, runtime, registry)
    clock.now_value += TTL * 2
    second = await store.claim("w2", TTL)
    assert second is not None
    state = (await drive(store, second, runtime, registry)).state
    assert state is not None
    assert state.status == "completed" and state.last_text == "hello"
    log = await psych_runtime.read_log(scoped, state.run_id)
    assert [r.body.type for r in log] == [
        "run_admitted",
        "attempt_started",
        "attempt_started",
        "model_call_finished",
        "run_completed",
    ]
    assert not any(isinstance(r.body, ToolCallSettled) for r in log)


async def test_another_tenant_sees_no_run_through_any_reading_function() -> None:
    store = MemoryStore()
    async with psych_runtime.session(
        FakeModel().turn(text="hi"), store=store, scope=Scope(tenant="acme")
    ) as s:
        view = await s.ask(AgentSpec(name="a", model=ModelRef(model="m")), "hello")
    other = store.scoped(Scope(tenant="globex"))
    for read in (psych_runtime.status, psych_runtime.report, psych_runtime.read_log):
        with pytest.raises(psych_runtime.errors.RunNotFound, match=view.run_id):
            await read(other, view.run_id)
        with pytest.raises(psych_runtime.errors.RunNotFound):
            await read(other, "no-such-run")
    assert (await psych_runtime.status(store.scoped(Scope(tenant="acme")), view.run_id)).status == (
        "completed"
    )

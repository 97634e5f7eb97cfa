"""`Runtime`: one frozen value carries every option; `Worker`, `session()` and the attempt take
it, so an option added in one place reaches every tool with no other edit."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    Leases,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    ToolContext,
    Worker,
    dispatch,
    session,
)
from psych_runtime.testing.fake_model import FakeModel

SPEC = AgentSpec(name="s", model=ModelRef(model="fake"), tools=(CodeTool(name="where"),))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RegionalRuntime(Runtime):
    """An app's own option, added in this one place."""

    region: str = "eu-west-1"


seen: list[object] = []


def where(ctx: ToolContext) -> str:
    """Say which region this runs in."""
    seen.append(ctx.runtime)
    assert isinstance(ctx.runtime, RegionalRuntime)
    return ctx.runtime.region


def _model() -> FakeModel:
    return FakeModel().turn(tool_calls=[("where", {})]).turn(text="done")


async def test_an_option_added_to_the_runtime_reaches_a_tool_through_a_session() -> None:
    seen.clear()
    runtime = RegionalRuntime(model=_model(), tools=[where], region="ap-south-1")
    async with session(runtime=runtime) as s:
        view = await s.ask(SPEC, "where?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert report.tool_calls[0].result == "ap-south-1"
    assert seen == [runtime]


async def test_the_same_option_reaches_a_tool_through_a_worker() -> None:
    seen.clear()
    store = MemoryStore()
    scoped = store.scoped(Scope(tenant="t"))
    run_id = await dispatch(scoped, SPEC, "where?")
    runtime = RegionalRuntime(model=_model(), tools=[where])
    await Worker(store, runtime).run_until_idle()
    report = await psych_runtime.report(scoped, run_id)
    assert report.tool_calls[0].result == "eu-west-1"
    assert seen == [runtime]


def test_a_runtime_is_frozen_all_the_way_down() -> None:
    rules = {"big": lambda arguments: True}
    tools = [where]
    runtime = Runtime(model=FakeModel(), tools=tools, approval_rules=rules)
    tools.clear()
    rules.clear()
    assert runtime.tools == (where,)
    assert set(runtime.approval_rules) == {"big"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        runtime.model = FakeModel()  # type: ignore[misc]
    with pytest.raises(TypeError):
        runtime.approval_rules["other"] = lambda arguments: False  # type: ignore[index]
    later = runtime.replace(cancel_grace=1.0)
    assert later.cancel_grace == 1.0 and runtime.cancel_grace == 10.0
    assert later.tools == runtime.tools


def test_leases_refuse_settings_that_cannot_hold_a_run() -> None:
    with pytest.raises(ValueError, match="ttl must be positive"):
        Leases(ttl=dt.timedelta(0))
    with pytest.raises(ValueError, match="shorter than ttl"):
        Leases(ttl=dt.timedelta(seconds=5), heartbeat=dt.timedelta(seconds=5))
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        Leases(max_attempts=0)
    assert Leases(ttl=dt.timedelta(seconds=9)).every == 3
    assert Leases(heartbeat=dt.timedelta(seconds=2)).every == 2


async def test_options_one_by_one_still_work_for_now_and_say_where_they_went() -> None:
    store = MemoryStore()
    scoped = store.scoped(Scope(tenant="t"))
    run_id = await dispatch(scoped, SPEC.model_copy(update={"tools": ()}), "hi")
    with pytest.warns(
        DeprecationWarning, match="Worker's keyword options are deprecated"
    ) as warned:
        worker = Worker(
            store, model=FakeModel().turn(text="hi"), lease_ttl=dt.timedelta(seconds=12)
        )
    message = str(warned[0].message)
    assert "lease_ttl= (now Runtime(leases=Leases(ttl=...)))" in message
    assert "model= (now Runtime(model=...))" in message
    assert warned[0].filename == __file__, "the warning points at the caller"
    assert worker.runtime.leases.ttl == dt.timedelta(seconds=12)
    await worker.run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    with pytest.warns(
        DeprecationWarning, match=r"cancel_grace= \(now Runtime\(cancel_grace="
    ) as warned:
        async with session(FakeModel(), cancel_grace=2.0) as s:
            assert s.runtime.cancel_grace == 2.0
    assert warned[0].filename == __file__, "the warning points at the caller"
    assert str(warned[0].message).endswith("(removed in 0.3)")


def test_a_runtime_and_options_one_by_one_cannot_be_mixed() -> None:
    runtime = Runtime(model=FakeModel())
    with pytest.raises(TypeError, match="put them in the Runtime"):
        Worker(MemoryStore(), runtime, lease_ttl=dt.timedelta(seconds=1))
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        Worker(MemoryStore(), runtime, lease=3)
    with pytest.raises(TypeError, match=r"needs a Runtime"):
        Worker(MemoryStore())


async def test_session_takes_a_model_and_tools_or_a_runtime_not_both() -> None:
    with pytest.raises(TypeError, match="not both"):
        async with session(FakeModel(), runtime=Runtime(model=FakeModel())):
            pass
    with pytest.raises(TypeError, match="needs a model"):
        async with session():
            pass

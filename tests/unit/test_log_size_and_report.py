"""Each piece of content is stored once; reports and usage print honestly."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, Cost, ModelRef, Usage
from psych_runtime.testing.fake_model import FakeModel
from tests.unit._simulate import log_bytes


async def echo(text: str) -> str:
    """Repeat the text."""
    return text


async def _log_of_conversation(turns: int) -> int:
    spec = AgentSpec(
        name="chatty",
        model=ModelRef(model="fake"),
        tools=(CodeTool(name="echo"),),
        max_turns=turns + 1,
    )
    model = FakeModel()
    for index in range(turns):
        model.turn(text=f"step {index} " + "x" * 200, tool_calls=[("echo", {"text": "y" * 300})])
    model.turn(text="done")
    async with psych_runtime.session(model, tools=[echo]) as s:
        view = await s.ask(spec, "go")
        assert view.status == "completed"
        return log_bytes(await psych_runtime.read_log(s.store, view.run_id))


async def test_log_size_grows_linearly_with_turns() -> None:
    hundred = await _log_of_conversation(100)
    two_hundred = await _log_of_conversation(200)
    assert two_hundred < 2.2 * hundred, (hundred, two_hundred)


async def test_usage_prints_every_kind_and_unknown_cost_prints_none() -> None:
    spec = AgentSpec(name="a", model=ModelRef(model="fake-standard"))
    async with psych_runtime.session(FakeModel().turn(text="hi")) as s:
        view = await s.ask(spec, "hello")
        report = await psych_runtime.report(s.store, view.run_id)
    assert str(report.totals.usage) == (
        "input=0 output=0 cache_read=0 cache_write=0 cache_write_1h=0 reasoning=0"
    )
    assert report.totals.cost is None
    assert report.totals.unpriced_calls == 1
    assert report.totals.usage_sources == {"provider": 1}


async def test_totals_sum_usage_and_cost_and_stay_none_while_any_call_is_unpriced() -> None:
    spec = AgentSpec(
        name="a", model=ModelRef(model="m"), tools=(CodeTool(name="echo"),), max_turns=5
    )
    day = dt.date(2026, 11, 1)
    priced = (
        FakeModel()
        .turn(
            tool_calls=[("echo", {"text": "a"})],
            usage=Usage(input=10, output=5, cache_read=3),
            cost=Cost(amount=Decimal("0.0001"), source="snapshot", as_of=day),
        )
        .turn(
            text="ok",
            usage=Usage(input=1, output=2, reasoning=1),
            cost=Cost(amount=Decimal("0.00002"), source="snapshot", as_of=day),
        )
    )
    async with psych_runtime.session(priced, tools=[echo]) as s:
        view = await s.ask(spec, "go")
        totals = (await psych_runtime.report(s.store, view.run_id)).totals
    assert totals.usage == Usage(input=11, output=7, cache_read=3, reasoning=1)
    assert totals.cost == Cost(amount=Decimal("0.00012"), source="snapshot", as_of=day)
    assert totals.unpriced_calls == 0

    half = (
        FakeModel()
        .turn(
            tool_calls=[("echo", {"text": "a"})],
            cost=Cost(amount=Decimal("0.5"), source="provider"),
        )
        .turn(text="ok")
    )
    async with psych_runtime.session(half, tools=[echo]) as s:
        view = await s.ask(spec, "go")
        totals = (await psych_runtime.report(s.store, view.run_id)).totals
    assert totals.cost is None and totals.unpriced_calls == 1


async def test_report_times_and_attempts_come_from_the_log() -> None:
    spec = AgentSpec(name="a", model=ModelRef(model="m"))
    async with psych_runtime.session(FakeModel().turn(text="hi")) as s:
        view = await s.ask(spec, "hello")
        report = await psych_runtime.report(s.store, view.run_id)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert report.attempts == 1
    assert report.started_at == log[0].at and report.ended_at == log[-1].at
    assert report.spec_version == spec.version and report.agent == "a"
    assert report.model_dump(mode="json")["status"] == "completed"

"""Totals over model calls that never answered: no usage, no cost, never a made-up 0."""

from __future__ import annotations

from decimal import Decimal

import psych_runtime
from psych_runtime import AgentSpec, Cost, ModelRef, Totals, Usage
from psych_runtime.errors import ModelError
from psych_runtime.testing.fake_model import FakeModel

SPEC = AgentSpec(name="a", model=ModelRef(model="m"))


async def test_a_run_no_model_answered_has_no_cost_and_counts_its_failed_calls() -> None:
    model = FakeModel().fail(ModelError("refused before connecting", model="m"))
    async with psych_runtime.session(model) as s:
        view = await s.ask(SPEC, "go")
        totals = (await psych_runtime.report(s.store, view.run_id)).totals
    assert view.status == "failed"
    assert totals.cost is None
    assert (totals.failed_calls, totals.unpriced_calls, totals.usage_sources) == (1, 0, {})


def test_a_subagent_no_model_answered_adds_no_cost_rather_than_an_unknown_one() -> None:
    price = Cost(amount=Decimal("0.25"), source="override")
    parent = Totals(usage=Usage(input=5), usage_sources={"provider": 1}, cost=price)
    child = Totals(failed_calls=2)
    assert (parent + child).cost == price
    assert (child + parent).cost == price
    assert (parent + child).failed_calls == 2
    assert (child + child).cost is None
    unpriced = Totals(usage_sources={"provider": 1}, unpriced_calls=1)
    assert (parent + unpriced).cost is None

"""Model calls that never answered: no usage, no cost, and the totals say so."""

from __future__ import annotations

from decimal import Decimal

import psych_runtime
from psych_runtime import AgentSpec, Cost, EgressPolicy, ModelRef, OpenAIChatClient, Usage
from psych_runtime.records import ModelCallFailed
from tests.integration._chat_server import completion, error, serve, usage

SPEC = AgentSpec(name="a", model=ModelRef(model="gpt-test"))


async def test_a_run_whose_only_call_was_refused_before_connecting_has_no_cost() -> None:
    # The default egress refuses loopback: the call never leaves this process.
    client = OpenAIChatClient("http://127.0.0.1:9/v1", api_key_secret=None)
    async with client, psych_runtime.session(client) as s:
        view = await s.ask(SPEC, "hello")
        report = await psych_runtime.report(s.store, view.run_id)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert (view.status, report.failure_reason) == ("failed", "model_error")
    [failed] = [r.body for r in log if isinstance(r.body, ModelCallFailed)]
    assert "refused before connecting" in failed.error
    totals = report.totals
    assert totals.cost is None, "no provider and no price said anything: not 0 USD (provider)"
    assert totals.failed_calls == 1
    assert (totals.usage, totals.usage_sources, totals.unpriced_calls) == (Usage(), {}, 0)
    assert report.model_calls == 0


async def test_failed_attempts_before_an_answer_add_nothing_to_its_cost() -> None:
    with serve() as server:
        server.reply(error(503, "busy"), completion("ok", usage_=usage(cost=0.25)))
        client = OpenAIChatClient(
            server.base_url,
            api_key_secret=None,
            egress=EgressPolicy(allow_loopback=True),
            backoff=0.01,
        )
        async with client, psych_runtime.session(client) as s:
            view = await s.ask(SPEC, "hello")
            totals = (await psych_runtime.report(s.store, view.run_id)).totals
    assert view.status == "completed"
    assert totals.cost == Cost(amount=Decimal("0.25"), source="provider")
    assert (totals.failed_calls, totals.usage_sources) == (1, {"provider": 1})

"""Whole runs through `session(OpenAIChatClient(...))` against the scripted server on loopback:
what the log records, and what `report()` totals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    EgressPolicy,
    EnvSecretResolver,
    ModelRef,
    OpenAIChatClient,
    PriceTable,
    Usage,
)
from psych_runtime.records import (
    ModelCallFailed,
    ModelCallFinished,
    Record,
    RunFailed,
    ToolCallFailed,
)
from tests.integration._chat_server import (
    ChatServer,
    Scripted,
    chunk,
    completion,
    error,
    tool_call,
    usage,
    usage_chunk,
)

SECRETS = EnvSecretResolver(["TEST_KEY"], environ={"TEST_KEY": "sk-test-runs-0123456789"})


@pytest.fixture
async def client(server: ChatServer) -> AsyncIterator[OpenAIChatClient]:
    async with OpenAIChatClient(
        server.base_url,
        egress=EgressPolicy(allow_loopback=True),
        secrets=SECRETS,
        api_key_secret="TEST_KEY",
        backoff=0.01,
    ) as made:
        yield made


async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


def make_spec(
    model: str = "gpt-test", fallbacks: tuple[str, ...] = (), *, tools: bool = False
) -> AgentSpec:
    return AgentSpec(
        name="support",
        instructions="Help with orders.",
        model=ModelRef(model=model, fallbacks=fallbacks),
        tools=(CodeTool(name="lookup_order"),) if tools else (),
    )


def kinds(records: list[Record]) -> list[str]:
    return [record.body.type for record in records]


def streamed_tool_turn(prompt: int, completion_tokens: int) -> Scripted:
    calls = [
        {"index": 0, "id": "c1", "function": {"name": "lookup_order", "arguments": '{"order_'}},
        {"index": 1, "id": "c2", "function": {"name": "lookup_order", "arguments": ""}},
    ]
    return Scripted(
        events=[
            chunk({"role": "assistant", "tool_calls": calls}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"order_id": "B2"}'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'id": "A1"}'}}]}),
            chunk(finish="tool_calls"),
            usage_chunk(usage(prompt, completion_tokens)),
        ]
    )


async def test_a_streamed_run_with_tools_records_usage_and_the_apps_prices(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    client.stream = True
    server.reply(
        streamed_tool_turn(1000, 40),
        Scripted(
            events=[
                chunk({"content": "Both have "}),
                chunk({"content": "shipped."}, finish="stop"),
                usage_chunk(usage(1200, 10, cached=800, reasoning=4)),
            ]
        ),
    )
    prices = PriceTable({"gpt-test": {"input": "2", "output": "10", "cache_read": "0.5"}})
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=client, tools=[lookup_order], prices=prices)
    ) as s:
        view = await s.ask(make_spec(tools=True), "where are A1 and B2?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert view.status == "completed"
    assert view.text == "Both have shipped."
    assert [(c.name, c.arguments, c.outcome) for c in report.tool_calls] == [
        ("lookup_order", {"order_id": "A1"}, "succeeded"),
        ("lookup_order", {"order_id": "B2"}, "succeeded"),
    ]
    totals = report.totals
    assert totals.usage == Usage(input=1400, output=50, cache_read=800, reasoning=4)
    assert totals.usage_sources == {"provider": 2}
    assert totals.unpriced_calls == 0
    assert totals.cost is not None
    # (1000 * 2 + 40 * 10) + (400 * 2 + 800 * 0.5 + 10 * 10), per million tokens
    assert totals.cost.amount == Decimal("0.0037")
    assert totals.cost.source == "override"
    # The second request answered the calls with the runtime's call ids (in the order the
    # calls finished: they run at once).
    second = server.requests[1].body["messages"]
    assert sorted(m.get("tool_call_id") for m in second if m["role"] == "tool") == ["2.0", "2.1"]


async def test_the_snapshot_prices_a_run_and_says_as_of_when(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    client.provider = "openai"
    server.reply(completion("Hi.", usage_=usage(5000, 300)))
    async with psych_runtime.session(client) as s:
        view = await s.ask(make_spec("gpt-4o-mini"), "hi")
        report = await psych_runtime.report(s.store, view.run_id)
    expected = PriceTable.snapshot().cost("gpt-4o-mini", Usage(input=5000, output=300))
    assert expected is not None
    assert report.totals.cost == expected
    assert report.totals.cost.source == "snapshot"
    assert report.totals.cost.as_of == PriceTable.snapshot().as_of


async def test_a_run_with_a_call_of_unknown_usage_has_no_cost_total_and_says_why(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    server.reply(
        completion(tool_calls=[tool_call("lookup_order", {"order_id": "A1"})], usage_=usage(10, 5)),
        completion("Shipped."),  # no usage at all
    )
    prices = PriceTable({"gpt-test": {"input": "1", "output": "1"}})
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=client, tools=[lookup_order], prices=prices)
    ) as s:
        view = await s.ask(make_spec(tools=True), "where is A1?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert report.totals.usage_sources == {"provider": 1, "missing": 1}
    assert report.totals.usage == Usage(input=10, output=5)  # a lower bound: one call unknown
    assert report.totals.cost is None
    assert report.totals.unpriced_calls == 1


async def test_a_gateway_cost_and_a_snapshot_price_total_as_mixed(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    client.provider = "openai"
    server.reply(
        completion(
            tool_calls=[tool_call("lookup_order", {"order_id": "A1"})],
            usage_=usage(100, 10, cost=0.25),
        ),
        completion("Shipped.", usage_=usage(100, 10)),
    )
    async with psych_runtime.session(client, tools=[lookup_order]) as s:
        view = await s.ask(make_spec("gpt-4o-mini", tools=True), "where is A1?")
        report = await psych_runtime.report(s.store, view.run_id)
    snapshot = PriceTable.snapshot().cost("gpt-4o-mini", Usage(input=100, output=10))
    assert snapshot is not None and report.totals.cost is not None
    assert report.totals.cost.source == "mixed"
    assert report.totals.cost.amount == Decimal("0.25") + snapshot.amount


async def test_500_three_times_then_the_fallback_serves_and_the_log_names_each(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    server.reply(error(500, "boom"), error(500, "boom"), error(500, "boom"), completion("From B."))
    async with psych_runtime.session(client) as s:
        view = await s.ask(make_spec("model-a", fallbacks=("model-b",)), "hi")
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "completed"
    assert kinds(log) == [
        "run_admitted",
        "attempt_started",
        "model_call_failed",
        "model_call_failed",
        "model_call_failed",
        "model_call_finished",
        "run_completed",
    ]
    failed = [r.body for r in log if isinstance(r.body, ModelCallFailed)]
    assert [(f.model, f.status, f.error, f.retryable) for f in failed] == [
        ("model-a", 500, "HTTP 500: boom", True)
    ] * 3
    [finished] = [r for r in log if isinstance(r.body, ModelCallFinished)]
    assert isinstance(finished.body, ModelCallFinished)
    assert finished.body.model == "model-b"
    # The failures and the answer went into the log in one append.
    assert len({r.at for r in log[2:6]}) == 1


async def test_when_no_model_answers_the_run_fails_cleanly_naming_every_attempt(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    server.reply(*[error(503, "overloaded")] * 6)
    async with psych_runtime.session(client) as s:
        view = await s.ask(make_spec("model-a", fallbacks=("model-b",)), "hi")
        log = await psych_runtime.read_log(s.store, view.run_id)
        status = await psych_runtime.status(s.store, view.run_id)
    assert view.status == "failed"
    assert kinds(log)[2:] == ["model_call_failed"] * 6 + ["run_failed"]
    assert [r.body.model for r in log[2:8] if isinstance(r.body, ModelCallFailed)] == (
        ["model-a"] * 3 + ["model-b"] * 3
    )
    failed = log[-1].body
    assert isinstance(failed, RunFailed)
    assert failed.reason == "model_error"
    assert "seq 2: model 'model-b' failed: HTTP 503: overloaded (6 failed attempts" in failed.error
    assert status.failure_reason == "model_error"


async def test_malformed_json_fails_the_run_with_a_readable_error(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    server.reply(Scripted(raw=b"<html>Bad Gateway</html>"))
    async with psych_runtime.session(client) as s:
        view = await s.ask(make_spec(), "hi")
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "failed"
    assert kinds(log)[2:] == ["model_call_failed", "run_failed"]
    assert view.error is not None
    assert "the reply is not JSON" in view.error
    assert "<html>Bad Gateway</html>" in view.error


async def test_a_truncated_stream_is_recorded_and_the_run_goes_on(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    client.stream = True
    server.reply(
        Scripted(events=[chunk({"content": "Hel"})], done=False),
        Scripted(events=[chunk({"content": "Hello."}, finish="stop"), usage_chunk(usage())]),
    )
    async with psych_runtime.session(client) as s:
        view = await s.ask(make_spec(), "hi")
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.text == "Hello."
    assert kinds(log)[2:] == ["model_call_failed", "model_call_finished", "run_completed"]
    failed = log[2].body
    assert isinstance(failed, ModelCallFailed) and failed.retryable


async def test_an_unknown_finish_reason_fails_the_run_cleanly(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    server.reply(completion("Hmm", finish="mystery"))
    async with psych_runtime.session(client) as s:
        view = await s.ask(make_spec(), "hi")
    assert view.status == "failed"
    assert view.error is not None and "unknown finish reason 'mystery'" in view.error


async def test_tool_arguments_that_are_not_json_are_answered_and_the_run_goes_on(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    server.reply(
        completion(tool_calls=[tool_call("lookup_order", '{"order_id": "A1"')]),
        completion(tool_calls=[tool_call("lookup_order", {"order_id": "A1"})]),
        completion("A1 has shipped."),
    )
    async with psych_runtime.session(client, tools=[lookup_order]) as s:
        view = await s.ask(make_spec(tools=True), "where is A1?")
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.text == "A1 has shipped."
    [refused] = [r.body for r in log if isinstance(r.body, ToolCallFailed)]
    assert refused.reason == "invalid_arguments"
    assert "not valid JSON" in refused.error
    # The model was shown why, as the answer to its own call.
    answer: dict[str, Any] = server.requests[1].body["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "2.0"
    assert "invalid_arguments" in answer["content"]


async def test_compaction_through_the_client_sends_a_smaller_request_with_the_summary(
    server: ChatServer, client: OpenAIChatClient
) -> None:
    from psych_runtime.conversations import Compaction
    from psych_runtime.records import ConversationCompacted

    spec = make_spec(tools=True).model_copy(
        update={
            "compaction": Compaction(
                threshold_tokens=1_000, keep_turns=1, model=ModelRef(model="gpt-small")
            )
        }
    )
    call = tool_call("lookup_order", {"order_id": "A1"}, "c1")
    server.reply(completion(tool_calls=[call], finish="tool_calls", usage_=usage(700, 20)))
    server.reply(completion("A1 has shipped. " + "Details. " * 60, usage_=usage(900, 150)))
    server.reply(
        completion("The user asked about order A1; it has shipped.", usage_=usage(300, 12))
    )
    server.reply(completion("It left the warehouse on Monday.", usage_=usage(120, 9)))
    async with psych_runtime.session(
        client, tools=[lookup_order], scope=psych_runtime.Scope(tenant="t")
    ) as s:
        first = await s.ask(spec, "Where is order A1?")
        second = await s.ask(spec, "When did it leave?", continues=first.run_id)
        log = await psych_runtime.read_log(s.store, second.run_id)
        report = await psych_runtime.report(s.store, second.run_id)
    assert second.status == "completed"
    before, summarising, after = (r.body for r in server.requests[1:])
    assert summarising["model"] == "gpt-small" and "tools" not in summarising
    transcript = summarising["messages"][-1]["content"]
    assert "USER: Where is order A1?" in transcript
    assert "TOOL RESULT (lookup_order)" in transcript
    # The request after compaction carries the summary and the new turn, and is smaller.
    sent = [m.get("content") for m in after["messages"]]
    assert any("The user asked about order A1" in (text or "") for text in sent)
    assert sent[-1] == "When did it leave?"
    assert len(json.dumps(after["messages"])) < len(json.dumps(before["messages"]))
    assert not any(m.get("role") == "tool" for m in after["messages"])
    # The log keeps every record of both runs; the summarised ones are in the first's log.
    (compacted,) = [r.body for r in log if isinstance(r.body, ConversationCompacted)]
    assert compacted.model == "gpt-small" and compacted.tokens == 1_050
    assert compacted.usage is not None and compacted.usage.input == 300
    assert report.compactions == 1

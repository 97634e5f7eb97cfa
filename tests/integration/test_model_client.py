"""`OpenAIChatClient` against a real HTTP server on loopback that speaks the protocol."""

from __future__ import annotations

import asyncio
import json
import time
from decimal import Decimal
from typing import Any

import pytest

from psych_runtime import (
    EgressPolicy,
    EnvSecretResolver,
    ModelPrice,
    ModelRef,
    OpenAIChatClient,
    PriceTable,
    Usage,
)
from psych_runtime.errors import ModelError
from psych_runtime.ports import (
    AssistantMessage,
    Egress,
    ModelFailure,
    ModelRequest,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from tests.integration._chat_server import (
    API_KEY,
    ChatServer,
    MakeClient,
    Scripted,
    chunk,
    completion,
    error,
    tool_call,
    usage,
    usage_chunk,
)


def ask(model: str = "gpt-test", fallbacks: tuple[str, ...] = (), **extra: Any) -> ModelRequest:
    extra.setdefault("messages", (UserMessage("hello"),))
    return ModelRequest(
        run_id="run-1",
        model=ModelRef(model=model, fallbacks=fallbacks),
        instructions="Be brief.",
        **extra,
    )


# -- whole and streamed answers ------------------------------------------------------------------


async def test_a_whole_reply_gives_text_usage_and_the_request_carries_the_key(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("Hello!", usage_=usage(100, 20)))
    response = await make_client().complete(ask())
    assert response.text == "Hello!"
    assert response.model == "gpt-test"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input=100, output=20)
    assert response.usage_source == "provider"
    assert response.failures == ()
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    assert "stream" not in sent.body


async def test_usage_with_cache_and_reasoning_details_counts_every_token_once(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        completion(
            "ok",
            usage_=usage(
                1000,
                300,
                cached=600,
                reasoning=120,
                cache_creation_input_tokens=250,
                cache_creation={"ephemeral_5m_input_tokens": 50, "ephemeral_1h_input_tokens": 200},
            ),
        )
    )
    response = await make_client().complete(ask())
    assert response.usage == Usage(
        input=150, output=300, cache_read=600, cache_write=50, cache_write_1h=200, reasoning=120
    )
    assert response.usage is not None
    prompt = response.usage.input + response.usage.cache_read
    assert prompt + response.usage.cache_write + response.usage.cache_write_1h == 1000


async def test_a_streamed_reply_joins_the_pieces_and_asks_for_usage(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        Scripted(
            events=[
                chunk({"role": "assistant", "content": "Hel"}),
                ": keep-alive comment",
                chunk({"content": "lo"}),
                chunk({"content": "!"}, finish="stop"),
                usage_chunk(usage(7, 3, cached=2)),
            ]
        )
    )
    response = await make_client(stream=True).complete(ask())
    assert response.text == "Hello!"
    assert response.usage == Usage(input=5, output=3, cache_read=2)
    assert response.usage_source == "provider"
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert server.requests[0].headers["accept"] == "text/event-stream"


async def test_several_tool_calls_in_one_streamed_turn_with_arguments_in_pieces(
    server: ChatServer, make_client: MakeClient
) -> None:
    def piece(index: int, **function: str) -> dict[str, Any]:
        return {"index": index, "function": function}

    server.reply(
        Scripted(
            events=[
                chunk({"role": "assistant", "content": None}),
                chunk({"tool_calls": [{**piece(0, name="lookup", arguments=""), "id": "c_a"}]}),
                chunk({"tool_calls": [piece(0, arguments='{"order')]}),
                chunk(
                    {"tool_calls": [{**piece(1, name="refund", arguments='{"amo'), "id": "c_b"}]}
                ),
                chunk({"tool_calls": [piece(0, arguments='_id": "A1"}')]}),
                chunk({"tool_calls": [piece(1, arguments='unt": 12.5}')]}),
                chunk(finish="tool_calls"),
                usage_chunk(usage(50, 30)),
            ]
        )
    )
    response = await make_client(stream=True).complete(ask())
    assert [(c.name, json.loads(c.arguments), c.provider_call_id) for c in response.tool_calls] == [
        ("lookup", {"order_id": "A1"}, "c_a"),
        ("refund", {"amount": 12.5}, "c_b"),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.text is None


async def test_tools_results_and_structured_output_go_out_in_the_openai_shape(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion('{"answer": 4}', usage_=usage()))
    schema: dict[str, Any] = {
        "title": "Answer",
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
    }
    request = ask(
        messages=(
            UserMessage("2+2?"),
            AssistantMessage(
                "Let me add.",
                (ToolCall(call_id="3.0", name="add", arguments='{"a": 2}', provider_call_id="x"),),
            ),
            ToolResultMessage(call_id="3.0", name="add", content="4"),
        ),
        tools=(ToolDefinition("add", "Add numbers.", {"type": "object", "properties": {}}),),
        output_schema=schema,
    )
    await make_client().complete(request)
    body = server.requests[0].body
    assert body["messages"][2:] == [
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                {
                    "id": "3.0",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "3.0", "content": "4"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add numbers.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": schema},
    }


async def test_model_settings_are_sent(server: ChatServer, make_client: MakeClient) -> None:
    server.reply(completion("ok", usage_=usage()))
    request = ModelRequest(
        run_id="run-1",
        model=ModelRef(model="gpt-test", temperature=0.2, max_output_tokens=64),
        instructions="",
        messages=(UserMessage("hi"),),
    )
    await make_client().complete(request)
    body = server.requests[0].body
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 64
    assert body["messages"] == [{"role": "user", "content": "hi"}]


# -- usage that is missing ----------------------------------------------------------------------


async def test_a_whole_reply_without_usage_is_missing_not_zero(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("ok"))
    response = await make_client(
        prices=PriceTable({"gpt-test": {"input": 1, "output": 1}})
    ).complete(ask())
    assert response.usage is None
    assert response.usage_source == "missing"
    assert response.cost is None


async def test_a_stream_whose_usage_chunk_never_came_is_missing_not_zero(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(events=[chunk({"content": "ok"}), chunk(finish="stop")]))
    response = await make_client(stream=True).complete(ask())
    assert response.text == "ok"
    assert response.usage is None
    assert response.usage_source == "missing"


# -- retries and fallbacks -----------------------------------------------------------------------


async def test_a_429_with_retry_after_is_waited_out_then_retried(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(error(429, "slow down", {"retry-after": "1"}), completion("ok", usage_=usage()))
    started = time.monotonic()
    response = await make_client().complete(ask())
    waited = time.monotonic() - started
    assert response.text == "ok"
    assert waited >= 1.0
    assert response.failures == (
        ModelFailure(model="gpt-test", reason="HTTP 429: slow down", status=429, retryable=True),
    )


async def test_a_retry_after_longer_than_allowed_moves_on_to_the_fallback(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(error(429, "come back in an hour", {"retry-after": "3600"}), completion("ok"))
    started = time.monotonic()
    response = await make_client(max_retry_after=5).complete(ask(fallbacks=("gpt-other",)))
    assert time.monotonic() - started < 5
    assert response.model == "gpt-other"
    assert server.models_asked == ["gpt-test", "gpt-other"]


async def test_a_gateways_retry_after_for_the_provider_behind_it_is_honoured(
    server: ChatServer, make_client: MakeClient
) -> None:
    # LiteLLM passes an upstream provider's Retry-After on only as llm_provider-retry-after.
    server.reply(
        error(429, "upstream rate limited", {"llm_provider-retry-after": "3600"}),
        completion("ok"),
    )
    response = await make_client(max_retry_after=5).complete(ask(fallbacks=("gpt-other",)))
    assert response.model == "gpt-other"
    assert server.models_asked == ["gpt-test", "gpt-other"]


async def test_500_three_times_then_the_fallback_serves(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        error(500, "boom"), error(502, "bad gateway"), error(503, "busy"), completion("from B")
    )
    response = await make_client().complete(ask("model-a", fallbacks=("model-b", "model-c")))
    assert response.text == "from B"
    assert response.model == "model-b"
    assert [(f.model, f.status, f.retryable) for f in response.failures] == [
        ("model-a", 500, True),
        ("model-a", 502, True),
        ("model-a", 503, True),
    ]
    assert server.models_asked == ["model-a", "model-a", "model-a", "model-b"]


async def test_a_client_error_is_not_retried_but_the_fallback_is_tried(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(error(400, "model not found"), completion("ok"))
    response = await make_client().complete(ask("model-a", fallbacks=("model-b",)))
    assert response.model == "model-b"
    assert response.failures == (
        ModelFailure(model="model-a", reason="HTTP 400: model not found", status=400),
    )


async def test_when_every_model_fails_the_error_lists_every_attempt(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(*[error(500, "down")] * 4)
    with pytest.raises(ModelError) as caught:
        await make_client(max_attempts=2).complete(ask("model-a", fallbacks=("model-b",)))
    assert [(f.model, f.status) for f in caught.value.failures] == [
        ("model-a", 500),
        ("model-a", 500),
        ("model-b", 500),
        ("model-b", 500),
    ]
    assert caught.value.retryable is True
    assert "run run-1: no model answered (4 failed attempts" in str(caught.value)


async def test_a_connection_dropped_mid_stream_is_retried(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        Scripted(events=[chunk({"content": "Hel"})], abort=True),
        Scripted(events=[chunk({"content": "Hello"}, finish="stop"), usage_chunk(usage())]),
    )
    response = await make_client(stream=True).complete(ask())
    assert response.text == "Hello"
    [failure] = response.failures
    assert failure.retryable is True
    assert failure.status is None
    assert "POST http://127.0.0.1" in failure.reason


async def test_a_server_that_is_not_there_is_a_retryable_connection_failure(
    make_client: MakeClient,
) -> None:
    client = make_client(max_attempts=2)
    client.base_url = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    with pytest.raises(ModelError) as caught:
        await client.complete(ask())
    assert len(caught.value.failures) == 2
    assert all(f.retryable and "ConnectError" in f.reason for f in caught.value.failures)


async def test_a_reply_slower_than_the_timeout_fails_the_attempt(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(json={"choices": []}, delay=1.0), completion("ok"))
    response = await make_client(timeout=0.2).complete(ask())
    assert response.text == "ok"
    [failure] = response.failures
    assert "timed out waiting for the response" in failure.reason
    assert failure.retryable


@pytest.mark.parametrize("stream", [False, True])
async def test_a_server_that_drips_keep_alives_for_ever_is_cut_off_at_the_total_timeout(
    server: ChatServer, make_client: MakeClient, stream: bool
) -> None:
    # Each keep-alive (a comment line, or a space before the JSON) resets the read timeout.
    dripping = Scripted(events=[chunk({"content": "Hel"})] if stream else None, drip=0.3)
    server.reply(dripping, dripping)
    client = make_client(stream=stream, timeout=5, total_timeout=1, max_attempts=2)
    async with asyncio.timeout(30):  # the test's own bound: the client must end far sooner
        with pytest.raises(ModelError) as caught:
            await client.complete(ask())
    assert len(caught.value.failures) == 2
    for failure in caught.value.failures:
        assert failure.retryable
        assert f"POST {server.base_url}/chat/completions: no whole response within the " in (
            failure.reason
        )
        assert "total timeout of 1 s" in failure.reason
    assert "last: gpt-test: POST" in str(caught.value)


async def test_a_streamed_answer_has_the_same_size_cap_as_a_whole_one(
    server: ChatServer, make_client: MakeClient
) -> None:
    # 33 MiB of events: past the 32 MiB a whole answer may have.
    megabyte = chunk({"content": "x" * (1024 * 1024)})
    server.reply(
        Scripted(events=[megabyte] * 33),
        Scripted(events=[chunk({"content": "from B"}, finish="stop")]),
    )
    response = await make_client(stream=True).complete(ask("model-a", fallbacks=("model-b",)))
    assert response.text == "from B"
    [failure] = response.failures
    assert (failure.model, failure.retryable) == ("model-a", False)
    assert f"the response is longer than {32 * 1024 * 1024} bytes" in failure.reason


@pytest.mark.parametrize("stream", [False, True])
async def test_max_response_bytes_caps_whole_and_streamed_answers_alike(
    server: ChatServer, make_client: MakeClient, stream: bool
) -> None:
    big = "x" * 10_000
    server.reply(
        Scripted(events=[chunk({"content": big}, finish="stop")]) if stream else completion(big)
    )
    with pytest.raises(ModelError) as caught:
        await make_client(stream=stream, max_response_bytes=4096).complete(ask())
    [failure] = caught.value.failures
    assert "the response is longer than 4096 bytes" in failure.reason
    assert not failure.retryable


# -- replies that cannot be used: recorded, readable, never a crash -----------------------------


async def test_malformed_json_is_a_readable_failure(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(raw=b'{"choices": [{"message": '))
    with pytest.raises(ModelError) as caught:
        await make_client().complete(ask())
    [failure] = caught.value.failures
    assert failure.status == 200
    assert not failure.retryable
    assert failure.reason.startswith("the reply is not JSON")


async def test_a_stream_cut_short_is_a_retryable_failure(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        Scripted(events=[chunk({"content": "Hel"})], done=False),
        Scripted(events=[chunk({"content": "Hello"}, finish="stop")]),
    )
    response = await make_client(stream=True).complete(ask())
    assert response.text == "Hello"
    [failure] = response.failures
    assert failure.retryable
    assert "the stream ended after 1 events without finishing the answer" in failure.reason


async def test_a_stream_event_that_is_not_json_fails_the_attempt(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(events=[chunk({"content": "Hel"}), "{not json"]))
    with pytest.raises(ModelError) as caught:
        await make_client(stream=True).complete(ask())
    assert caught.value.failures[0].reason.startswith("a stream event is not JSON")


async def test_an_unknown_finish_reason_fails_unless_accepted(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("odd", finish="banana"), completion("odd", finish="banana"))
    with pytest.raises(ModelError) as caught:
        await make_client().complete(ask())
    assert "unknown finish reason 'banana'" in caught.value.failures[0].reason
    accepted = await make_client(accept_finish_reasons=["banana"]).complete(ask())
    assert accepted.finish_reason == "banana"


async def test_tool_arguments_that_are_not_json_are_passed_on_as_written(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion(tool_calls=[tool_call("lookup", '{"order_id": "A1"')]))
    response = await make_client().complete(ask())
    [call] = response.tool_calls
    assert call.arguments == '{"order_id": "A1"'


async def test_an_error_object_in_a_200_reply_is_a_failure(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(json={"error": {"message": "upstream overloaded"}}), completion("ok"))
    response = await make_client().complete(ask())
    assert response.text == "ok"
    assert "upstream overloaded" in response.failures[0].reason


async def test_the_api_key_never_appears_in_a_failure(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(error(401, f"Incorrect API key provided: {API_KEY}."))
    with pytest.raises(ModelError) as caught:
        await make_client().complete(ask())
    assert API_KEY not in str(caught.value)
    assert (
        caught.value.failures[0].reason
        == "HTTP 401: Incorrect API key provided: [redacted:TEST_KEY]."
    )


async def test_a_missing_api_key_fails_at_once_naming_the_secret(
    server: ChatServer, make_client: MakeClient
) -> None:
    client = make_client(secrets=EnvSecretResolver(["TEST_KEY"], environ={}))
    with pytest.raises(ModelError) as caught:
        await client.complete(ask(fallbacks=("other",)))
    [failure] = caught.value.failures
    assert "secret 'TEST_KEY' has no value" in failure.reason
    assert server.requests == []


async def test_by_default_a_loopback_base_url_is_refused_before_connecting(
    server: ChatServer,
) -> None:
    async with OpenAIChatClient(
        server.base_url,
        secrets=EnvSecretResolver(["K"], environ={"K": API_KEY}),
        api_key_secret="K",
    ) as client:
        with pytest.raises(ModelError) as caught:
            await client.complete(ask())
    assert "refused before connecting" in str(caught.value)
    assert "allow_loopback=True" in str(caught.value)
    assert server.requests == []


def test_a_key_given_where_its_name_belongs_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="name of the secret") as caught:
        OpenAIChatClient(api_key_secret=API_KEY)
    assert API_KEY not in str(caught.value)


async def test_an_egress_of_your_own_is_used_and_left_open(server: ChatServer) -> None:
    secrets = EnvSecretResolver(["K"], environ={"K": API_KEY})
    async with Egress(EgressPolicy(allow_loopback=True), secrets=secrets) as egress:
        client = OpenAIChatClient(server.base_url, egress=egress, api_key_secret="K")
        server.reply(completion("one"), completion("two"))
        assert (await client.complete(ask())).text == "one"
        await client.aclose()  # not the client's to close
        assert (await client.complete(ask())).text == "two"
    with pytest.raises(ValueError, match="pass secrets to the Egress"):
        OpenAIChatClient(server.base_url, egress=egress, secrets=secrets)


# -- cost ----------------------------------------------------------------------------------------


async def test_a_cost_the_gateway_reports_wins(server: ChatServer, make_client: MakeClient) -> None:
    server.reply(completion("ok", usage_=usage(1000, 100, cost=0.00042)))
    client = make_client(prices=PriceTable({"gpt-test": {"input": 1, "output": 1}}))
    response = await client.complete(ask())
    assert response.cost is not None
    assert (response.cost.amount, response.cost.source) == (Decimal("0.00042"), "provider")


async def test_the_apps_prices_come_before_the_snapshot(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("ok", usage_=usage(1_000_000, 1_000_000, cached=400_000)))
    prices = PriceTable({"gpt-4o*": ModelPrice(input="2", output="8", cache_read="0.5")})
    response = await make_client(prices=prices, provider="openai").complete(ask("gpt-4o"))
    assert response.cost is not None
    assert response.cost.source == "override"
    assert response.cost.amount == Decimal("1.2") + Decimal("0.2") + Decimal("8")


async def test_the_snapshot_prices_a_known_provider_and_model(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("ok", usage_=usage(2000, 500), model="gpt-4o-2024-08-06"))
    response = await make_client(provider="openai").complete(ask("gpt-4o"))
    snapshot = PriceTable.snapshot()
    expected = snapshot.cost("gpt-4o-2024-08-06", Usage(input=2000, output=500), provider="openai")
    assert response.model == "gpt-4o-2024-08-06"
    assert expected is not None and expected.amount > 0
    assert response.cost == expected
    assert response.cost.source == "snapshot"
    assert response.cost.as_of == snapshot.as_of


async def test_an_unknown_server_or_model_is_unpriced_never_zero(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("ok", usage_=usage()), completion("ok", usage_=usage()))
    unknown_server = await make_client().complete(ask("gpt-4o"))
    unknown_model = await make_client(provider="openai").complete(ask("no-such-model-xyz"))
    assert unknown_server.cost is None
    assert unknown_model.cost is None

"""The OpenAI wire format without a network: usage mapping, stream reading, retry timing."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psych_runtime import Cost, Usage
from psych_runtime.model import cost_from_openai, usage_from_openai
from psych_runtime.model._openai_wire import BadReply, StreamReader, parse_reply
from psych_runtime.model._retry import Backoff, retry_after, retryable_status

# -- usage ---------------------------------------------------------------------------------------


def test_plain_openai_usage() -> None:
    assert usage_from_openai({"prompt_tokens": 12, "completion_tokens": 3}) == Usage(
        input=12, output=3
    )


def test_cached_and_reasoning_tokens_are_split_out() -> None:
    raw = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 256},
    }
    assert usage_from_openai(raw) == Usage(input=86, output=300, cache_read=1920, reasoning=256)


def test_a_gateways_cache_writes_are_split_by_lifetime() -> None:
    raw = {
        "prompt_tokens": 5000,
        "completion_tokens": 10,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    assert usage_from_openai(raw) == Usage(
        input=1000, output=10, cache_read=1000, cache_write=1000, cache_write_1h=2000
    )
    openrouter = {
        "prompt_tokens": 100,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 60},
    }
    assert usage_from_openai(openrouter) == Usage(input=30, output=1, cache_read=10, cache_write=60)


def test_input_never_goes_below_zero_when_a_server_counts_oddly() -> None:
    raw = {"prompt_tokens": 10, "completion_tokens": 1, "cache_read_input_tokens": 50}
    usage = usage_from_openai(raw)
    assert usage == Usage(input=0, output=1, cache_read=50)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        {},
        [],
        {"total_tokens": 10},
        {"prompt_tokens": 10},
        {"prompt_tokens": -1, "completion_tokens": 2},
        {"prompt_tokens": "10", "completion_tokens": 2},
        {"prompt_tokens": True, "completion_tokens": 2},
    ],
)
def test_usage_that_says_nothing_usable_is_none_never_zero(raw: Any) -> None:
    assert usage_from_openai(raw) is None


@given(
    prompt=st.integers(0, 10**7),
    cached=st.integers(0, 10**7),
    written=st.integers(0, 10**7),
    hour=st.integers(0, 10**7),
    completion=st.integers(0, 10**7),
)
def test_no_prompt_token_is_counted_twice(
    prompt: int, cached: int, written: int, hour: int, completion: int
) -> None:
    raw = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "cache_creation_input_tokens": written,
        "cache_creation": {"ephemeral_1h_input_tokens": hour},
    }
    usage = usage_from_openai(raw)
    assert usage is not None
    assert usage.cache_write + usage.cache_write_1h == written
    if cached + written <= prompt:
        assert usage.input + usage.cache_read + usage.cache_write + usage.cache_write_1h == prompt


def test_a_gateway_cost_is_kept_exactly() -> None:
    assert cost_from_openai({"cost": 0.000123}) == Cost(
        amount=Decimal("0.000123"), source="provider"
    )
    for raw in ({"cost": -1}, {"cost": "NaN"}, {"cost": None}, {"cost": True}, {}, None):
        assert cost_from_openai(raw) is None


# -- whole replies and streams -------------------------------------------------------------------


def test_a_whole_reply_with_content_parts_and_object_arguments() -> None:
    reply = parse_reply(
        {
            "choices": [
                {
                    "message": {
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                        "tool_calls": [
                            {"id": "", "function": {"name": "f", "arguments": {"x": 1}}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        },
        "asked",
    )
    assert reply.text == "ab"
    assert reply.model == "asked"
    [call] = reply.tool_calls
    assert (call.name, call.arguments, call.provider_call_id) == ("f", '{"x": 1}', None)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([], "the reply is a JSON list, not an object"),
        ({"choices": []}, "the reply has no choices"),
        ({"choices": [{"finish_reason": "stop"}]}, "has no message"),
        ({"choices": [{"message": {"tool_calls": {"a": 1}}}]}, "tool_calls is not a list"),
        ({"choices": [{"message": {}, "finish_reason": 7}]}, "unknown finish reason 7"),
    ],
)
def test_replies_that_cannot_be_used_say_why(data: Any, reason: str) -> None:
    with pytest.raises(BadReply, match=reason):
        parse_reply(data, "m")


def feed(reader: StreamReader, *lines: str) -> None:
    for line in lines:
        reader.line(line)


def test_a_stream_reads_multi_line_events_and_ignores_other_fields() -> None:
    reader = StreamReader("m")
    feed(
        reader,
        "event: message",
        "id: 1",
        'data: {"choices": [{"delta": {"content": "hi"},',
        'data:  "finish_reason": "stop"}], "model": "served"}',
        "",
        "data: [DONE]",
        "",
    )
    reply = reader.reply()
    assert (reply.text, reply.finish_reason, reply.model) == ("hi", "stop", "served")
    assert reader.done


def test_a_stream_that_finished_but_never_said_done_is_accepted() -> None:
    reader = StreamReader("m")
    feed(reader, 'data: {"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]}', "")
    assert reader.reply().text == "ok"


def test_a_stream_cut_before_its_finish_is_a_retryable_bad_reply() -> None:
    reader = StreamReader("m")
    feed(reader, 'data: {"choices": [{"delta": {"content": "o"}}]}', "")
    with pytest.raises(BadReply) as bad:
        reader.reply()
    assert bad.value.retryable


def test_an_error_event_in_a_stream_is_a_bad_reply() -> None:
    reader = StreamReader("m")
    with pytest.raises(BadReply, match="the server reported an error: overloaded"):
        feed(reader, 'data: {"error": {"message": "overloaded"}}', "")


def test_a_refusal_stands_as_the_text() -> None:
    reader = StreamReader("m")
    feed(
        reader,
        'data: {"choices": [{"delta": {"refusal": "I can"}}]}',
        "",
        'data: {"choices": [{"delta": {"refusal": "not."}, "finish_reason": "stop"}]}',
        "",
    )
    assert reader.reply().text == "I cannot."


# -- retry timing --------------------------------------------------------------------------------


def test_which_statuses_are_retried() -> None:
    assert [s for s in (400, 401, 404, 408, 409, 422, 429, 500, 503) if retryable_status(s)] == [
        408,
        409,
        429,
        500,
        503,
    ]


def test_retry_after_in_seconds_milliseconds_and_as_a_date() -> None:
    now = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    assert retry_after({"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, now) == 30.0
    assert retry_after({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, now) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


@given(retry=st.integers(1, 30))
def test_backoff_grows_with_jitter_and_stays_under_its_cap(retry: int) -> None:
    backoff = Backoff(initial=0.5, maximum=8.0)
    cap = min(0.5 * 2 ** (retry - 1), 8.0)
    delay = backoff.delay(retry)
    assert delay is not None
    assert cap / 2 <= delay <= cap


def test_a_gateways_word_from_the_provider_behind_it_is_honoured() -> None:
    # LiteLLM passes the upstream provider's headers on with this prefix, and only so.
    now = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    assert retry_after({"llm_provider-retry-after": "7"}) == 7.0
    assert retry_after({"llm_provider-retry-after-ms": "250"}) == 0.25
    assert retry_after({"llm_provider-retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, now) == 30
    # The gateway's own word comes first, then the provider's; nonsense is not a wait.
    assert retry_after({"retry-after": "2", "llm_provider-retry-after": "30"}) == 2.0
    assert retry_after({"retry-after": "soon", "llm_provider-retry-after": "3"}) == 3.0
    assert retry_after({"llm_provider-retry-after": "nan"}) is None
    # ... and max_retry_after holds for it as for any other.
    assert (
        Backoff(max_retry_after=5).delay(1, retry_after({"llm_provider-retry-after": "60"})) is None
    )


def test_a_server_asked_wait_is_honoured_up_to_the_limit() -> None:
    backoff = Backoff(max_retry_after=60)
    assert backoff.delay(1, retry_after=42.0) == 42.0
    assert backoff.delay(1, retry_after=61.0) is None

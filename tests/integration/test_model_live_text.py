"""`OpenAIChatClient` handing out its answer's text while it streams (``on_text``), against a
scripted OpenAI-compatible server on loopback: the response is the same as without it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from psych_runtime import ModelRef, Usage
from psych_runtime.ports import ModelRequest, UserMessage, streams_text
from tests.integration._chat_server import (
    ChatServer,
    MakeClient,
    Scripted,
    chunk,
    completion,
    usage,
    usage_chunk,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def ask() -> ModelRequest:
    return ModelRequest(
        run_id="run-1",
        model=ModelRef(model="gpt-test"),
        instructions="Be brief.",
        messages=(UserMessage("hello"),),
    )


class Sink:
    def __init__(self) -> None:
        self.pieces: list[tuple[str, int]] = []

    def __call__(self, text: str, offset: int) -> None:
        self.pieces.append((text, offset))


def test_the_openai_client_says_it_streams_text(make_client: MakeClient) -> None:
    assert streams_text(make_client())


async def test_text_pieces_arrive_with_offsets_and_the_response_is_whole(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        Scripted(
            events=[
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                ": keep-alive",
                chunk({"content": "lo, "}),
                chunk({"content": "world"}, finish="stop"),
                usage_chunk(usage(12, 4)),
            ]
        )
    )
    sink = Sink()
    # A client made without stream=True streams when asked for live text.
    response = await make_client().complete(ask(), on_text=sink)
    assert sink.pieces == [("Hel", 0), ("lo, ", 3), ("world", 7)]
    assert response.text == "Hello, world"
    assert response.usage == Usage(input=12, output=4)
    assert response.usage_source == "provider"
    assert response.finish_reason == "stop"
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_tool_call_deltas_build_the_calls_and_only_text_is_handed_out(
    server: ChatServer, make_client: MakeClient
) -> None:
    def piece(index: int, **function: str) -> dict[str, Any]:
        return {"index": index, "function": function}

    server.reply(
        Scripted(
            events=[
                chunk({"role": "assistant", "content": "Let me look."}),
                chunk({"tool_calls": [{**piece(0, name="lookup", arguments=""), "id": "c_a"}]}),
                chunk({"tool_calls": [piece(0, arguments='{"order')]}),
                chunk({"tool_calls": [{**piece(1, name="refund", arguments="{"), "id": "c_b"}]}),
                chunk({"tool_calls": [piece(0, arguments='_id": "A1"}')]}),
                chunk({"tool_calls": [piece(1, arguments='"amount": 5}')]}),
                chunk(finish="tool_calls"),
                usage_chunk(usage(40, 20)),
            ]
        )
    )
    sink = Sink()
    response = await make_client().complete(ask(), on_text=sink)
    assert sink.pieces == [("Let me look.", 0)]
    assert response.text == "Let me look."
    assert [(c.name, json.loads(c.arguments), c.provider_call_id) for c in response.tool_calls] == [
        ("lookup", {"order_id": "A1"}, "c_a"),
        ("refund", {"amount": 5}, "c_b"),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(input=40, output=20)


async def test_a_stream_without_usage_gives_usage_none_never_zero(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(events=[chunk({"content": "Hi"}), chunk(finish="stop")]))
    sink = Sink()
    response = await make_client().complete(ask(), on_text=sink)
    assert sink.pieces == [("Hi", 0)]
    assert response.text == "Hi"
    assert response.usage is None
    assert response.usage_source == "missing"
    assert response.cost is None


async def test_a_retry_after_a_cut_stream_starts_the_text_again_at_offset_zero(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(
        Scripted(events=[chunk({"content": "Half an ans"})], abort=True),
        Scripted(events=[chunk({"content": "Whole"}), chunk({"content": "."}, finish="stop")]),
    )
    sink = Sink()
    response = await make_client().complete(ask(), on_text=sink)
    assert sink.pieces == [("Half an ans", 0), ("Whole", 0), (".", 5)]
    assert response.text == "Whole."
    assert len(response.failures) == 1 and response.failures[0].retryable


async def test_a_sink_that_raises_does_not_break_the_answer(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(Scripted(events=[chunk({"content": "A"}), chunk({"content": "B"}, finish="stop")]))
    calls: list[str] = []

    def broken(text: str, offset: int) -> None:
        calls.append(text)
        raise RuntimeError("screen gone")

    response = await make_client().complete(ask(), on_text=broken)
    assert response.text == "AB"
    assert calls == ["A"]  # not called again once it raised
    assert response.failures == ()


async def test_without_on_text_a_non_streaming_client_sends_no_stream(
    server: ChatServer, make_client: MakeClient
) -> None:
    server.reply(completion("Whole answer", usage_=usage(3, 2)))
    response = await make_client().complete(ask())
    assert response.text == "Whole answer"
    assert "stream" not in server.requests[0].body

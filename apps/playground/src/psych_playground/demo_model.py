"""`DemoModel`: an offline, deterministic model client, so the playground runs with no API key.

It implements the `ModelClient` port (and `TextStreamingModel`: it streams its answers word by
word, after a pause like a real model's time to its first token). Like a real model it decides
from the request alone, so any worker can serve any turn of any run, and a run resumed after a
crash gets the same answer. It reads the last user message and the tools the request offers:

- ``repeat N TOOL``: calls TOOL once per turn, N turns in a row, then answers
  ``Called TOOL N times.`` (arguments: the first JSON object in the message, else a value of
  the right type for each required parameter);
- a message that names an offered tool: calls the first one named, with the first JSON object
  in the message as its arguments (else ``{}``);
- ``ask me``, when the spec lets the agent ask the user (``ask_user``): asks a yes/no question;
- anything else: ``You said: <message>``.

After a tool's result it answers ``<tool> returned: <result>`` (the result cut at 500 chars).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from psych_runtime import Usage
from psych_runtime.ports import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    TextSink,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

ASK_TOOL = "ask_user"
"""The built-in tool an `AgentSpec` with ``ask_user=True`` offers the model."""

QUESTION = "Shall I go ahead?"
RESULT_CUT = 500
THINKING_WORDS = 30
"""Before its first word the demo model pauses as long as this many words take (0.9 s at the
default 30 ms a word), as a real model takes a moment to its first token. A chat opens the new
run's live text stream just after sending the message; without the pause the first words would
be out before it listens, and a stream that misses the start of an answer shows it only once it
is finished. 10 words (0.3 s) were once too few on a 2-core host busy with the browser tests:
the chat test saw the answer but none of its live words."""

_REPEAT = re.compile(r"\s*repeat\s+(\d+)\s+([A-Za-z0-9_\-]+)", re.IGNORECASE)
_WORDS = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class DemoTurn:
    """What the demo model answers: text, or one tool call (name and arguments)."""

    text: str | None = None
    tool: str | None = None
    arguments: JsonValue = None


def next_turn(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> DemoTurn:
    """The demo model's answer to a conversation, given the tools offered. Pure."""
    offered = {tool.name: tool for tool in tools}
    asked = _last_user_message(messages)
    if asked is None:
        return DemoTurn(text="You said nothing.")
    position, text = asked
    results = [m for m in messages[position + 1 :] if isinstance(m, ToolResultMessage)]
    repeat = _REPEAT.match(text)
    if repeat is not None and repeat.group(2) in offered:
        times, name = int(repeat.group(1)), repeat.group(2)
        if sum(result.name == name for result in results) < times:
            arguments = first_json_object(text)
            if arguments is None:
                arguments = placeholder_arguments(offered[name])
            return DemoTurn(tool=name, arguments=arguments)
        return DemoTurn(text=f"Called {name} {times} times.")
    if results:
        last = results[-1]
        return DemoTurn(text=f"{last.name} returned: {last.content[:RESULT_CUT]}")
    named = first_named_tool(text, [name for name in offered if name != ASK_TOOL])
    if named is not None:
        arguments = first_json_object(text)
        return DemoTurn(tool=named, arguments={} if arguments is None else arguments)
    if "ask me" in text.lower() and ASK_TOOL in offered:
        return DemoTurn(tool=ASK_TOOL, arguments={"question": QUESTION, "options": ["yes", "no"]})
    return DemoTurn(text=f"You said: {text}")


def first_named_tool(text: str, names: Sequence[str]) -> str | None:
    """The tool among `names` that `text` names first (as a whole word), or None."""
    found: list[tuple[int, str]] = []
    for name in names:
        match = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        if match is not None:
            found.append((match.start(), name))
    return min(found)[1] if found else None


def first_json_object(text: str) -> dict[str, JsonValue] | None:
    """The first JSON object written in `text`, or None."""
    decoder = json.JSONDecoder()
    for start in (index for index, char in enumerate(text) if char == "{"):
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def placeholder_arguments(tool: ToolDefinition) -> dict[str, JsonValue]:
    """A value for each required parameter of `tool`: its default, else one of its type."""
    properties = tool.parameters.get("properties")
    required = tool.parameters.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    arguments: dict[str, JsonValue] = {}
    for name in required:
        schema = properties.get(name) if isinstance(name, str) else None
        if isinstance(name, str) and isinstance(schema, dict):
            arguments[name] = _placeholder(schema)
    return arguments


def _placeholder(schema: dict[str, JsonValue]) -> JsonValue:
    if "default" in schema:
        return schema["default"]
    kinds: dict[str, JsonValue] = {
        "string": "demo",
        "number": 0,
        "integer": 0,
        "boolean": False,
        "array": [],
        "object": {},
    }
    kind = schema.get("type")
    return kinds.get(kind) if isinstance(kind, str) else None


def _last_user_message(messages: Sequence[Message]) -> tuple[int, str] | None:
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, UserMessage):
            return position, message.text
    return None


class DemoModel:
    """The demo model as a `ModelClient` that streams its text (`TextStreamingModel`).

    Args:
        delay: seconds between streamed words, so a chat screen shows them arrive.
    """

    def __init__(self, *, delay: float = 0.03) -> None:
        self.delay = delay

    async def complete(
        self, request: ModelRequest, *, on_text: TextSink | None = None
    ) -> ModelResponse:
        """One turn of the demo model for `request`, its text streamed to `on_text`."""
        turn = next_turn(request.messages, request.tools)
        if turn.text and on_text is not None:
            await asyncio.sleep(self.delay * THINKING_WORDS)
            offset = 0
            for word in _WORDS.findall(turn.text):
                on_text(word, offset)
                offset += len(word)
                await asyncio.sleep(self.delay)
        calls: tuple[ModelToolCall, ...] = ()
        if turn.tool is not None:
            calls = (ModelToolCall(name=turn.tool, arguments=json.dumps(turn.arguments)),)
        written = turn.text or "".join(call.arguments for call in calls)
        read = sum(len(_text_of(message)) for message in request.messages)
        return ModelResponse(
            model="demo",
            text=turn.text,
            tool_calls=calls,
            # Tokens are not counted by a demo: about four characters a token, said so.
            usage=Usage(input=read // 4, output=len(written) // 4),
            usage_source="estimated",
            finish_reason="tool_calls" if calls else "stop",
        )


def _text_of(message: Message) -> str:
    if isinstance(message, ToolResultMessage):
        return message.content
    return message.text or ""

"""The OpenAI chat completions wire format: requests out, answers (whole or streamed) in.

Nothing here does IO. A reply that cannot be understood raises `BadReply` with a short,
readable reason; the client records it as a failed attempt.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from psych_core import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelToolCall,
    TextSink,
    ToolResultMessage,
    UserMessage,
)

log = logging.getLogger("psych_runtime.model")

FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
"""The finish reasons of the OpenAI API; each means the answer is whole (or cut off, saying so)."""

_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class BadReply(Exception):
    """The server answered, but not with something this client can use.

    Attributes:
        reason: what was wrong, in a few words.
        retryable: whether asking again may help (a stream cut off may; nonsense will not).
    """

    def __init__(self, reason: str, *, retryable: bool = False) -> None:
        self.reason = reason
        self.retryable = retryable
        super().__init__(reason)


@dataclass(frozen=True, slots=True)
class Reply:
    """One understood answer, before usage and cost are worked out."""

    model: str
    text: str | None
    tool_calls: tuple[ModelToolCall, ...]
    finish_reason: str | None
    usage: Any


def request_body(request: ModelRequest, model: str, *, stream: bool) -> dict[str, JsonValue]:
    """The JSON body of a chat completions request for `request`, sent to `model`."""
    messages: list[JsonValue] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend(_message(message) for message in request.messages)
    body: dict[str, JsonValue] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]
    if request.output_schema is not None:
        title = request.output_schema.get("title")
        name = title if isinstance(title, str) and _SCHEMA_NAME.match(title) else "output"
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": request.output_schema},
        }
    if request.model.temperature is not None:
        body["temperature"] = request.model.temperature
    if request.model.max_output_tokens is not None:
        body["max_completion_tokens"] = request.model.max_output_tokens
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _message(message: Message) -> JsonValue:
    match message:
        case UserMessage(text=text):
            return {"role": "user", "content": text}
        case AssistantMessage(text=text, tool_calls=calls):
            out: dict[str, JsonValue] = {"role": "assistant", "content": text}
            if calls:
                # Our call ids, not the provider's: they are unique within the run, and the
                # tool results below answer them.
                out["tool_calls"] = [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in calls
                ]
            return out
        case ToolResultMessage(call_id=call_id, content=content):
            return {"role": "tool", "tool_call_id": call_id, "content": content}


def parse_reply(data: Any, asked: str, accept: Collection[str] = FINISH_REASONS) -> Reply:
    """The answer in a whole (non-streamed) chat completion."""
    if not isinstance(data, Mapping):
        raise BadReply(f"the reply is a JSON {type(data).__name__}, not an object")
    _raise_error(data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise BadReply("the reply has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise BadReply("the reply's first choice has no message")
    calls_raw = message.get("tool_calls") or []
    if not isinstance(calls_raw, list):
        raise BadReply("the reply's tool_calls is not a list")
    calls = tuple(_tool_call(raw, index) for index, raw in enumerate(calls_raw))
    finish = _finish_reason(choice.get("finish_reason"), accept)
    return Reply(
        model=_model_name(data, asked),
        text=_text(message.get("content"), message.get("refusal")),
        tool_calls=calls,
        finish_reason=finish,
        usage=data.get("usage"),
    )


def _tool_call(raw: Any, index: int) -> ModelToolCall:
    if not isinstance(raw, Mapping):
        raise BadReply(f"tool call {index} of the reply is not an object")
    function = raw.get("function")
    function = function if isinstance(function, Mapping) else {}
    return ModelToolCall(
        name=str(function.get("name") or ""),
        arguments=_arguments(function.get("arguments")),
        provider_call_id=str(raw["id"]) if raw.get("id") else None,
    )


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value  # passed on as written, even when it is not JSON: the runtime answers it
    return json.dumps(value)  # some servers send the object itself


def _text(content: Any, refusal: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "".join(p for p in parts if isinstance(p, str)) or None
    if isinstance(refusal, str) and refusal:
        return refusal
    return None


def _finish_reason(value: Any, accept: Collection[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in accept:
        known = ", ".join(sorted(accept))
        raise BadReply(
            f"unknown finish reason {value!r} (known: {known}); if this server's reason "
            "means a whole answer, pass it to OpenAIChatClient(accept_finish_reasons=...)"
        )
    return value


def _model_name(data: Mapping[str, Any], asked: str) -> str:
    model = data.get("model")
    return model if isinstance(model, str) and model else asked


def _raise_error(data: Mapping[str, Any]) -> None:
    error = data.get("error")
    if error is None:
        return
    message = error.get("message") if isinstance(error, Mapping) else error
    raise BadReply(f"the server reported an error: {short(str(message))}", retryable=True)


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class _PartialCall:
    provider_call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamReader:
    """Builds one answer from the server-sent events of a streamed chat completion.

    Feed it every line of the body (`line`), then call `reply`. Tool calls arrive in pieces
    keyed by their index; their arguments are joined as they came. Given `on_text`, each
    piece of the answer's text is handed to it as it is read, with its offset in the text.
    """

    def __init__(
        self,
        asked: str,
        accept: Collection[str] = FINISH_REASONS,
        on_text: TextSink | None = None,
    ) -> None:
        self._on_text = on_text
        self._offset = 0
        self._asked = asked
        self._accept = accept
        self._data: list[str] = []
        self._model: str | None = None
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._done = False
        self._events = 0

    @property
    def done(self) -> bool:
        """Whether the ``[DONE]`` event came."""
        return self._done

    def line(self, line: str) -> None:
        """One line of the event stream."""
        if line == "":
            self._dispatch()
        elif line.startswith(":"):
            return  # a comment (keep-alive)
        elif line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
        # Other fields (event:, id:, retry:) carry nothing this client needs.

    def reply(self) -> Reply:
        """The whole answer, once the stream has ended. Raises `BadReply` when it was cut."""
        self._dispatch()
        if self._finish is None and not self._done:
            raise BadReply(
                f"the stream ended after {self._events} events without finishing the answer "
                "(connection cut?)",
                retryable=True,
            )
        if self._finish is None and not (self._text or self._calls):
            raise BadReply("the stream ended without an answer")
        finish = _finish_reason(self._finish, self._accept)
        calls = tuple(
            ModelToolCall(
                name=call.name,
                arguments="".join(call.arguments),
                provider_call_id=call.provider_call_id,
            )
            for _, call in sorted(self._calls.items())
        )
        text = "".join(self._text) if self._text else ("".join(self._refusal) or None)
        return Reply(
            model=self._model or self._asked,
            text=text,
            tool_calls=calls,
            finish_reason=finish,
            usage=self._usage,
        )

    def _dispatch(self) -> None:
        if not self._data:
            return
        payload = "\n".join(self._data)
        self._data = []
        if payload.strip() == "[DONE]":
            self._done = True
            return
        try:
            chunk = json.loads(payload)
        except ValueError as exc:
            raise BadReply(f"a stream event is not JSON ({exc}): {short(payload, 120)}") from None
        if not isinstance(chunk, Mapping):
            raise BadReply(f"a stream event is a JSON {type(chunk).__name__}, not an object")
        self._events += 1
        _raise_error(chunk)
        if self._model is None and isinstance(chunk.get("model"), str) and chunk["model"]:
            self._model = chunk["model"]
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise BadReply("a stream event's choices is not a list")
        for choice in choices:
            if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: Mapping[str, Any]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, Mapping):
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
                self._tell(delta["content"])
            if isinstance(delta.get("refusal"), str):
                self._refusal.append(delta["refusal"])
            pieces = delta.get("tool_calls") or []
            if not isinstance(pieces, list):
                raise BadReply("a stream event's tool_calls is not a list")
            for position, piece in enumerate(pieces):
                self._tool_piece(piece, position)
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]

    def _tell(self, text: str) -> None:
        if self._on_text is None or not text:
            return
        try:
            self._on_text(text, self._offset)
        except Exception:  # the caller's sink: it must not break the answer
            log.exception("an on_text callback raised; the answer is read on without it")
            self._on_text = None
        self._offset += len(text)

    def _tool_piece(self, piece: Any, position: int) -> None:
        if not isinstance(piece, Mapping):
            raise BadReply("a streamed tool call is not an object")
        index = piece.get("index", position)
        if not isinstance(index, int):
            raise BadReply(f"a streamed tool call has index {index!r}, not a number")
        call = self._calls.setdefault(index, _PartialCall())
        if piece.get("id"):
            call.provider_call_id = str(piece["id"])
        function = piece.get("function")
        if isinstance(function, Mapping):
            if function.get("name") and not call.name:
                call.name = str(function["name"])
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(arguments)
            elif arguments is not None:
                call.arguments.append(json.dumps(arguments))

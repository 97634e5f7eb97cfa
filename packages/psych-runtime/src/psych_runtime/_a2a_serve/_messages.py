"""What an A2A message says, as Psych takes it: a run's input, an answer, a user message."""

from __future__ import annotations

import json

from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import Message
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from pydantic import JsonValue


def message_payload(message: Message) -> JsonValue:
    """The message's content: its text parts joined by newlines (data parts added as JSON
    text), or, for a message of data parts only, their JSON value (one part's, or a list).

    Data parts travel as ``google.protobuf.Value``, which keeps every number as a double:
    whole numbers come back as floats (``4`` as ``4.0``).

    Raises:
        InvalidParamsError: the message has no text or data part.
        ContentTypeNotSupportedError: it carries a file (raw bytes or a URL): Psych's runs
            take text and JSON only.
    """
    if any(part.HasField("raw") or part.HasField("url") for part in message.parts):
        raise ContentTypeNotSupportedError(
            message="this agent takes text and data parts only, not files (raw or url parts)"
        )
    texts = get_text_parts(message.parts)
    data: list[JsonValue] = get_data_parts(message.parts)
    if texts:
        return "\n".join([*texts, *(json.dumps(value) for value in data)])
    if len(data) == 1:
        return data[0]
    if data:
        return data
    raise InvalidParamsError(message="the message has no text or data part to give the agent")


def message_text(message: Message) -> str:
    """The message's content as text: JSON text for data."""
    payload = message_payload(message)
    return payload if isinstance(payload, str) else json.dumps(payload)

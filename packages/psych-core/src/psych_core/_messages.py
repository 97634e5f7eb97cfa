"""The conversation a model sees: derived from the log by the reducer, never stored twice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from psych_core._quick_init import quick_init


class ToolCall(BaseModel):
    """One tool call a model asked for.

    Attributes:
        call_id: the runtime's name for the call, ``"{seq}.{i}"``: the seq of the
            `ModelCallFinished` that asked for it and its index there.
        name: the tool's name.
        arguments: the arguments as the model wrote them (JSON text, possibly invalid).
        provider_call_id: the provider's own id, kept for reference only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    call_id: str
    name: str
    arguments: str
    provider_call_id: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class UserMessage:
    """A message from the person the agent is serving."""

    text: str
    role: Literal["user"] = "user"


@quick_init
@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model said, and the tool calls it asked for."""

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"


@quick_init
@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The answer to one tool call, as the model will read it."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolResultMessage
"""One entry of the conversation sent to the model."""

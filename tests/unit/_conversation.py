"""What the conversation tests share: the messages a model was sent, as (role, text) pairs."""

from __future__ import annotations

from collections.abc import Iterable

from psych_runtime.ports import AssistantMessage, Message, ToolResultMessage, UserMessage


def texts(messages: Iterable[Message]) -> list[tuple[str, str | None]]:
    """Each message as ``(role, text)``: a tool result's text is its content."""
    out: list[tuple[str, str | None]] = []
    for message in messages:
        match message:
            case UserMessage(text=text):
                out.append(("user", text))
            case AssistantMessage(text=text):
                out.append(("assistant", text))
            case ToolResultMessage(content=content):
                out.append(("tool", content))
    return out


async def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"

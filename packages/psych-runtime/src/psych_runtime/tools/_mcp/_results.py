"""An MCP tool result as Psych records it, and what a call's failure becomes."""

from __future__ import annotations

from typing import Any

from mcp_types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)
from pydantic import JsonValue


def recorded(result: CallToolResult) -> JsonValue:
    """The call's result for the log and the model.

    Structured content with only text beside it is the structured content (MCP asks servers
    to repeat it as text, for clients that read no structure). One text block and nothing
    else is that text. Otherwise an object: ``content``, the blocks (text; images and audio
    as base64 with their type; embedded resources with their URI and text or base64 blob;
    resource links), and ``structured``, the structured content, when the server gave one.
    A result too large for a record goes to the `BlobStore` as every large record does
    (`OffloadingStore`).
    """
    blocks = [_block(block) for block in result.content]
    structured = result.structured_content
    only_text = all(block.get("type") == "text" for block in blocks)
    if structured is not None and only_text:
        kept: dict[str, JsonValue] = dict(structured)
        return kept
    if structured is None and len(blocks) == 1 and only_text:
        return blocks[0]["text"]
    content: list[JsonValue] = list(blocks)
    answer: dict[str, JsonValue] = {"content": content}
    if structured is not None:
        answer["structured"] = structured
    return answer


def error_text(result: CallToolResult) -> str:
    """What a result the server marked ``isError`` says, as the model reads it."""
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    return "\n".join(texts) or "the tool reported an error and said nothing more"


def _block(block: Any) -> dict[str, JsonValue]:
    match block:
        case TextContent():
            return {"type": "text", "text": block.text}
        case ImageContent() | AudioContent():
            return {"type": block.type, "mime_type": block.mime_type, "data": block.data}
        case EmbeddedResource():
            resource = block.resource.model_dump(mode="json", by_alias=True, exclude_none=True)
            return {"type": "resource", "resource": resource}
        case ResourceLink():
            link: dict[str, JsonValue] = {"type": "resource_link", "uri": str(block.uri)}
            link["name"] = block.name
            if block.mime_type is not None:
                link["mime_type"] = block.mime_type
            return link
        case _:
            return {"type": str(getattr(block, "type", "unknown"))}

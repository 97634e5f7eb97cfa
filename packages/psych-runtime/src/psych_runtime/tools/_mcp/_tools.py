"""An MCP server's tools as Psych tools: one executor per tool, or three discovery tools for a
deferred catalogue, and what each call's annotations say about retrying and approval."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mcp_types import Tool
from pydantic import JsonValue

from psych_core import (
    ApprovalRule,
    McpServer,
    ToolDefinition,
    schema_problems,
    validation_errors,
)
from psych_runtime.tools._code import InvalidArguments, ToolOutcomeUnknown, ToolRaised
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import json_object
from psych_runtime.tools._mcp._pool import (
    McpConnectionLost,
    McpRequestFailed,
    McpSession,
    McpUnreachable,
)
from psych_runtime.tools._mcp._results import error_text, recorded

SEARCH_LIMIT = 20
"""The most tools one search of a deferred catalogue returns."""


def safe_to_retry(tool: Tool) -> bool:
    """Whether running the call twice does no harm, by the tool's annotations: read-only or
    idempotent. MCP's defaults make an unannotated tool neither."""
    notes = tool.annotations
    return notes is not None and bool(notes.read_only_hint or notes.idempotent_hint)


def destructive(tool: Tool) -> bool:
    """Whether the tool may destroy: MCP's defaults say so unless it is marked read-only or
    marked non-destructive."""
    notes = tool.annotations
    if notes is None:
        return True
    return not notes.read_only_hint and notes.destructive_hint is not False


def approval_rule(ref: McpServer, tool: Tool) -> ApprovalRule:
    """When a call of `tool` needs a person's approval: the server's rule, and always for a
    destructive tool when the reference asks for that."""
    if ref.approve_destructive and destructive(tool):
        return True
    return ref.requires_approval


class McpToolCall:
    """Runs one tool of an MCP server in the session opened for the run's scope."""

    def __init__(self, ref: McpServer, tool: Tool, session: McpSession) -> None:
        self.ref = ref
        self.tool = tool
        self.session = session
        self.name = ref.tool_name(tool.name)

    def definition(self, description: str | None = None) -> ToolDefinition:
        """The tool as the server describes it, under its Psych name."""
        text = description or self.tool.description or self.tool.title or self.tool.name
        return ToolDefinition(self.name, text, dict(self.tool.input_schema))

    def validate(self, arguments: str) -> dict[str, Any]:
        """The arguments, parsed and checked against the tool's input schema."""
        return checked(self.tool, json_object(arguments))

    def safe_to_retry(self, arguments: Mapping[str, Any]) -> bool:
        """What the tool's annotations say (recorded when the call starts)."""
        return safe_to_retry(self.tool)

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """When the call needs approval."""
        return approval_rule(self.ref, self.tool)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue:
        """Call the tool at the server."""
        return await call(self.session, self.ref, self.tool, arguments)


async def call(
    session: McpSession, ref: McpServer, tool: Tool, arguments: dict[str, Any]
) -> JsonValue:
    """Call `tool` and turn what happens into a result, a failure or an unknown outcome."""
    where = f"MCP server {ref.name!r} tool {tool.name!r}"
    try:
        result = await session.call(tool.name, arguments)
    except McpRequestFailed as exc:
        raise ToolRaised(f"{where} refused the call: {exc}") from None
    except (McpConnectionLost, McpUnreachable) as exc:
        message = f"{where}: the connection broke during the call ({exc})"
        if safe_to_retry(tool):
            raise ToolRaised(message) from None
        raise ToolOutcomeUnknown(f"{message}; it may have taken effect") from None
    if result.is_error:
        raise ToolRaised(error_text(result))
    return recorded(result)


def checked(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` checked against `tool`'s input schema, when Psych's validator covers all of
    the schema; otherwise the server is left to check them."""
    schema = dict(tool.input_schema)
    if not schema_problems(schema):
        problems = validation_errors(schema, arguments)
        if problems:
            raise InvalidArguments("; ".join(problems))
    return arguments


class Catalogue:
    """A deferred server's tools this run may use this turn (narrowed), by Psych name."""

    def __init__(self, ref: McpServer, tools: Mapping[str, Tool], session: McpSession) -> None:
        self.ref = ref
        self.tools = dict(tools)
        self.session = session

    def find(self, name: str) -> Tool:
        """The tool named `name` (its Psych name, or its name at the server)."""
        tool = self.tools.get(name) or self.tools.get(self.ref.tool_name(name))
        if tool is None:
            raise InvalidArguments(
                f"there is no tool {name!r} in MCP server {self.ref.name!r} that this run may "
                f"use; find one with {self.ref.tool_name('search')}"
            )
        return tool


_WORD = re.compile(r"[A-Za-z0-9]+")


class _Discovery:
    """What search and describe share: they read the catalogue only."""

    def safe_to_retry(self, arguments: Mapping[str, Any]) -> bool:
        """Reading the catalogue is safe to repeat."""
        return True

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """Reading the catalogue never needs approval."""
        return False


class DeferredSearch(_Discovery):
    """``{server}__search``: the tools whose name or description match the query's words."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.name = catalogue.ref.tool_name("search")

    def definition(self, description: str | None = None) -> ToolDefinition:
        """Search by words; returns names and one-line descriptions."""
        server = self.catalogue.ref.name
        text = description or (
            f"Search the {len(self.catalogue.tools)} tools of MCP server {server!r} by words in "
            f"their names and descriptions. Returns up to {SEARCH_LIMIT} tools; read one's "
            f"parameters with {self.catalogue.ref.tool_name('describe')} and call it with "
            f"{self.catalogue.ref.tool_name('call')}."
        )
        parameters: dict[str, JsonValue] = {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "words to look for"}},
            "required": ["query"],
            "additionalProperties": False,
        }
        return ToolDefinition(self.name, text, parameters)

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"query": "..."}``."""
        raw = json_object(arguments)
        if not isinstance(raw.get("query"), str) or set(raw) != {"query"}:
            raise InvalidArguments('arguments must be {"query": "<words>"}')
        return raw

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue:
        """The matching tools, best first."""
        words = {word.lower() for word in _WORD.findall(arguments["query"])}
        scored: list[tuple[int, str, Tool]] = []
        for name, tool in self.catalogue.tools.items():
            text = f"{tool.name} {tool.title or ''} {tool.description or ''}".lower()
            found = set(_WORD.findall(text))
            score = sum(2 if word in tool.name.lower() else 1 for word in words if word in found)
            if score or not words:
                scored.append((-score, name, tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [
            {"name": name, "description": _first_line(tool.description)}
            for _score, name, tool in scored[:SEARCH_LIMIT]
        ]


class DeferredDescribe(_Discovery):
    """``{server}__describe``: one tool's description, parameters and annotations."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.name = catalogue.ref.tool_name("describe")

    def definition(self, description: str | None = None) -> ToolDefinition:
        """Describe one tool by name."""
        text = description or (
            f"The description and JSON schema of parameters of one tool of MCP server "
            f"{self.catalogue.ref.name!r}, by the name search gave."
        )
        return ToolDefinition(self.name, text, _name_parameters())

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"name": "..."}``, a tool this run may use."""
        raw = json_object(arguments)
        if not isinstance(raw.get("name"), str) or set(raw) != {"name"}:
            raise InvalidArguments('arguments must be {"name": "<tool>"}')
        self.catalogue.find(raw["name"])
        return raw

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue:
        """The tool's name, description, parameters and annotations."""
        tool = self.catalogue.find(arguments["name"])
        notes = tool.annotations
        return {
            "name": self.catalogue.ref.tool_name(tool.name),
            "description": tool.description or "",
            "parameters": dict(tool.input_schema),
            "read_only": bool(notes and notes.read_only_hint),
            "destructive": destructive(tool),
        }


class DeferredCall:
    """``{server}__call``: calls one tool of a deferred catalogue by name.

    Its safety and approval are the called tool's, so a crash during it, or a destructive
    tool, is treated exactly as if the tool had been offered on its own.
    """

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.name = catalogue.ref.tool_name("call")

    def definition(self, description: str | None = None) -> ToolDefinition:
        """Call one tool by name with its arguments."""
        text = description or (
            f"Call one tool of MCP server {self.catalogue.ref.name!r} by the name search gave, "
            "with arguments that fit the parameters describe gave."
        )
        parameters: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name"},
                "arguments": {"type": "object", "description": "the tool's arguments"},
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        return ToolDefinition(self.name, text, parameters)

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"name": "...", "arguments": {...}}``, checked against the tool's schema."""
        raw = json_object(arguments)
        name, inner = raw.get("name"), raw.get("arguments", {})
        if (
            not isinstance(name, str)
            or not isinstance(inner, dict)
            or set(raw)
            - {
                "name",
                "arguments",
            }
        ):
            raise InvalidArguments('arguments must be {"name": "<tool>", "arguments": {...}}')
        tool = self.catalogue.find(name)
        return {"name": name, "arguments": checked(tool, inner)}

    def safe_to_retry(self, arguments: Mapping[str, Any]) -> bool:
        """The called tool's annotations."""
        return safe_to_retry(self.catalogue.find(arguments["name"]))

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """The called tool's rule."""
        return approval_rule(self.catalogue.ref, self.catalogue.find(arguments["name"]))

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue:
        """Call the tool at the server."""
        tool = self.catalogue.find(arguments["name"])
        return await call(self.catalogue.session, self.catalogue.ref, tool, arguments["arguments"])


def _name_parameters() -> dict[str, JsonValue]:
    return {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "the tool's name"}},
        "required": ["name"],
        "additionalProperties": False,
    }


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0][:200]

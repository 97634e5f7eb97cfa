"""Tool executors and per-turn tool resolution."""

from psych_runtime.tools._a2a import A2AConnection, A2AHttp
from psych_runtime.tools._code import (
    CodeFunction,
    InvalidArguments,
    ToolOutcomeUnknown,
    ToolRaised,
    json_result,
)
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._mcp import McpConnection, McpHttp, McpStdio
from psych_runtime.tools._registry import (
    ResolvedTool,
    ToolExecutor,
    ToolFunction,
    ToolRegistry,
    Turn,
)
from psych_runtime.tools._wait import WaitFor

__all__ = [
    "A2AConnection",
    "A2AHttp",
    "CodeFunction",
    "InvalidArguments",
    "McpConnection",
    "McpHttp",
    "McpStdio",
    "ResolvedTool",
    "ToolContext",
    "ToolExecutor",
    "ToolFunction",
    "ToolOutcomeUnknown",
    "ToolRaised",
    "ToolRegistry",
    "Turn",
    "WaitFor",
    "json_result",
]

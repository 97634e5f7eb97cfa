"""Tool executors and per-turn tool resolution."""

from psych_runtime.tools._code import CodeFunction, InvalidArguments, ToolRaised
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._registry import ResolvedTool, ToolFunction, ToolRegistry
from psych_runtime.tools._wait import WaitFor

__all__ = [
    "CodeFunction",
    "InvalidArguments",
    "ResolvedTool",
    "ToolContext",
    "ToolFunction",
    "ToolRaised",
    "ToolRegistry",
    "WaitFor",
]

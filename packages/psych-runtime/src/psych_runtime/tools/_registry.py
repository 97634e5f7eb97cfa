"""Registered tools, and the per-turn resolution of what a run may call."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from psych_core import (
    AgentSpec,
    AgentTool,
    CodeTool,
    SpecError,
    ToolDefinition,
    ToolNotRegistered,
    ToolRef,
)
from psych_runtime.tools._agent import agent_definition, agent_input
from psych_runtime.tools._code import CodeFunction

ToolFunction = Callable[..., Any] | CodeFunction
"""A tool the app registers: a plain function (sync or async) or a described `CodeFunction`."""


@dataclass(frozen=True, slots=True)
class ResolvedTool:
    """A tool this run may call now: its reference in the spec and, for a code tool, the
    registered function (None for tools the runtime runs itself, such as subagents)."""

    ref: ToolRef
    function: CodeFunction | None = None

    def definition(self) -> ToolDefinition:
        """How the model is offered this tool."""
        if isinstance(self.ref, AgentTool):
            return agent_definition(self.ref)
        assert self.function is not None
        return self.function.definition(self.ref.description)

    def validate(self, arguments: str) -> dict[str, Any]:
        """The call's arguments, parsed and validated; `InvalidArguments` says what is wrong."""
        if self.function is None:
            return agent_input(arguments)
        return self.function.validate(arguments)


class ToolRegistry:
    """The tool functions a session or worker can run, by name."""

    def __init__(self, tools: Iterable[ToolFunction] = ()) -> None:
        self._functions: dict[str, CodeFunction] = {}
        for tool in tools:
            function = tool if isinstance(tool, CodeFunction) else CodeFunction.of(tool)
            if function.name in self._functions:
                raise SpecError(f"two tools are registered under the name {function.name!r}")
            self._functions[function.name] = function

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, sorted."""
        return tuple(sorted(self._functions))

    def missing(self, spec: AgentSpec) -> ToolNotRegistered | None:
        """The first tool `spec` names that has no registered function, as an error."""
        for ref in spec.tools:
            if isinstance(ref, CodeTool) and ref.name not in self._functions:
                return ToolNotRegistered(spec.name, ref.name, self.names)
            if isinstance(ref, AgentTool):
                missing = self.missing(ref.spec)
                if missing is not None:
                    return missing
        return None

    def resolve(self, spec: AgentSpec) -> Mapping[str, ResolvedTool]:
        """The tools a run of `spec` may call this turn: the spec's, where registered.

        Resolved again before every model call; a call to any other tool is refused.
        """
        resolved: dict[str, ResolvedTool] = {}
        for ref in spec.tools:
            if isinstance(ref, AgentTool):
                resolved[ref.name] = ResolvedTool(ref)
                continue
            function = self._functions.get(ref.name)
            if function is not None:
                resolved[ref.name] = ResolvedTool(ref, function)
        return resolved

"""The built-in ``load_skill`` tool: the model reads one of its spec's on-demand skills.

An on-demand skill (`psych_core.Skill.on_demand`) is listed in the system prompt by name and
description only. ``load_skill`` returns its instructions, under its name as a heading, as the
call's result, so the log shows which skills the model read and when. The text comes from the
spec the run pinned (the executor is made for that spec when the turn's tools are resolved),
so a call is a pure read: safe to retry, never needing approval.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from psych_core import LOAD_SKILL_TOOL, AgentSpec, CodeTool, ToolDefinition
from psych_runtime.tools._builtin import SafeBuiltIn
from psych_runtime.tools._code import InvalidArguments
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import json_object
from psych_runtime.tools._wait import WaitFor

DESCRIPTION = (
    "Read one of the skills listed in your instructions under 'Skills you can load', by its "
    "name: its full instructions come back as this call's result. Load a skill before "
    "following it."
)


def load_skill_ref() -> CodeTool:
    """The reference the built-in tool runs under: safe to retry, never needing approval."""
    return CodeTool(name=LOAD_SKILL_TOOL, safe_to_retry=True)


class LoadSkill(SafeBuiltIn):
    """The executor of ``load_skill`` for one spec: it serves that spec's on-demand skills
    (reading one again after a crash reads the same)."""

    name = LOAD_SKILL_TOOL

    def __init__(self, spec: AgentSpec) -> None:
        self._spec = spec.name
        self._inline = {skill.name for skill in spec.skills if not skill.on_demand}
        self._skills = {skill.name: skill for skill in spec.skills if skill.on_demand}

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered the tool: the loadable names are the only values."""
        parameters: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "enum": list(self._skills),
                    "description": "the skill's name, as listed in your instructions",
                }
            },
            "required": ["name"],
            "additionalProperties": False,
        }
        return ToolDefinition(LOAD_SKILL_TOOL, description or DESCRIPTION, parameters)

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"name": "..."}``, the name of one of the spec's on-demand skills."""
        raw = json_object(arguments)
        unknown = sorted(set(raw) - {"name"})
        if unknown:
            raise InvalidArguments(f"unknown arguments {unknown}: give only the skill's name")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidArguments("name must be a non-empty string: the skill's name")
        if name not in self._skills:
            loadable = ", ".join(map(repr, self._skills))
            why = (
                "is already in your instructions"
                if name in self._inline
                else f"is not a skill of agent {self._spec!r}"
            )
            raise InvalidArguments(f"skill {name!r} {why}; the skills you can load: {loadable}")
        return {"name": name}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """The skill's instructions, under its name as a heading."""
        return self._skills[arguments["name"]].section

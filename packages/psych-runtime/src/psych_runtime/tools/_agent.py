"""How a subagent tool looks to the parent's model: one string of input for the child; and a
workflow tool: the workflow's input, as its `input_schema` says."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from psych_core import AgentTool, ToolDefinition, WorkflowTool, validation_errors
from psych_runtime.tools._code import InvalidArguments

AGENT_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "description": "What to ask the subagent, in full."}
    },
    "required": ["input"],
    "additionalProperties": False,
}


def agent_definition(ref: AgentTool) -> ToolDefinition:
    """The subagent as a tool: its description, and one `input` string."""
    description = ref.description or ref.spec.instructions or f"Ask the {ref.spec.name} agent."
    return ToolDefinition(ref.name, description, AGENT_PARAMETERS)


def agent_input(arguments: str) -> dict[str, Any]:
    """The validated arguments of a subagent call: ``{"input": str}``."""
    try:
        raw = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        raise InvalidArguments(f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise InvalidArguments(f"arguments must be a JSON object, got {type(raw).__name__}")
    extra = set(raw) - {"input"}
    if extra:
        raise InvalidArguments(f"{', '.join(sorted(extra))}: Extra inputs are not permitted")
    if not isinstance(raw.get("input"), str):
        raise InvalidArguments("input: a string is required")
    return {"input": raw["input"]}


def workflow_definition(ref: WorkflowTool) -> ToolDefinition:
    """The workflow as a tool: its description, and one `input` (its input schema)."""
    description = ref.description or f"Run the {ref.spec.name} workflow on an input."
    schema: JsonValue = dict(ref.spec.input_schema) if ref.spec.input_schema else {}
    parameters: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"input": schema},
        "required": ["input"],
        "additionalProperties": False,
    }
    return ToolDefinition(ref.name, description, parameters)


def workflow_input(ref: WorkflowTool, arguments: str) -> dict[str, Any]:
    """The validated arguments of a workflow call: ``{"input": value}``, the value checked
    against the workflow's `input_schema`."""
    try:
        raw = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        raise InvalidArguments(f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise InvalidArguments(f"arguments must be a JSON object, got {type(raw).__name__}")
    extra = set(raw) - {"input"}
    if extra:
        raise InvalidArguments(f"{', '.join(sorted(extra))}: Extra inputs are not permitted")
    if "input" not in raw:
        raise InvalidArguments("input: the workflow's input is required")
    if ref.spec.input_schema is not None:
        problems = validation_errors(ref.spec.input_schema, raw["input"], root="input")
        if problems:
            raise InvalidArguments("; ".join(problems))
    return {"input": raw["input"]}

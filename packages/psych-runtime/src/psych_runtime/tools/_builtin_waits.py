"""The built-in tools a workflow's sleep, wait and human steps call, and the pause at a
breakpoint: every worker has them.

Each only returns `WaitFor`: the run suspends holding no worker, until its due time (a sleep,
a retry's wait, a timeout) or a `Resume` aimed at the call (`send_event`, `answer`,
`continue_run`). What to
wait for was decided by the planner and recorded in the call's arguments (the due time
included), so running one again after a crash waits for exactly the same thing: they are safe
to retry.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from pydantic import JsonValue

from psych_core import (
    BREAKPOINT_TOOL,
    BUILTIN_TOOLS,
    HUMAN_TOOL,
    SLEEP_TOOL,
    CodeTool,
    ToolDefinition,
)
from psych_runtime.tools._code import InvalidArguments
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._wait import WaitFor

_DESCRIPTIONS = {
    SLEEP_TOOL: "Wait until a time (a workflow's sleep step, or the wait before a retry).",
    HUMAN_TOOL: "Ask a person a question and wait for the answer (a workflow's human step).",
    BREAKPOINT_TOOL: "Pause before a workflow step until continue_run (a breakpoint).",
}


class BuiltinWait:
    """The executor of one built-in wait tool (`BUILTIN_TOOLS`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the tool would be described (no model is ever offered it)."""
        text = description or _DESCRIPTIONS.get(self.name, "Wait for a named event.")
        return ToolDefinition(self.name, text, {"type": "object"})

    def validate(self, arguments: str) -> dict[str, Any]:
        """The planner's arguments, parsed."""
        try:
            parsed = json.loads(arguments)
        except ValueError as exc:
            raise InvalidArguments(f"arguments are not valid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise InvalidArguments(f"arguments must be a JSON object, got {type(parsed).__name__}")
        return parsed

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Wait: until the recorded due time, or until a resume aimed at this call."""
        due_text = arguments.get("due_at")
        due = dt.datetime.fromisoformat(due_text) if isinstance(due_text, str) else None
        if self.name == SLEEP_TOOL:
            note = f"step {context.call_id} sleeps until {arguments.get('until')}"
        elif self.name == HUMAN_TOOL:
            note = f"step {context.call_id} asks: {arguments.get('question')}"
        elif self.name == BREAKPOINT_TOOL:
            note = f"paused before step {arguments.get('step')}: continue_run() goes on"
        else:
            note = f"step {context.call_id} waits for event {arguments.get('event')!r}"
        return WaitFor(note=note, due_at=due)


def builtin_refs() -> dict[str, tuple[CodeTool, BuiltinWait]]:
    """Each built-in tool's reference (safe to retry) and executor, by name."""
    # Built without validation: their names hold a ':' so that no tool a spec declares (whose
    # names cannot) is ever taken for one of them.
    return {
        name: (CodeTool.model_construct(name=name, safe_to_retry=True), BuiltinWait(name))
        for name in BUILTIN_TOOLS
    }

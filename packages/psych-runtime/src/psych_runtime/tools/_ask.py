"""The built-in ``ask_user`` tool (`AgentSpec.ask_user`): the model asks the user a question.

The call only returns `WaitFor`: the run suspends holding no worker, ``status(...).questions``
shows what was asked (read back from the call's recorded arguments), and ``answer(store,
run_id, call_id, answer)`` resumes it with the answer as the call's result. Asking again
after a crash asks the same question, so the tool is safe to retry.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from psych_core import ASK_TOOL, CodeTool, ToolDefinition
from psych_runtime.tools._builtin import SafeBuiltIn
from psych_runtime.tools._code import InvalidArguments
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import json_object
from psych_runtime.tools._wait import WaitFor

MAX_QUESTION = 2_000
"""The longest question, in characters."""

MAX_OPTIONS = 20
"""The most options one question may offer."""

DESCRIPTION = (
    "Ask the user a question and wait for the answer: when you cannot go on without "
    "something only they know or decide. Give options when the answer is one of a few; "
    "leave them out for a free-text answer. The answer comes back as this call's result."
)

_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "the question, in words the user reads"},
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": "the answers to choose from; leave out for free text",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}


def ask_ref() -> CodeTool:
    """The reference the built-in tool runs under: safe to retry, never needing approval."""
    return CodeTool(name=ASK_TOOL, safe_to_retry=True)


class AskUser(SafeBuiltIn):
    """The executor of ``ask_user``: asking again after a crash asks the same question."""

    name = ASK_TOOL

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered the tool."""
        return ToolDefinition(ASK_TOOL, description or DESCRIPTION, dict(_PARAMETERS))

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"question": "...", "options": [...]}``, the options optional and distinct."""
        raw = json_object(arguments)
        unknown = sorted(set(raw) - {"question", "options"})
        if unknown:
            raise InvalidArguments(f"unknown arguments {unknown}: give question and options")
        question = raw.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InvalidArguments("question must be a non-empty string")
        if len(question) > MAX_QUESTION:
            raise InvalidArguments(f"question is longer than {MAX_QUESTION} characters")
        options = raw.get("options", [])
        if not isinstance(options, list) or not all(
            isinstance(option, str) and option.strip() for option in options
        ):
            raise InvalidArguments("options must be a list of non-empty strings")
        if len(set(options)) != len(options):
            raise InvalidArguments("options must be distinct")
        if len(options) == 1 or len(options) > MAX_OPTIONS:
            raise InvalidArguments(f"give 2 to {MAX_OPTIONS} options, or none for free text")
        return {"question": question, "options": options}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Wait for the user's answer."""
        return WaitFor(note=f"asks the user: {arguments['question']}")

"""What the declared tools (http, sandbox) share: arguments checked against their JSON schema,
values rendered into templates, and the rule for calls that run out of time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from psych_core import HttpTool, SandboxTool, validation_errors
from psych_runtime.tools._code import InvalidArguments, ToolOutcomeUnknown, ToolRaised

DeclaredTool = HttpTool | SandboxTool


def parse_arguments(schema: Mapping[str, JsonValue], text: str) -> dict[str, Any]:
    """The model's argument text, parsed and checked against `schema`.

    Raises `InvalidArguments` listing every problem, so the model can fix them all at once.
    """
    raw = json_object(text)
    problems = validation_errors(schema, raw)
    if problems:
        raise InvalidArguments("; ".join(problems))
    return raw


def json_object(text: str) -> dict[str, Any]:
    """The model's argument text as a JSON object (empty text is ``{}``); `InvalidArguments`
    when it is not one."""
    try:
        raw = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InvalidArguments(f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise InvalidArguments(f"arguments must be a JSON object, got {type(raw).__name__}")
    return raw


def render(value: Any) -> str:
    """An argument as it goes into a template: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def ran_out_of_time(ref: DeclaredTool, message: str) -> Exception:
    """What a call that timed out after its effect may have begun raises.

    The rule code tools follow: a safe tool fails with reason ``timeout``; any other is
    settled ``unknown``, since its effect may have happened.
    """
    if ref.safe_to_retry:
        return ToolRaised(message, reason="timeout")
    return ToolOutcomeUnknown(f"{message}; it may have taken effect")


def may_have_happened(ref: DeclaredTool, message: str) -> Exception:
    """What a call that broke off after its effect may have begun raises: a safe tool fails,
    any other is settled ``unknown``."""
    if ref.safe_to_retry:
        return ToolRaised(message)
    return ToolOutcomeUnknown(f"{message}; it may have taken effect")


def tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text`, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit} earlier characters not shown]\n{text[-limit:]}"

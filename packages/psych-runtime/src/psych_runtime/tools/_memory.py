"""The built-in ``remember`` and ``forget`` tools (`AgentSpec.memory`): the model keeps facts
about the run's end user in the runtime's `UserMemory`.

The user is the run's ``Scope.principal`` within its tenant; a run without one cannot remember
or forget (the call fails, saying why). Both tools are safe to retry: ``remember`` passes the
call's idempotency key, so a call run again after a crash stores its fact once, and forgetting
twice deletes once. The spec does not list them, so each says so for itself (`_BuiltIn`) and
its start records it: a crash that cuts a call off runs it again instead of settling it
``unknown``.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from psych_core import (
    FORGET_TOOL,
    REMEMBER_TOOL,
    CodeTool,
    InvalidFact,
    StoreError,
    ToolDefinition,
    UserMemory,
)
from psych_core.ports import MAX_FACT_CHARS
from psych_runtime.tools._builtin import SafeBuiltIn
from psych_runtime.tools._code import InvalidArguments, ToolRaised
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import json_object
from psych_runtime.tools._wait import WaitFor

REMEMBER_DESCRIPTION = (
    "Remember a fact about the user for later conversations: a preference, a detail of their "
    "situation, something they asked you to keep in mind. One short fact per call, in words "
    "that make sense on their own. The facts you know are listed in your instructions with "
    "their ids."
)

FORGET_DESCRIPTION = (
    "Forget a fact about the user, by the id shown beside it in your instructions: when it is "
    "wrong, out of date, or the user asks you to forget it."
)

_REMEMBER_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "fact": {
            "type": "string",
            "description": f"the fact, at most {MAX_FACT_CHARS} characters",
        },
    },
    "required": ["fact"],
    "additionalProperties": False,
}

_FORGET_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "fact_id": {"type": "string", "description": "the id of the fact to forget"},
    },
    "required": ["fact_id"],
    "additionalProperties": False,
}


def memory_refs() -> tuple[CodeTool, CodeTool]:
    """The references the built-in tools run under: safe to retry, never needing approval."""
    return (
        CodeTool(name=REMEMBER_TOOL, safe_to_retry=True),
        CodeTool(name=FORGET_TOOL, safe_to_retry=True),
    )


def _user(context: ToolContext) -> tuple[str, str]:
    """The (tenant, user) the call's facts belong to; a failed call for a run without one."""
    user = context.scope.principal
    if not user:
        raise ToolRaised(
            f"run {context.run_id} has no end user (its Scope has no principal), so it has no "
            f"memory: {context.tool!r} cannot be used. Dispatch runs with "
            "Scope(tenant=..., principal=USER) to remember facts about USER"
        )
    return context.scope.tenant, user


def _failed(context: ToolContext, exc: StoreError) -> ToolRaised:
    return ToolRaised(f"run {context.run_id}: {context.tool!r} could not reach the memory: {exc}")


class _BuiltIn(SafeBuiltIn):
    """What both tools share: the memory; and, as every built-in, safe to run again after a
    crash (remembering is idempotent by the call's key, forgetting by the fact's id)."""

    def __init__(self, memory: UserMemory) -> None:
        self.memory = memory


class Remember(_BuiltIn):
    """The executor of ``remember``."""

    name = REMEMBER_TOOL

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered the tool."""
        return ToolDefinition(
            REMEMBER_TOOL, description or REMEMBER_DESCRIPTION, dict(_REMEMBER_PARAMETERS)
        )

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"fact": "..."}``: a non-empty string of at most `MAX_FACT_CHARS` characters."""
        raw = json_object(arguments)
        unknown = sorted(set(raw) - {"fact"})
        if unknown:
            raise InvalidArguments(f"unknown arguments {unknown}: give only fact")
        fact = raw.get("fact")
        if not isinstance(fact, str) or not fact.strip():
            raise InvalidArguments("fact must be a non-empty string")
        if len(fact) > MAX_FACT_CHARS:
            raise InvalidArguments(
                f"fact is longer than {MAX_FACT_CHARS} characters ({len(fact)}): remember a "
                "shorter one"
            )
        return {"fact": fact}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Store the fact under the call's idempotency key; return its id."""
        tenant, user = _user(context)
        try:
            fact = await self.memory.remember(
                tenant,
                user,
                arguments["fact"],
                key=context.idempotency_key,
                run_id=context.run_id,
            )
        except InvalidFact as exc:
            raise ToolRaised(f"run {context.run_id}: the fact was not remembered: {exc}") from None
        except StoreError as exc:
            raise _failed(context, exc) from exc
        return {"fact_id": fact.id}


class Forget(_BuiltIn):
    """The executor of ``forget``."""

    name = FORGET_TOOL

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered the tool."""
        return ToolDefinition(
            FORGET_TOOL, description or FORGET_DESCRIPTION, dict(_FORGET_PARAMETERS)
        )

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"fact_id": "..."}``, a non-empty string."""
        raw = json_object(arguments)
        unknown = sorted(set(raw) - {"fact_id"})
        if unknown:
            raise InvalidArguments(f"unknown arguments {unknown}: give only fact_id")
        fact_id = raw.get("fact_id")
        if not isinstance(fact_id, str) or not fact_id.strip():
            raise InvalidArguments("fact_id must be a non-empty string")
        return {"fact_id": fact_id.strip()}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Delete the fact; a failed call when the user has no fact with that id."""
        tenant, user = _user(context)
        fact_id = arguments["fact_id"]
        try:
            forgotten = await self.memory.forget(tenant, user, fact_id)
        except StoreError as exc:
            raise _failed(context, exc) from exc
        if not forgotten:
            raise ToolRaised(
                f"run {context.run_id}: no fact {fact_id!r} is remembered about this user "
                "(forgotten already, or never remembered): use an id listed in your instructions"
            )
        return {"forgotten": fact_id}

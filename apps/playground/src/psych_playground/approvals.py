"""The calls a run waits to have approved, as an approval card shows them. Pure.

`psych_runtime.status` names the calls (``waiting_for``); the log says which tool each calls,
with which arguments, and which rule asked for the approval.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, JsonValue

from psych_runtime.records import ApprovalRequested, ModelCallFinished, Record


class PendingApproval(BaseModel):
    """A call waiting for a person: `arguments` parsed from the model's JSON (its raw text when
    it is not JSON), `rule` why it needs approval."""

    call_id: str
    tool: str
    arguments: JsonValue
    rule: str


def pending_approvals(
    records: Sequence[Record], waiting_for: Sequence[str]
) -> list[PendingApproval]:
    """The calls of `waiting_for` that wait for approval, in that order."""
    calls: dict[str, tuple[str, str]] = {}
    rules: dict[str, str] = {}
    for record in records:
        body = record.body
        if isinstance(body, ModelCallFinished):
            calls.update((call.call_id, (call.name, call.arguments)) for call in body.tool_calls)
        elif isinstance(body, ApprovalRequested):
            rules[body.call_id] = body.rule
    pending: list[PendingApproval] = []
    for call_id in waiting_for:
        if call_id not in rules or call_id not in calls:
            continue
        name, arguments = calls[call_id]
        pending.append(
            PendingApproval(
                call_id=call_id, tool=name, arguments=_parsed(arguments), rule=rules[call_id]
            )
        )
    return pending


def _parsed(arguments: str) -> JsonValue:
    try:
        value: JsonValue = json.loads(arguments)
    except ValueError:
        return arguments
    return value

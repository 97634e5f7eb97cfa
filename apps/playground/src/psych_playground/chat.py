"""A thread as a chat screen shows it: who said what, in which run, at which seq. Pure.

`psych_runtime.conversations.thread` says which runs make a thread; each run's own messages
are read here from its log, in log order, each with the seq of the record that holds it, so a
screen can put the live `final` texts of `/text` (which carry the same seqs) in their place
without showing one twice. What a continuation carries from the runs before it is not its
own: each message appears once, in the run that first had it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, JsonValue

from psych_runtime.records import (
    ModelCallFinished,
    Record,
    RunAdmitted,
    SignalReceived,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    UserInput,
)

Role = Literal["user", "assistant", "tool"]


class ChatMessage(BaseModel):
    """One message: `tool` names the tool of a ``tool`` message (its result or its failure)."""

    role: Role
    text: str
    run_id: str
    seq: int
    tool: str | None = None


def chat_messages(records: Sequence[Record]) -> list[ChatMessage]:
    """The messages of one run's log, in order."""
    messages: list[ChatMessage] = []
    names: dict[str, str] = {}
    for record in records:
        body = record.body
        said: list[tuple[Role, str, str | None]] = []
        if isinstance(body, RunAdmitted):
            said = [("user", text, None) for text in (*body.queued, body.input)]
        elif isinstance(body, ModelCallFinished):
            names.update((call.call_id, call.name) for call in body.tool_calls)
            said = [("assistant", body.text, None)] if body.text else []
        elif isinstance(body, ToolCallStarted):
            names[body.call_id] = body.name
        elif isinstance(body, ToolCallFinished):
            said = [("tool", result_text(body.result), names.get(body.call_id))]
        elif isinstance(body, ToolCallFailed):
            said = [("tool", body.error, names.get(body.call_id))]
        elif isinstance(body, ToolCallSettled):
            note = f": {body.note}" if body.note else ""
            said = [("tool", f"outcome unknown{note}", names.get(body.call_id))]
        elif (
            isinstance(body, SignalReceived)
            and isinstance(body.signal, UserInput)
            and body.signal.queue != "next_run"  # it is the next run's, which shows it
        ):
            said = [("user", body.signal.text, None)]
        messages.extend(
            ChatMessage(role=role, text=text, run_id=record.run_id, seq=record.seq, tool=tool)
            for role, text, tool in said
        )
    return messages


def result_text(result: JsonValue) -> str:
    """A tool's result as a model reads it: a string as it is, anything else as JSON."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)

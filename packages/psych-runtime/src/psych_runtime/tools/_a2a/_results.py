"""An A2A task's end as Psych records it: the result the model reads, or why the call failed.

What each final state of the remote task becomes:

- ``completed``: the call's result, from the task's artifacts (or, with none, the parts of
  its last status message).
- ``failed``, ``rejected``, ``canceled`` (by the peer): a failed call whose error the model
  reads, with what the peer said.
- ``input-required``, ``auth-required``: a failed call saying what the peer asks for. Psych
  does not answer a peer in the middle of a call: the remote task is cancelled, and the
  model may call the skill again with a message that says what was missing.

A reply that is a message rather than a task is the call's result, as a completed task's.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

from a2a.helpers import get_data_parts
from a2a.types import Artifact, Message, Part, Task, TaskState
from pydantic import JsonValue

ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
"""The states a task never leaves."""

WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
"""The states in which a task waits for its client: the end of a call, for Psych."""

_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected the task",
    TaskState.TASK_STATE_CANCELED: "cancelled the task",
    TaskState.TASK_STATE_INPUT_REQUIRED: "needs more input",
    TaskState.TASK_STATE_AUTH_REQUIRED: "needs authentication",
}


def state_name(state: int) -> str:
    """A task state as A2A writes it: ``completed``, ``input-required``..."""
    name: str = TaskState.Name(state)
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def failure(task: Task, where: str) -> str | None:
    """Why the call failed, as the model reads it; None when the task completed."""
    state = task.status.state
    if state == TaskState.TASK_STATE_COMPLETED:
        return None
    said = message_text(task.status.message) if task.status.HasField("message") else ""
    what = _FAILED.get(state, f"ended in state {state_name(state)!r}")
    text = f"{where} {what}"
    if said:
        text += f": {said}"
    if state in WAITING:
        text += (
            " (the remote task was cancelled: call the skill again with a message that "
            "says what it asked for)"
        )
    return text


def task_result(task: Task) -> JsonValue:
    """A completed task's result for the log and the model.

    One text part in all is that text; one data part is that data; only text parts are their
    text joined by blank lines. Otherwise ``{"artifacts": [{"name", "parts"}]}``, each part
    as ``{"type": "text" | "data" | "file", ...}`` (a file's bytes in base64). A result too
    large for a record goes to the `BlobStore` as every large record does.
    """
    if task.artifacts:
        return _recorded(task.artifacts)
    if task.status.HasField("message"):
        return message_result(task.status.message)
    return ""


def message_result(message: Message) -> JsonValue:
    """A reply that is a message, as a result."""
    return _simple(message.parts) if _is_simple(message.parts) else _structured(message.parts)


def message_text(message: Message) -> str:
    """The text parts of `message`, joined."""
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


def _recorded(artifacts: Sequence[Artifact]) -> JsonValue:
    parts = [part for artifact in artifacts for part in artifact.parts]
    if _is_simple(parts):
        return _simple(parts)
    shown: list[JsonValue] = []
    for artifact in artifacts:
        entry: dict[str, JsonValue] = {"parts": _structured(artifact.parts)}
        if artifact.name:
            entry["name"] = artifact.name
        shown.append(entry)
    return {"artifacts": shown}


def _is_simple(parts: Sequence[Part]) -> bool:
    if len(parts) == 1:
        return bool(parts[0].HasField("text") or parts[0].HasField("data"))
    return bool(parts) and all(part.HasField("text") for part in parts)


def _simple(parts: Sequence[Part]) -> JsonValue:
    if len(parts) == 1 and parts[0].HasField("data"):
        return _data(parts[0])
    return "\n\n".join(part.text for part in parts)


def _structured(parts: Iterable[Part]) -> list[JsonValue]:
    return [_part(part) for part in parts]


def _part(part: Part) -> JsonValue:
    shown: dict[str, JsonValue]
    if part.HasField("text"):
        shown = {"type": "text", "text": part.text}
    elif part.HasField("data"):
        shown = {"type": "data", "data": _data(part)}
    elif part.HasField("raw"):
        shown = {"type": "file", "data": base64.b64encode(part.raw).decode("ascii")}
    elif part.HasField("url"):
        shown = {"type": "file", "url": part.url}
    else:
        shown = {"type": "unknown"}
    if part.media_type:
        shown["media_type"] = part.media_type
    if part.filename:
        shown["filename"] = part.filename
    return shown


def _data(part: Part) -> JsonValue:
    # protobuf keeps every number as a double: 42 arrives as 42.0. JSON has one kind of
    # number, so whole ones are given back as integers. A Struct is a map with no order:
    # keys are sorted, so the same answer is recorded the same way.
    return _whole(get_data_parts([part])[0])


def _whole(value: Any) -> JsonValue:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(key): _whole(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_whole(item) for item in value]
    result: JsonValue = value
    return result

"""A run's log read as an A2A task: its state, its status message, its output artifact.

Every answer is a fold of the run's records, like `status()`: the task id is the run id, and
nothing about the task is kept anywhere but the log. Psych has no lasting conversations yet,
so each task is its own context (its ``context_id`` is the run id too).

How Psych's statuses read in A2A (`task_state`):

- ``queued``: ``submitted``; ``running``: ``working``.
- ``waiting`` on a tool's `WaitFor`, or on a workflow's human step: ``input-required``; a
  message on the task answers it.
- ``waiting`` for approval, or paused at a workflow's breakpoint: ``auth-required``; a person
  decides out of band (`approve`, `deny`, `continue_run`), never a message.
- ``waiting`` on children, on a workflow's sleep or a named event: ``working``.
- ``completed``: ``completed``, with the output as the artifact ``output``.
- ``failed``: ``failed``, the error as the status message; ``cancelled``: ``canceled``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers import new_data_part
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from pydantic import JsonValue

from psych_core import (
    BREAKPOINT_TOOL,
    CORRUPT_LOG,
    SLEEP_TOOL,
    WAIT_TOOL,
    AgentSpec,
    CorruptLog,
    ModelCallFinished,
    Record,
    Resume,
    RunAdmitted,
    RunState,
    SignalReceived,
    ToolCallWaiting,
    UserInput,
    WorkflowSpec,
    fold,
)

OUTPUT_ARTIFACT = "output"
"""The id (and name) of the artifact that carries a completed run's output."""

TERMINAL = frozenset(
    {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}
)
INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})

# Waits a message cannot end: the app's scheduler, clock or event source ends them.
_NOT_ASKED = frozenset({SLEEP_TOOL, WAIT_TOOL})
_STATES = {
    "queued": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}


@dataclass
class RunTask:
    """A run's records folded as far as they go, with what A2A shows besides the status:
    the notes of waiting calls (the question a run asks) and the messages so far."""

    run_id: str
    state: RunState
    notes: dict[str, str] = field(default_factory=dict)
    history: list[Message] = field(default_factory=list)
    corrupt: str | None = None
    at: dt.datetime | None = None

    @classmethod
    def of(
        cls,
        run_id: str,
        records: Sequence[Record],
        spec: AgentSpec | WorkflowSpec | None = None,
    ) -> RunTask:
        """The task of the run whose log is `records`; `spec`, the spec it was admitted
        with, reads a structured answer as JSON (without it, the answer is its text)."""
        task = cls(run_id, RunState.empty(run_id, spec))
        for record in records:
            task.add(record)
        return task

    def add(self, record: Record) -> None:
        """Fold one more record. A record that does not fit leaves the task ``failed`` with
        the reason, as `status()` answers for a corrupt log; later records change nothing."""
        if self.corrupt is not None:
            return
        try:
            self.state = fold(self.state, record)
        except CorruptLog as corrupt:
            self.corrupt = str(corrupt)
            return
        self.at = record.at
        body = record.body
        said: str | None = None
        role = Role.ROLE_USER
        match body:
            case RunAdmitted(input=text):
                said = text
            case ToolCallWaiting(call_id=call_id, note=note):
                self.notes[call_id] = note
            case SignalReceived(signal=UserInput(text=text)):
                said = text
            case SignalReceived(signal=Resume(payload=payload, breakpoint=False, event=None)):
                said = payload if isinstance(payload, str) else json.dumps(payload)
            case ModelCallFinished(text=text) if text:
                said, role = text, Role.ROLE_AGENT
            case _:
                pass
        if said is not None:
            self.history.append(
                Message(
                    message_id=f"{self.run_id}:{record.seq}",
                    context_id=self.run_id,
                    task_id=self.run_id,
                    role=role,
                    parts=[Part(text=said)],
                )
            )

    @property
    def last_seq(self) -> int:
        return self.state.last_seq


def task_state(state: RunState) -> TaskState:
    """The A2A state of a run in `state` (the table in this module's docstring)."""
    if state.status != "waiting":
        return _STATES[state.status]
    if state.waiting == "approval":
        return TaskState.TASK_STATE_AUTH_REQUIRED
    if state.waiting != "external":
        return TaskState.TASK_STATE_WORKING
    waiting = [call.call.name for call in state.calls if call.phase == "waiting"]
    if any(name not in _NOT_ASKED and name != BREAKPOINT_TOOL for name in waiting):
        return TaskState.TASK_STATE_INPUT_REQUIRED
    if BREAKPOINT_TOOL in waiting:
        return TaskState.TASK_STATE_AUTH_REQUIRED
    return TaskState.TASK_STATE_WORKING


def state_of(task: RunTask) -> TaskState:
    """The A2A state of `task`: ``failed`` when its log is corrupt."""
    if task.corrupt is not None:
        return TaskState.TASK_STATE_FAILED
    return task_state(task.state)


def answered_by_message(state: RunState) -> list[tuple[str, str]]:
    """The waiting calls a message can answer, as ``(call id, tool name)``, in order: a
    workflow's human steps and the calls of an agent's tools that returned `WaitFor`."""
    return [
        (call.call.call_id, call.call.name)
        for call in state.calls
        if call.phase == "waiting" and call.call.name not in _NOT_ASKED | {BREAKPOINT_TOOL}
    ]


def status_message(task: RunTask, state: TaskState) -> Message | None:
    """What the agent says with the status: the question it waits on, the calls waiting for
    a decision, or why it failed."""
    run = task.state
    text: str | None = None
    if task.corrupt is not None:
        text = task.corrupt
    elif state == TaskState.TASK_STATE_INPUT_REQUIRED:
        notes = [task.notes.get(call_id, "") for call_id, _ in answered_by_message(run)]
        text = "\n".join(note for note in notes if note) or "The run waits for your answer."
    elif state == TaskState.TASK_STATE_AUTH_REQUIRED:
        waiting = ", ".join(_waiting_calls(run))
        text = (
            f"The run waits for a person's decision on {waiting}: it is made out of band "
            "(approve, deny or continue_run), not by a message."
        )
    elif state == TaskState.TASK_STATE_FAILED:
        text = run.error or run.failure_reason or "The run failed."
    elif state == TaskState.TASK_STATE_CANCELED and run.cancel:
        text = run.cancel
    if text is None:
        return None
    return Message(
        message_id=f"{task.run_id}:status:{task.last_seq}",
        context_id=task.run_id,
        task_id=task.run_id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


def _waiting_calls(state: RunState) -> list[str]:
    phase = "awaiting_approval" if state.waiting == "approval" else "waiting"
    return [
        f"call {call.call.call_id} ({call.call.name})"
        for call in state.calls
        if call.phase == phase
    ]


def output_artifact(output: JsonValue) -> Artifact:
    """The artifact of a completed run: its answer as text, or its structured output as
    data."""
    part = Part(text=output) if isinstance(output, str) else new_data_part(output)
    return Artifact(artifact_id=OUTPUT_ARTIFACT, name=OUTPUT_ARTIFACT, parts=[part])


def task_status(task: RunTask, state: TaskState | None = None) -> TaskStatus:
    """The A2A status of `task` (in `state`, when the caller decides it)."""
    state = state_of(task) if state is None else state
    status = TaskStatus(state=state)
    message = status_message(task, state)
    if message is not None:
        status.message.CopyFrom(message)
    if task.at is not None:
        status.timestamp.FromDatetime(task.at.astimezone(dt.UTC).replace(tzinfo=None))
    return status


def task_of(task: RunTask, state: TaskState | None = None) -> Task:
    """The A2A task of `task`: its status, its output artifact once completed, its history,
    and Psych's own view in ``metadata.psych`` (status, what it waits for, the calls)."""
    status = task_status(task, state)
    out = Task(id=task.run_id, context_id=task.run_id, status=status, history=task.history)
    if status.state == TaskState.TASK_STATE_COMPLETED:
        out.artifacts.append(output_artifact(task.state.output))
    out.metadata.update({"psych": _metadata(task)})
    return out


def _metadata(task: RunTask) -> dict[str, Any]:
    run = task.state
    status = "failed" if task.corrupt is not None else run.status
    found: dict[str, Any] = {"agent": run.admitted.agent if run.admitted else "", "status": status}
    if run.status == "waiting" and task.corrupt is None:
        found["waiting"] = run.waiting
        phase = "awaiting_approval" if run.waiting == "approval" else "waiting"
        found["waiting_for"] = [c.call.call_id for c in run.calls if c.phase == phase]
    if task.corrupt is not None:
        found["failure_reason"] = CORRUPT_LOG
    elif run.failure_reason:
        found["failure_reason"] = run.failure_reason
    return found


def status_event(task: RunTask, state: TaskState | None = None) -> TaskStatusUpdateEvent:
    """A status update for `task` (streams send one each time its A2A state changes)."""
    return TaskStatusUpdateEvent(
        task_id=task.run_id, context_id=task.run_id, status=task_status(task, state)
    )


def artifact_event(task: RunTask) -> TaskArtifactUpdateEvent:
    """The output artifact of a completed run, as a stream sends it (in one chunk)."""
    return TaskArtifactUpdateEvent(
        task_id=task.run_id,
        context_id=task.run_id,
        artifact=output_artifact(task.state.output),
        last_chunk=True,
    )

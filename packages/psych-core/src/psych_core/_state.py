"""The state of a run, as the reducer folds it from the log.

Folding is incremental: a worker keeps its `RunState` and folds only new records, so the cost
of a step does not grow with the log. The conversation is a persistent list (each fold adds
one node and shares the rest), and nothing else in the state grows with the log.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from psych_core._canonical import canonical_json
from psych_core._compaction import SUMMARY_PREFIX
from psych_core._messages import Message, ToolCall, UserMessage
from psych_core._quick_init import quick_init
from psych_core._records import RunAdmitted, ToolFailureReason
from psych_core._spec import AgentSpec
from psych_core._usage import Usage
from psych_core._workflow_spec import WorkflowSpec
from psych_core._workflow_state import WorkflowProgress

RunStatusName = Literal["queued", "running", "waiting", "completed", "failed", "cancelled"]
"""Where a run is. The last three are final."""

WaitingReason = Literal["approval", "external", "children"]
"""What a `waiting` run waits for."""

FINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@quick_init
@dataclass(frozen=True, slots=True)
class Conversation:
    """An append-only, persistent list of messages: adding shares every earlier node.

    `messages` is asked at every model turn, so the newest node it was asked of keeps the
    tuple it returned (`_listed`) and the next one extends it, copying pointers in one go
    instead of walking the whole chain in Python: a turn costs the same at message 2,000 as
    at message 20. Only the newest listing is kept (an older node hands its tuple on), so a
    long run holds one tuple, not one per turn.
    """

    last: Message | None = None
    before: Conversation | None = None
    length: int = 0
    _listed: tuple[Message, ...] | None = field(default=None, compare=False, repr=False)

    def add(self, message: Message) -> Conversation:
        """A conversation with `message` after this one's messages."""
        return Conversation(message, self, self.length + 1)

    def messages(self) -> tuple[Message, ...]:
        """All messages, oldest first."""
        if self._listed is not None:
            return self._listed
        newer: list[Message] = []
        node: Conversation | None = self
        while node is not None and node.last is not None and node._listed is None:
            newer.append(node.last)
            node = node.before
        older: tuple[Message, ...] = ()
        if node is not None and node._listed is not None:
            older = node._listed
            object.__setattr__(node, "_listed", None)
        newer.reverse()
        listed = older + tuple(newer)
        object.__setattr__(self, "_listed", listed)
        return listed

    def __len__(self) -> int:
        return self.length


CallPhase = Literal[
    "requested",
    "awaiting_approval",
    "approved",
    "denied",
    "started",
    "waiting",
    "resumed",
    "child",
    "child_ended",
    "done",
]
"""Where a call is: ``requested`` (no record yet), ``awaiting_approval``, ``approved`` or
``denied`` (decided, not yet acted on), ``started`` (running, or orphaned by a crash),
``waiting`` (its tool waits for a resume or a time), ``resumed`` (its payload arrived),
``child`` (a subagent's child run is going), ``child_ended`` (it ended; its outcome is to be
collected), ``done`` (finished, failed or settled)."""


@quick_init
@dataclass(frozen=True, slots=True)
class CallOutcome:
    """How a call ended: what a workflow's planner reads of the round before.

    Attributes:
        status: ``finished`` (with `result`), ``failed`` (with `reason` and `error`) or
            ``unknown`` (settled: it may or may not have taken effect; `error` says why).
    """

    status: Literal["finished", "failed", "unknown"]
    result: JsonValue = None
    reason: ToolFailureReason | None = None
    error: str | None = None


@quick_init
@dataclass(frozen=True)
class CallState:
    """Where one tool call of the current model turn is.

    Attributes:
        call: the call as the model asked for it.
        phase: see `CallPhase`.
        started_attempt: the attempt whose `ToolCallStarted` is the latest for this call.
        starts: how many times the call was started (more than once only for safe tools
            re-run after a crash).
        arguments: the arguments an approver edited the call to (JSON text), or None.
        decision: who denied the call and why, once denied.
        payload: what the `Resume` that ended its wait brought.
        due_at: when its wait times out, for a ``waiting`` call; for a workflow step's call,
            when the step times out (its child run is cancelled then).
        child_run_id: the child run of a subagent call.
        outcome: how it ended, once ``done``.
        safe_to_retry: whether the call may run again after a crash, as its start recorded
            it (an MCP tool's annotations); None when the spec says (`ToolCallStarted`).
    """

    call: ToolCall
    phase: CallPhase = "requested"
    started_attempt: int | None = None
    starts: int = 0
    arguments: str | None = None
    decision: str | None = None
    payload: JsonValue = None
    due_at: dt.datetime | None = None
    child_run_id: str | None = None
    outcome: CallOutcome | None = None
    safe_to_retry: bool | None = None

    @property
    def effective_arguments(self) -> str:
        """The arguments the call runs with: the approver's edit, or the model's."""
        return self.arguments if self.arguments is not None else self.call.arguments


@quick_init
@dataclass(frozen=True)
class RunState:
    """Everything the worker needs to decide what a run does next.

    Build the empty state with `RunState.empty`, then `fold` each record into it.
    `spec` is needed only to decide (`next_action`); reading a status needs no spec.

    A workflow run's calls are the steps of its current round (each called by its memo key),
    and `workflow` is its progress; an agent run's calls are those of the model's last turn.

    Attributes:
        workflow: a workflow run's progress (`WorkflowProgress`: settled steps by memo key,
            running containers, ``state.*``), from its first `StepsPlanned` on; None for an
            agent run.
        last_model_seq: the seq of the latest `ModelCallFinished`.
        output_rejections: the answers to the current user message that were rejected
            (`OutputRejected`), as ``(answer seq, what was wrong)``; at most
            ``output_retries + 1``, so it does not grow with the log.
        admitted_at: when the run was admitted (its first record's time).
        failed_streak: how many tool calls in a row have failed (`AgentSpec.max_failed_calls`);
            a finished call sets it back to 0.
        call_counts: how many times the model asked for each call, by a digest of its tool and
            canonical arguments, when the spec sets `AgentSpec.max_identical_calls` (the guard
            that reads them); one entry per distinct call. Empty without that guard.
        follow_ups: user messages sent as ``follow_up`` that wait for the model's answer to
            everything before them.
        next_run: user messages sent as ``next_run``, kept for the run that continues this one.
        context_tokens: the conversation's size as the provider measured it on the last model
            call (input, cached input and output tokens); None when unmeasured (no call yet,
            a call without reported usage, or just after a compaction).
        summary: the summary of the compacted part of the conversation, once compacted.
        kept_from: the index in `conversation` of the first message sent as it is after the
            summary (0 before any compaction).
    """

    run_id: str
    spec: AgentSpec | WorkflowSpec | None = None
    status: RunStatusName = "queued"
    waiting: WaitingReason | None = None
    next_seq: int = 0
    attempt: int = 0
    admitted: RunAdmitted | None = None
    admitted_at: dt.datetime | None = None
    conversation: Conversation = field(default_factory=Conversation)
    turns: int = 0
    model_calls: int = 0
    turn_model_calls: int = 0
    tool_calls: int = 0
    calls: tuple[CallState, ...] = ()
    last_text: str | None = None
    last_model_seq: int | None = None
    answered: bool = False
    output_rejections: tuple[tuple[int, str], ...] = ()
    usage: Usage = field(default_factory=Usage)
    failure_reason: str | None = None
    error: str | None = None
    inbox_seen: int = 0
    cancel: str | None = None
    pending_input: tuple[str, ...] = ()
    due_at: dt.datetime | None = None
    workflow: WorkflowProgress | None = None
    failed_streak: int = 0
    call_counts: Mapping[str, int] = field(default_factory=dict)
    follow_ups: tuple[str, ...] = ()
    next_run: tuple[str, ...] = ()
    context_tokens: int | None = None
    summary: str | None = None
    kept_from: int = 0

    @classmethod
    def empty(cls, run_id: str, spec: AgentSpec | WorkflowSpec | None = None) -> RunState:
        """The state before seq 0."""
        return cls(run_id=run_id, spec=spec)

    @property
    def ended(self) -> bool:
        """Whether the run has completed, failed or been cancelled."""
        return self.status in FINAL_STATUSES

    @property
    def last_seq(self) -> int:
        """The seq of the last folded record, -1 before any."""
        return self.next_seq - 1

    def request_messages(self) -> tuple[Message, ...]:
        """The messages the next model request is built from: the whole conversation, or,
        once compacted, the summary followed by the messages kept since."""
        messages = self.conversation.messages()
        if self.summary is None:
            return messages
        return (UserMessage(SUMMARY_PREFIX + self.summary), *messages[self.kept_from :])

    @property
    def open_calls(self) -> bool:
        """Whether any call of the current turn has no outcome yet."""
        return any(c.phase != "done" for c in self.calls)

    def call(self, call_id: str) -> CallState | None:
        """The state of call `call_id` in the current turn, or None."""
        for state in self.calls:
            if state.call.call_id == call_id:
                return state
        return None

    @property
    def output(self) -> JsonValue:
        """The run's answer: the final text, parsed as JSON when the spec asks for structure;
        a workflow's output.

        None until the run completes. A final text that is not valid JSON under an
        `output_type` is rejected before completion (`OutputRejected`), so parsing here cannot
        fail on a log the runtime wrote.
        """
        if self.status != "completed":
            return None
        if self.workflow is not None:
            return self.workflow.output
        if (
            isinstance(self.spec, AgentSpec)
            and self.spec.output_type is not None
            and self.last_text
        ):
            parsed: JsonValue = json.loads(self.last_text)
            return parsed
        return self.last_text


def call_key(call: ToolCall) -> str:
    """A digest of one call's tool and arguments (canonical when they are JSON), the same
    for the same call however the model spaced or ordered its arguments."""
    try:
        arguments = canonical_json(json.loads(call.arguments)) if call.arguments.strip() else "{}"
    except (ValueError, TypeError):
        arguments = call.arguments
    text = f"{call.name}\0{arguments}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

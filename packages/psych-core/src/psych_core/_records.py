"""The records of a run's log.

A `Record` is `run_id`, `seq` (0, 1, 2, ... with no gaps), `attempt`, `at` (UTC, supplied by the
runtime or the store) and a body, discriminated on ``type``. The JSON form is stable; the first
record (`RunAdmitted`) carries the schema version, so old logs stay readable.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SerializeAsAny

from psych_core._messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from psych_core._scope import Scope
from psych_core._signals import Signal
from psych_core._unvalidated import unvalidated
from psych_core._usage import Cost, Usage, UsageSource
from psych_core._workflow_events import ReplayOf, StepCall, StepEvent

SCHEMA_VERSION = 1
"""The version of the record format this package writes; carried by every `RunAdmitted`."""

CarriedMessage = Annotated[
    UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")
]
"""One message of the conversation a continuation carries (`RunAdmitted.history`)."""


def _empty(value: object) -> bool:
    """Left out of the JSON when empty (`Field.exclude_if`): a field added later writes
    nothing where it is not used, so logs stay as they were and older workers read them. A
    field rule, not a serializer function: records are serialised on every step, and a
    wrapping serializer makes pydantic build each body as a dict in Python first."""
    return not value


def _none(value: object) -> bool:
    """Left out of the JSON when None (`Field.exclude_if`), as `_empty` says why."""
    return value is None


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunAdmitted(_Body):
    """Seq 0: the run was admitted with this spec version and input.

    A child run (a subagent's) names its parent run and call, and the tools its parent could
    use: the child is never offered a tool outside them.

    A workflow run may carry what its dispatch chose for debugging (not part of the spec, so
    the version does not change): `breakpoints` (step names or memo keys it pauses before)
    and `step_mode` (it pauses before every step). A run admitted by `replay` names the run
    it replays and the steps it copies from it (`replay_of`).

    A continuation (``dispatch(..., continues=run_id)``) names the run it continues
    (`continues`) and carries its conversation (`history`: what that run's next model request
    would have been built from, so a compacted run hands on its summary, not its whole past),
    then the messages that run kept for the next run of its thread (`queued`), which come
    before `input`, and the size the provider last measured its conversation at
    (`history_tokens`, for `AgentSpec.compaction`; None when unmeasured). Left out of the
    JSON when empty.

    `traceparent` is the W3C trace context of the request that admitted the run (`dispatch`
    inside a traced request) or, for a child run, of its parent's tool call: the run's spans
    join that trace (`psych_core.run_trace_id`). Left out of the JSON when None.
    """

    type: Literal["run_admitted"] = "run_admitted"
    schema_version: int = SCHEMA_VERSION
    agent: str
    spec_version: str
    input: str
    scope: Scope
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    breakpoints: tuple[str, ...] = ()
    step_mode: bool = False
    replay_of: ReplayOf | None = None
    # A run that continues nothing writes what it wrote before threads existed.
    continues: str | None = Field(default=None, exclude_if=_empty)
    history: tuple[CarriedMessage, ...] = Field(default=(), exclude_if=_empty)
    queued: tuple[str, ...] = Field(default=(), exclude_if=_empty)
    history_tokens: int | None = Field(default=None, exclude_if=_empty)
    traceparent: str | None = Field(default=None, exclude_if=_empty)


class AttemptStarted(_Body):
    """A worker claimed the run; the record's `attempt` is the new attempt's number."""

    type: Literal["attempt_started"] = "attempt_started"
    worker_id: str


class ModelCallFinished(_Body):
    """The model answered. Its tool calls are named ``"{seq}.{i}"`` after this record's seq.

    `recalled` holds the ids of the user's facts (`UserMemory`) the request was given, for a
    spec with ``memory=True``: only ids, never a fact's text, so that erasing a user's memory
    leaves none of it in logs. Left out of the JSON when empty.
    """

    type: Literal["model_call_finished"] = "model_call_finished"
    model: str
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    usage_source: UsageSource = "missing"
    cost: Cost | None = None
    finish_reason: str | None = None
    recalled: tuple[str, ...] = Field(default=(), exclude_if=_empty)


class ModelCallFailed(_Body):
    """A call to the model failed; `model` is the model that was asked."""

    type: Literal["model_call_failed"] = "model_call_failed"
    model: str
    error: str
    status: int | None = None
    retryable: bool = False


class ToolCallStarted(_Body):
    """The call is about to run. Committed before the effect begins.

    `safe_to_retry` is set for a tool whose safety is not in the spec (an MCP server's tool,
    from its annotations): what a crash that cuts the call off does with it is decided by
    what was recorded here, not by what the tool says later. Left out of the JSON when None.
    """

    type: Literal["tool_call_started"] = "tool_call_started"
    call_id: str
    name: str
    safe_to_retry: bool | None = Field(default=None, exclude_if=_none)


class ToolCallFinished(_Body):
    """The call returned this result."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    call_id: str
    result: JsonValue


ToolFailureReason = Literal[
    "error",
    "unknown_tool",
    "invalid_arguments",
    "timeout",
    "cancelled",
    "denied",
    "result_too_large",
    "invalid_result",
]
"""Why a call failed. ``result_too_large``: its result is over the store's record limit and
no BlobStore keeps it; ``invalid_result``: its result cannot be written as JSON text (a lone
surrogate in a string)."""


class ToolCallFailed(_Body):
    """The call failed, or was refused before it ran; the model is told why."""

    type: Literal["tool_call_failed"] = "tool_call_failed"
    call_id: str
    reason: ToolFailureReason
    error: str


class ToolCallSettled(_Body):
    """A started call whose outcome cannot be known: it may or may not have taken effect."""

    type: Literal["tool_call_settled"] = "tool_call_settled"
    call_id: str
    outcome: Literal["unknown"] = "unknown"
    note: str = ""


class ToolCallWaiting(_Body):
    """The call's tool asked to wait for something external (`resume`) or for a time.

    Its result will be the payload of the `Resume` signal that wakes the run, or a note that
    the wait timed out at `due_at`.
    """

    type: Literal["tool_call_waiting"] = "tool_call_waiting"
    call_id: str
    note: str = ""
    due_at: dt.datetime | None = None


class ApprovalRequested(_Body):
    """The call needs a person's approval before it may start; `rule` says which rule asked."""

    type: Literal["approval_requested"] = "approval_requested"
    call_id: str
    rule: str


class ApprovalDecided(_Body):
    """Inbox entry `number`, a decision on a pending call, moved into the log.

    Attributes:
        arguments: the arguments the approver edited the call to, when they did.
    """

    type: Literal["approval_decided"] = "approval_decided"
    number: int
    call_id: str
    approved: bool
    by: str
    note: str | None = None
    reason: str | None = None
    arguments: dict[str, JsonValue] | None = None


class SignalReceived(_Body):
    """Inbox entry `number` moved into the log: a resume, a cancel, a user message, a child."""

    type: Literal["signal_received"] = "signal_received"
    number: int
    key: str
    signal: SerializeAsAny[Signal]  # as `Record.body`, for speed


class SignalIgnored(_Body):
    """Inbox entry `number` no longer applied when it was moved in; `reason` says why."""

    type: Literal["signal_ignored"] = "signal_ignored"
    number: int
    key: str
    reason: str


class RunSuspended(_Body):
    """The run holds no worker until a signal wakes it (or `due_at` passes).

    Attributes:
        reason: ``approval``, ``external`` or ``children``.
        calls: the calls it waits on.
    """

    type: Literal["run_suspended"] = "run_suspended"
    reason: Literal["approval", "external", "children"]
    due_at: dt.datetime | None = None
    calls: tuple[str, ...] = ()


class ChildStarted(_Body):
    """A subagent call created its child run (whose id is derived from this run and the call)."""

    type: Literal["child_started"] = "child_started"
    call_id: str
    child_run_id: str


class ChildFinished(_Body):
    """The child run of a subagent call ended with `status`; the call's outcome follows."""

    type: Literal["child_finished"] = "child_finished"
    call_id: str
    child_run_id: str
    status: str


class OutputRejected(_Body):
    """The final answer at seq `answer_seq` is not JSON, or breaks the spec's `output_type`.

    The model is told `error` and asked for a corrected answer (the reducer adds that message
    to the conversation); when the spec's `output_retries` allow no further try, the run fails
    with reason ``invalid_output`` instead.

    Attributes:
        answer_seq: the seq of the `ModelCallFinished` whose text was rejected.
        error: what was wrong, as the model reads it: the JSON error, or each broken constraint
            of the schema with its path (``reason: required``).
        try_number: which rejected answer of this user message it is: 1, 2, ...
    """

    type: Literal["output_rejected"] = "output_rejected"
    answer_seq: int = Field(ge=0)
    error: str
    try_number: int = Field(ge=1)


class StepsPlanned(_Body):
    """A workflow's planner decided the next round of steps.

    Like a `ModelCallFinished` for an agent, it names the calls to make (each called by the
    step's memo key); before them, what the planner decided that needs no effect (`events`:
    pure steps, guards, branch choices, foreach items, loop iterations, retries, the reading
    of the last round's results). The planner plans when no call of the last round is open.

    Attributes:
        starts: how many step starts this round makes (counted against `max_steps`).
    """

    type: Literal["steps_planned"] = "steps_planned"
    events: tuple[SerializeAsAny[StepEvent], ...] = ()  # as `Record.body`, for speed
    calls: tuple[StepCall, ...] = ()
    starts: int = Field(default=0, ge=0)


class ConversationCompacted(_Body):
    """The conversation was summarised (`AgentSpec.compaction`): the next model requests are
    built from `summary` followed by the messages from `kept_from` on.

    The records summarised stay in the log; only what the model is sent changes.

    Attributes:
        kept_from: the index, in the run's whole conversation (carried history included), of
            the first message kept as it is; always the start of a user turn, so a tool call
            is never parted from its result.
        summary: what the summarising model wrote.
        tokens: the conversation's size that made it compact: the input and output tokens the
            provider reported for the last model call.
        model, usage, usage_source, cost: the summarising call, as for `ModelCallFinished`.
    """

    type: Literal["conversation_compacted"] = "conversation_compacted"
    kept_from: int = Field(ge=0)
    summary: str
    tokens: int = Field(ge=0)
    model: str
    usage: Usage | None = None
    usage_source: UsageSource = "missing"
    cost: Cost | None = None


class CompactionFailed(_Body):
    """The summarising call failed: the run goes on with its whole conversation, and does not
    try again before its next model call has measured the conversation anew."""

    type: Literal["compaction_failed"] = "compaction_failed"
    model: str
    error: str


class RunCompleted(_Body):
    """The run ended with an answer: the text of the last `ModelCallFinished`, or, for a
    workflow, its `output`."""

    type: Literal["run_completed"] = "run_completed"
    output: JsonValue = None


class ToolsUnavailable(_Body):
    """A tool source could not be reached for a turn that goes on without its tools.

    Written before the model call of that turn, for an optional MCP server or A2A peer
    (``McpServer`` with ``required=False``; `source` ``"mcp:github"``), or for the user
    memory (`source` ``"memory"``: a spec with ``memory=True`` on a runtime without one, or a
    recall that failed); `error` says what failed.
    """

    type: Literal["tools_unavailable"] = "tools_unavailable"
    source: str
    error: str


class RunFailed(_Body):
    """The run ended without an answer."""

    type: Literal["run_failed"] = "run_failed"
    reason: str
    error: str


def attempts_exhausted(run_id: str, claims: int, max_attempts: int) -> RunFailed:
    """The `RunFailed` a store's claim writes for a run claimed `max_attempts` times since it
    last suspended: every store writes the same record, so the message is defined once."""
    return RunFailed(
        reason="attempts_exhausted",
        error=(
            f"run {run_id} was claimed {claims} times without finishing (max_attempts="
            f"{max_attempts}); each attempt stopped (a crash, or a lease that expired) before the "
            "run ended. Read its log to see where the attempts stopped, fix the cause, and "
            "dispatch the request again."
        ),
    )


class RunCancelled(_Body):
    """The run was cancelled."""

    type: Literal["run_cancelled"] = "run_cancelled"
    reason: str = ""


class Offloaded(_Body):
    """A record body kept in the `BlobStore`, as the store holds it: the log keeps this.

    A body whose JSON is larger than the threshold (64 KiB by default: a big tool result, a
    long model message) is stored once as a content-addressed blob of the run's tenant, and
    the record keeps only this reference. Reads through `OffloadingStore` put the body back,
    so the reducer, reports and the model never see an `Offloaded`.

    Attributes:
        body_type: the ``type`` of the body it stands for.
        tenant: the tenant whose blobs hold it (the run's tenant).
        blob: the blob's reference, ``"sha256:" + hex`` of the body's JSON.
        size: the size of the body's JSON, in bytes.
    """

    type: Literal["offloaded"] = "offloaded"
    body_type: str
    tenant: str
    blob: str
    size: int = Field(ge=0)


Body = Annotated[
    RunAdmitted
    | AttemptStarted
    | ModelCallFinished
    | ModelCallFailed
    | ToolCallStarted
    | ToolCallFinished
    | ToolCallFailed
    | ToolCallSettled
    | ToolCallWaiting
    | ToolsUnavailable
    | ApprovalRequested
    | ApprovalDecided
    | SignalReceived
    | SignalIgnored
    | RunSuspended
    | ChildStarted
    | ChildFinished
    | OutputRejected
    | ConversationCompacted
    | CompactionFailed
    | StepsPlanned
    | RunCompleted
    | RunFailed
    | RunCancelled
    | Offloaded,
    Field(discriminator="type"),
]
"""Any record body."""


class Record(BaseModel):
    """One entry of a run's log."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    seq: int = Field(ge=0)
    attempt: int = Field(ge=0)
    at: dt.datetime
    # Serialised by the body's own class: pydantic's serializer for a union that holds a
    # `JsonValue` calls a Python function for every node of that value (a 4 KB step output
    # cost 130 us where its own class takes 19); the JSON is the same.
    body: SerializeAsAny[Body]


def finished_call(call_id: str, result: JsonValue) -> ToolCallFinished:
    """A `ToolCallFinished` for a result that is JSON already, without validating it again.

    `result` must be JSON already (dicts with string keys, lists, strings, numbers,
    booleans, None): what `pydantic_core.to_jsonable_python` returns, into which the runtime
    converts every tool's result, or a value a validated record holds (a resume's payload, a
    child run's output). Validating a `JsonValue` walks it node by node in Python, at about
    three times the cost of that conversion (a 4 KB result: some 220 us, where converting it
    costs 70); the body is equal to ``ToolCallFinished(call_id=..., result=...)`` and
    serialised to the same bytes. A result received from outside is validated.
    """
    fields = {"type": "tool_call_finished", "call_id": call_id, "result": result}
    return unvalidated(ToolCallFinished, fields, {"call_id", "result"})


def completed_run(output: JsonValue) -> RunCompleted:
    """A `RunCompleted` for an output that is JSON already, without validating it again
    (as `finished_call`): a workflow's output, which its planner takes from validated
    records and the run's parsed input (an agent's run completes with None). Equal to
    ``RunCompleted(output=output)`` and serialised to the same bytes."""
    fields = {"type": "run_completed", "output": output}
    return unvalidated(RunCompleted, fields, {"output"})


def made_record(run_id: str, seq: int, attempt: int, at: dt.datetime, body: Body) -> Record:
    """A `Record` of parts the runtime has just made from validated ones (its state's run id,
    seq and attempt, its clock's time, a body it built), without validating them again.

    Equal to ``Record(...)`` of the same parts and serialised to the same bytes, at half its
    cost; what `Record.model_construct` does, without its per-field loop (which costs more
    than the validation it skips). Records read or received from outside are validated.
    """
    fields = {"run_id": run_id, "seq": seq, "attempt": attempt, "at": at, "body": body}
    return unvalidated(Record, fields, set(fields))

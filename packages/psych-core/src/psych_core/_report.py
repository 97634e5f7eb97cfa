"""Reading a run back: `RunStatus` (what a screen draws) and `Report` (what happened).

Both are folds of the log; nothing here is stored.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from psych_core._fold import fold
from psych_core._records import (
    ApprovalDecided,
    ApprovalRequested,
    ChildStarted,
    CompactionFailed,
    ConversationCompacted,
    ModelCallFailed,
    ModelCallFinished,
    OutputRejected,
    Record,
    RunAdmitted,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from psych_core._spec import ASK_TOOL, AgentSpec
from psych_core._state import RunState, RunStatusName, WaitingReason
from psych_core._usage import Cost, CostSource, Usage, UsageSource
from psych_core._workflow_spec import WorkflowSpec
from psych_core._workflow_view import StepTry, workflow_view_of

ToolOutcome = Literal["succeeded", "failed", "unknown", "pending"]
"""How a tool call ended. ``unknown``: it started and its worker died before it reported."""


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Question(_View):
    """A question a run asks the user (its ``ask_user`` call) and waits to have answered.

    Attributes:
        call_id: the call that asks: answer it with ``answer(store, run_id, call_id, ...)``.
        question: what the model asked.
        options: the answers it offered to choose from; empty for free text.
    """

    call_id: str
    question: str
    options: tuple[str, ...] = ()


class RunStatus(_View):
    """A run's status: small and JSON-serialisable, what a screen draws.

    Attributes:
        waiting: what a ``waiting`` run waits for: ``approval``, ``external`` or ``children``.
        waiting_for: the calls it waits on (their ids, for `approve` and `deny`).
        due_at: when a timed wait ends.
        questions: the questions to the user it waits to have answered (``ask_user``).
    """

    run_id: str
    agent: str
    status: RunStatusName
    waiting: WaitingReason | None = None
    waiting_for: tuple[str, ...] = ()
    due_at: dt.datetime | None = None
    questions: tuple[Question, ...] = ()
    turns: int
    model_calls: int
    tool_calls: int
    attempt: int
    last_seq: int
    failure_reason: str | None = None
    error: str | None = None


def status_of(state: RunState) -> RunStatus:
    """The status of a folded state."""
    return RunStatus(
        run_id=state.run_id,
        agent=state.admitted.agent if state.admitted else "",
        status=state.status,
        waiting=state.waiting,
        waiting_for=_waiting_for(state),
        due_at=state.due_at if state.status == "waiting" else None,
        questions=questions_of(state),
        turns=state.turns,
        model_calls=state.model_calls,
        tool_calls=state.tool_calls,
        attempt=state.attempt,
        last_seq=state.last_seq,
        failure_reason=state.failure_reason,
        error=state.error,
    )


def questions_of(state: RunState) -> tuple[Question, ...]:
    """The user's questions the run waits on: its waiting ``ask_user`` calls, as asked."""
    spec = state.spec  # None when read without the spec (`status`): the tool's name says
    if spec is not None and not (isinstance(spec, AgentSpec) and spec.ask_user):
        return ()
    asked: list[Question] = []
    for call in state.calls:
        if call.phase != "waiting" or call.call.name != ASK_TOOL:
            continue
        try:
            arguments = json.loads(call.call.arguments)
        except ValueError:
            continue  # never started: the tool refuses arguments that are not JSON
        if not isinstance(arguments, dict):
            continue
        options = arguments.get("options") or ()
        asked.append(
            Question(
                call_id=call.call.call_id,
                question=str(arguments.get("question", "")),
                options=tuple(str(option) for option in options),
            )
        )
    return tuple(asked)


def _waiting_for(state: RunState) -> tuple[str, ...]:
    if state.status != "waiting":
        return ()
    phase = {"approval": "awaiting_approval", "external": "waiting", "children": "child"}.get(
        state.waiting or ""
    )
    return tuple(c.call.call_id for c in state.calls if c.phase == phase)


class ToolCallReport(_View):
    """One tool call and how it ended.

    Attributes:
        arguments: the arguments as parsed JSON, or the model's raw text when it was not JSON.
        result: the tool's result when it succeeded, whole (a result kept in the BlobStore is
            read back from it).
        result_bytes: the size of `result` as JSON, in bytes.
        error: why it failed, when it failed.
        reason: the failure's kind (``error``, ``unknown_tool``, ``invalid_arguments``, ...).
        starts: how many times it was started (more than one only for safe tools after a crash).
        approval_rule: why the call needed approval, when it did.
        approved: whether it was approved (None: no decision, or none needed).
        decided_by: who approved or denied it; `decided_at`: when that reached the run.
        decision_note: the approver's note, or the denial's reason.
        edited_arguments: the arguments the approver changed the call to.
    """

    call_id: str
    name: str
    arguments: JsonValue
    outcome: ToolOutcome
    result: JsonValue = None
    result_bytes: int | None = None
    error: str | None = None
    reason: str | None = None
    starts: int = 0
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    approval_rule: str | None = None
    approved: bool | None = None
    decided_by: str | None = None
    decided_at: dt.datetime | None = None
    decision_note: str | None = None
    edited_arguments: JsonValue = None


class RejectedOutput(_View):
    """A final answer that was rejected: not JSON, or not what the spec's `output_type` asks.

    Attributes:
        seq: the seq of the answer (its `ModelCallFinished`).
        try_number: 1 for the first answer to a user message that was rejected, 2 for the next.
        text: what the model answered.
        error: what was wrong, as the model was told it.
    """

    seq: int
    try_number: int
    text: str | None
    error: str


class Totals(_View):
    """What a run used and cost.

    Attributes:
        usage: tokens summed over every model call whose usage is known (the calls that
            summarised a compacted conversation among them).
        usage_sources: how many model calls reported usage from each source; ``missing``
            calls add nothing to `usage`, so a total with missing calls is a lower bound.
        cost: the summed cost of the model calls that answered, or None while any of them is
            unpriced, when calls were priced in different currencies (which do not add up),
            or when no call answered at all: with nothing a provider or a price table said,
            there is no cost to show, and never a made-up 0.
        unpriced_calls: how many model calls have no known cost.
        failed_calls: how many model call attempts failed (one `ModelCallFailed` each, and
            one `CompactionFailed` per summarising call that failed). They
            add no usage and no cost: most never reached a provider (refused by the egress,
            no connection), and the rest reported neither.
    """

    usage: Usage = Field(default_factory=Usage)
    usage_sources: dict[UsageSource, int] = Field(default_factory=dict)
    cost: Cost | None = None
    unpriced_calls: int = 0
    failed_calls: int = 0

    def __add__(self, other: Totals) -> Totals:
        sources = dict(self.usage_sources)
        for source, count in other.usage_sources.items():
            sources[source] = sources.get(source, 0) + count
        unpriced = self.unpriced_calls + other.unpriced_calls
        # A side where no call answered has no cost to add, rather than an unknown one.
        costs = [t.cost for t in (self, other) if t.usage_sources]
        cost = None
        if not unpriced and costs and None not in costs:
            cost = _sum_costs([c for c in costs if c is not None])
        return Totals(
            usage=self.usage + other.usage,
            usage_sources=sources,
            cost=cost,
            unpriced_calls=unpriced,
            failed_calls=self.failed_calls + other.failed_calls,
        )


class Report(_View):
    """What happened in a run, from its log.

    Attributes:
        totals: what this run and its subagents' runs used and cost, together.
        own_totals: what this run's own model calls used and cost.
        children: the child runs its subagent calls started (each has its own report).
        rejected_outputs: the final answers that were rejected, in order; the model was asked
            again after each, unless the run then failed with reason ``invalid_output``.
        steps: a workflow run's steps, one row per try, in the order they started (each
            try's call is in `tool_calls` too); empty for an agent run.
        continues: the run this one continues in its thread, if any.
        compactions: how many times its conversation was compacted (`AgentSpec.compaction`);
            every record summarised is still in the log and in this report.
    """

    run_id: str
    agent: str
    spec_version: str
    status: RunStatusName
    failure_reason: str | None = None
    error: str | None = None
    output: JsonValue = None
    turns: int
    model_calls: int
    tool_calls: tuple[ToolCallReport, ...]
    totals: Totals
    own_totals: Totals
    children: tuple[str, ...] = ()
    rejected_outputs: tuple[RejectedOutput, ...] = ()
    steps: tuple[StepTry, ...] = ()
    continues: str | None = None
    compactions: int = 0
    attempts: int
    started_at: dt.datetime
    ended_at: dt.datetime | None = None


def build_report(state: RunState, records: Iterable[Record]) -> Report:
    """The report of a run: `records` is its whole log, `state` an empty state to fold into."""
    records = list(records)
    spec = state.spec
    steps = workflow_view_of(spec, records).tries() if isinstance(spec, WorkflowSpec) else ()
    calls: dict[str, dict[str, object]] = {}
    started_at: dt.datetime | None = None
    last_at: dt.datetime | None = None
    usage = Usage()
    sources: dict[UsageSource, int] = {}
    costs: list[Cost] = []
    unpriced = 0
    failed = 0
    children: list[str] = []
    rejected: list[RejectedOutput] = []
    answer: tuple[int, str | None] = (-1, None)
    compactions = 0
    for record in records:
        state = fold(state, record)
        body = record.body
        last_at = record.at
        match body:
            case RunAdmitted():
                started_at = record.at
            case ModelCallFinished():
                answer = (record.seq, body.text)
                if body.usage is not None:
                    usage = usage + body.usage
                sources[body.usage_source] = sources.get(body.usage_source, 0) + 1
                if body.cost is None:
                    unpriced += 1
                else:
                    costs.append(body.cost)
                for call in body.tool_calls:
                    calls[call.call_id] = {
                        "call_id": call.call_id,
                        "name": call.name,
                        "arguments": _arguments(call.arguments),
                        "outcome": "pending",
                    }
            case StepsPlanned():
                # A workflow's step calls: one row per try of a step (and per wait between).
                for step_call in body.calls:
                    calls[step_call.call_id] = {
                        "call_id": step_call.call_id,
                        "name": step_call.name,
                        "arguments": _arguments(step_call.arguments),
                        "outcome": "pending",
                    }
            case ConversationCompacted():
                compactions += 1
                # The summarising call is a model call like any other: it uses and costs.
                if body.usage is not None:
                    usage = usage + body.usage
                sources[body.usage_source] = sources.get(body.usage_source, 0) + 1
                if body.cost is None:
                    unpriced += 1
                else:
                    costs.append(body.cost)
            case ModelCallFailed() | CompactionFailed():
                failed += 1
            case ToolCallStarted():
                entry = calls[body.call_id]
                entry["starts"] = int(str(entry.get("starts", 0))) + 1
                entry.setdefault("started_at", record.at)
            case ToolCallFinished():
                calls[body.call_id].update(
                    outcome="succeeded",
                    result=body.result,
                    result_bytes=len(json.dumps(body.result, ensure_ascii=False).encode()),
                    ended_at=record.at,
                )
            case ToolCallFailed():
                calls[body.call_id].update(
                    outcome="failed", error=body.error, reason=body.reason, ended_at=record.at
                )
            case ToolCallSettled():
                calls[body.call_id].update(outcome="unknown", ended_at=record.at)
            case ChildStarted():
                children.append(body.child_run_id)
            case OutputRejected():
                text = answer[1] if answer[0] == body.answer_seq else None
                rejected.append(
                    RejectedOutput(
                        seq=body.answer_seq, try_number=body.try_number, text=text, error=body.error
                    )
                )
            case ApprovalRequested():
                calls[body.call_id]["approval_rule"] = body.rule
            case ApprovalDecided():
                calls[body.call_id].update(
                    approved=body.approved,
                    decided_by=body.by,
                    decided_at=record.at,
                    decision_note=body.note if body.approved else body.reason,
                    edited_arguments=body.arguments,
                )
            case _:
                pass
    admitted = state.admitted
    if admitted is None or started_at is None:
        raise ValueError(f"run {state.run_id} has an empty log")
    totals = Totals(
        usage=usage,
        usage_sources=sources,
        cost=None if unpriced else _sum_costs(costs),
        unpriced_calls=unpriced,
        failed_calls=failed,
    )
    return Report(
        run_id=state.run_id,
        agent=admitted.agent,
        spec_version=admitted.spec_version,
        status=state.status,
        failure_reason=state.failure_reason,
        error=state.error,
        output=state.output,
        turns=state.turns,
        model_calls=state.model_calls,
        tool_calls=tuple(ToolCallReport.model_validate(entry) for entry in calls.values()),
        totals=totals,
        own_totals=totals,
        children=tuple(children),
        rejected_outputs=tuple(rejected),
        steps=steps,
        continues=admitted.continues,
        compactions=compactions,
        attempts=state.attempt,
        started_at=started_at,
        ended_at=last_at if state.ended else None,
    )


def _arguments(text: str) -> JsonValue:
    try:
        parsed: JsonValue = json.loads(text)
    except ValueError:
        return text
    return parsed


def _sum_costs(costs: list[Cost]) -> Cost | None:
    if not costs:
        # No call answered: no provider or price said anything, so no source can be named.
        return None
    currencies = {cost.currency for cost in costs}
    if len(currencies) != 1:
        return None
    kinds: set[CostSource] = {cost.source for cost in costs}
    source: CostSource = kinds.pop() if len(kinds) == 1 else "mixed"
    dates = [cost.as_of for cost in costs if cost.as_of is not None]
    return Cost(
        amount=sum((cost.amount for cost in costs), Decimal(0)),
        currency=currencies.pop(),
        source=source,
        as_of=min(dates) if dates else None,
    )

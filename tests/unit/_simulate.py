"""A pure simulator of a run's log: drives `next_action` with drawn outcomes and crashes."""

from __future__ import annotations

import datetime as dt
import json

from hypothesis import strategies as st

from psych_core import (
    CallModel,
    Complete,
    Fail,
    RejectOutput,
    RetryCalls,
    RunCalls,
    RunState,
    SettleCalls,
    StartCalls,
    fold,
    next_action,
)
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope, Usage
from psych_runtime.ports import ToolCall
from psych_runtime.records import (
    AttemptStarted,
    Body,
    ModelCallFinished,
    OutputRejected,
    Record,
    RunAdmitted,
    RunCompleted,
    RunFailed,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

SPEC = AgentSpec(
    name="sim",
    model=ModelRef(model="fake"),
    tools=(CodeTool(name="safe", safe_to_retry=True), CodeTool(name="unsafe")),
    max_turns=6,
)

STRUCTURED_SPEC = SPEC.model_copy(
    update={
        "name": "sim-structured",
        "output_type": {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
    }
)
"""`SPEC` with an output type, so answers can be rejected and asked for again."""

ANSWERS = ['{"ok": true}', '{"ok": "yes"}', "{}", "not json", "", "[1]"]
"""Final answers for `STRUCTURED_SPEC`: one valid, the rest rejected for different reasons."""


def simulate(data: st.DataObject, spec: AgentSpec = SPEC, run_id: str = "R1") -> list[Record]:
    """A valid log of a run of `spec`, with outcomes and crashes drawn from `data`."""
    state = RunState.empty(run_id, spec)
    records: list[Record] = []

    def add(body: Body, attempt: int) -> None:
        nonlocal state
        record = Record(
            run_id=run_id,
            seq=state.next_seq,
            attempt=attempt,
            at=T0 + dt.timedelta(seconds=state.next_seq),
            body=body,
        )
        state = fold(state, record)
        records.append(record)

    add(
        RunAdmitted(
            agent=spec.name, spec_version=spec.version, input="hello", scope=Scope(tenant="t")
        ),
        0,
    )
    attempt = 1
    add(AttemptStarted(worker_id="w1"), attempt)
    while not state.ended and len(records) < 120:
        if data.draw(st.integers(0, 9), label="crash") == 0:
            attempt += 1
            add(AttemptStarted(worker_id=f"w{attempt}"), attempt)
            continue
        action = next_action(state, T0 + dt.timedelta(seconds=state.next_seq))
        match action:
            case CallModel():
                names = data.draw(
                    st.lists(st.sampled_from(["safe", "unsafe", "missing"]), max_size=3),
                    label="calls",
                )
                calls = tuple(
                    ToolCall(call_id=f"{state.next_seq}.{i}", name=name, arguments='{"x": 1}')
                    for i, name in enumerate(names)
                )
                usage = Usage(input=data.draw(st.integers(0, 500)), output=7)
                texts = st.sampled_from(ANSWERS) if spec.output_type else st.text(max_size=20)
                add(
                    ModelCallFinished(
                        model="fake",
                        text=data.draw(texts, label="text"),
                        tool_calls=calls,
                        usage=usage,
                        usage_source="provider",
                    ),
                    attempt,
                )
            case StartCalls(calls):
                for call in calls:
                    if call.name == "missing":
                        add(
                            ToolCallFailed(call_id=call.call_id, reason="unknown_tool", error="no"),
                            attempt,
                        )
                    else:
                        add(ToolCallStarted(call_id=call.call_id, name=call.name), attempt)
            case RetryCalls(calls):
                for call in calls:
                    add(ToolCallStarted(call_id=call.call_id, name=call.name), attempt)
            case SettleCalls(calls):
                for call in calls:
                    add(ToolCallSettled(call_id=call.call_id), attempt)
            case RunCalls(calls):
                order = data.draw(st.permutations(list(calls)), label="order")
                for call in order[: data.draw(st.integers(1, len(order)), label="finished")]:
                    if data.draw(st.booleans(), label="ok"):
                        add(
                            ToolCallFinished(call_id=call.call_id, result={"ok": call.call_id}),
                            attempt,
                        )
                    else:
                        add(
                            ToolCallFailed(call_id=call.call_id, reason="error", error="boom"),
                            attempt,
                        )
            case RejectOutput(answer_seq, error, try_number):
                add(
                    OutputRejected(answer_seq=answer_seq, error=error, try_number=try_number),
                    attempt,
                )
            case Complete():
                add(RunCompleted(), attempt)
            case Fail(reason, error):
                add(RunFailed(reason=reason, error=error), attempt)
            case _:
                raise AssertionError(f"unexpected action {action!r}")
    return records


def completed_log(run_id: str = "R1") -> list[Record]:
    """A fixed log: one tool call that succeeds, then the answer."""
    bodies: list[tuple[Body, int]] = [
        (
            RunAdmitted(
                agent=SPEC.name, spec_version=SPEC.version, input="hi", scope=Scope(tenant="t")
            ),
            0,
        ),
        (AttemptStarted(worker_id="w1"), 1),
        (
            ModelCallFinished(
                model="fake",
                tool_calls=(ToolCall(call_id="2.0", name="safe", arguments="{}"),),
                usage=Usage(),
                usage_source="provider",
            ),
            1,
        ),
        (ToolCallStarted(call_id="2.0", name="safe"), 1),
        (ToolCallFinished(call_id="2.0", result="done"), 1),
        (ModelCallFinished(model="fake", text="All done.", usage_source="missing"), 1),
        (RunCompleted(), 1),
    ]
    return [
        Record(run_id=run_id, seq=seq, attempt=attempt, at=T0, body=body)
        for seq, (body, attempt) in enumerate(bodies)
    ]


def log_bytes(records: list[Record]) -> int:
    """The size of the log as a store keeps it (one JSON text per record)."""
    return sum(len(record.model_dump_json().encode()) for record in records)


def messages_json(state: RunState) -> str:
    """The conversation of a state, as comparable text."""
    return json.dumps([repr(message) for message in state.conversation.messages()])

"""`record_json` writes exactly the bytes `Record.model_dump_json` writes, for every body type,
and the body within them exactly as the body union's own serializer writes it (a record
serialises its body, a step plan its events, and a signal record and an inbox entry their
signal, by their own classes: the unions' serializer is slow); `made_record` (a record of
the runtime's own parts, not validated again) is the validated record, `finished_call` (a
tool's result made JSON, not validated again) and `completed_run` the validated bodies, and
so are the planner's `step_completed` and `state_set` the validated events."""

from __future__ import annotations

import datetime as dt
import typing
from decimal import Decimal

import pytest
from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from psych_core import (
    ApprovalDecided,
    ApprovalRequested,
    Approve,
    AssistantMessage,
    AttemptStarted,
    Body,
    Cancel,
    ChildEnded,
    ChildFinished,
    ChildStarted,
    CompactionFailed,
    Continued,
    ConversationCompacted,
    Cost,
    Deny,
    InboxEntry,
    ModelCallFailed,
    ModelCallFinished,
    Offloaded,
    OutputRejected,
    Record,
    Resume,
    RunAdmitted,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunSuspended,
    Scope,
    Signal,
    SignalIgnored,
    SignalReceived,
    StepsPlanned,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
    ToolsUnavailable,
    Usage,
    UserInput,
    UserMessage,
    completed_run,
    finished_call,
    made_record,
)
from psych_core._workflow_events import (
    EventTaken,
    ReplayOf,
    StateSet,
    StepCall,
    StepSettled,
    state_set,
    step_completed,
)
from psych_core.ports import record_json
from tests._bodies import BODY_TYPES

CALL = ToolCall(call_id="2.0", name="lookup", arguments='{"id": "ü ☃ \\"q\\""}')
TEXT = 'naïve ☃ 𝄞 "quoted" \\ \x00 </script>'

BODIES: list[Body] = [
    RunAdmitted(
        agent="support",
        spec_version="v1",
        input=TEXT,
        scope=Scope(tenant="acme", principal="ann", attributes={"plan": "pro", "n": "3"}),
        parent_run_id="01PARENT",
        parent_call_id="4.1",
        allowed_tools=("lookup",),
        breakpoints=("confirm",),
        step_mode=True,
        replay_of=ReplayOf(run_id="01OLD", from_step="confirm"),
        continues="01BEFORE",
        history=(UserMessage(TEXT), AssistantMessage("ok", (CALL,))),
        queued=("later",),
        history_tokens=120,
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ),
    RunAdmitted(agent="a", spec_version="v", input="", scope=Scope(tenant="t")),
    AttemptStarted(worker_id="w1"),
    ModelCallFinished(
        model="m",
        text=TEXT,
        tool_calls=(CALL,),
        usage=Usage(input=5, output=3, cache_read=2, reasoning=1),
        usage_source="provider",
        cost=Cost(amount=Decimal("0.0000004"), source="snapshot", as_of=dt.date(2026, 1, 1)),
        finish_reason="tool_calls",
        recalled=("fact-1",),
    ),
    ModelCallFinished(model="m"),
    ModelCallFailed(model="m", error="busy", status=429, retryable=True),
    ToolCallStarted(call_id="2.0", name="lookup", safe_to_retry=True),
    ToolCallStarted(call_id="2.0", name="lookup"),
    ToolCallFinished(
        call_id="2.0", result={"a": [1, 2.5, None, True, TEXT], "big": 2**70, "f": -0.0}
    ),
    ToolCallFinished(call_id="2.0", result=TEXT),
    ToolCallFailed(call_id="2.0", reason="error", error=TEXT),
    ToolCallSettled(call_id="2.0", note="timed out"),
    ToolCallWaiting(call_id="2.0", note="later", due_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
    ToolsUnavailable(source="mcp:files", error="down"),
    ApprovalRequested(call_id="2.0", rule="always"),
    ApprovalDecided(
        number=1, call_id="2.0", approved=False, by="ana", reason="no", arguments={"id": 1}
    ),
    SignalReceived(number=2, key="resume:1", signal=Resume(payload={"x": [1]}, call_id="2.0")),
    SignalReceived(number=3, key="input:1", signal=UserInput(text=TEXT, queue="follow_up")),
    SignalReceived(number=4, key="input:2", signal=UserInput(text="steer")),
    SignalIgnored(number=5, key="resume:2", reason="nothing waits"),
    RunSuspended(reason="approval", calls=("2.0",)),
    ChildStarted(call_id="2.1", child_run_id="01RUN-2.1"),
    ChildFinished(call_id="2.1", child_run_id="01RUN-2.1", status="failed"),
    OutputRejected(answer_seq=21, error="not JSON", try_number=1),
    ConversationCompacted(kept_from=2, summary=TEXT, tokens=10, model="small"),
    CompactionFailed(model="small", error="busy"),
    StepsPlanned(
        events=(
            StepSettled(key="a", status="completed", output={"ok": 1}),
            StateSet(key="b", values={"k": [1, "v"]}),
            EventTaken(key="c", name="paid"),
        ),
        calls=(StepCall(call_id="step:a", name="lookup", arguments='{"id": 1}'),),
        starts=1,
    ),
    RunCompleted(output={"answer": TEXT}),
    RunCompleted(),
    RunFailed(reason="max_turns", error=TEXT),
    RunCancelled(reason="enough"),
    Offloaded(body_type="tool_call_finished", tenant="acme", blob="blobs/1", size=10_000),
]

TIMES = [
    dt.datetime(2026, 12, 5, 9, 30, 1, 123456, tzinfo=dt.UTC),
    dt.datetime(2026, 12, 5, 9, 30, tzinfo=dt.UTC),
    dt.datetime(2026, 12, 5, 9, 30, 1, 5, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
]


_BODY_UNION = TypeAdapter(Body)


def test_every_body_type_is_sampled() -> None:
    assert {type(body) for body in BODIES} == set(BODY_TYPES)


@pytest.mark.parametrize("at", TIMES, ids=["micro", "whole", "offset"])
@pytest.mark.parametrize("body", BODIES, ids=lambda body: body.type)
def test_the_bytes_are_model_dump_json_s(body: Body, at: dt.datetime) -> None:
    record = Record(run_id="01RUN-é", seq=7, attempt=2, at=at, body=body)
    written = record_json(record)
    assert written == record.model_dump_json().encode()
    assert written.endswith(b',"body":' + _BODY_UNION.dump_json(body) + b"}")
    assert Record.model_validate_json(written) == record


@pytest.mark.parametrize("at", TIMES, ids=["micro", "whole", "offset"])
@pytest.mark.parametrize("body", BODIES, ids=lambda body: body.type)
def test_a_made_record_is_the_validated_one(body: Body, at: dt.datetime) -> None:
    made = made_record("01RUN-é", 7, 2, at, body)
    validated = Record(run_id="01RUN-é", seq=7, attempt=2, at=at, body=body)
    assert made == validated
    assert made.model_dump_json() == validated.model_dump_json()
    assert record_json(made) == record_json(validated)
    assert made.model_dump() == validated.model_dump()
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_copy(update={"seq": 8}) == validated.model_copy(update={"seq": 8})
    with pytest.raises(ValidationError):
        made.seq = 9  # type: ignore[misc]  # frozen, as the validated record is


class _Order(BaseModel):
    id: str
    total: Decimal
    at: dt.datetime


RESULTS: list[object] = [
    None,
    True,
    0,
    -(2**70),
    1.5e-7,
    float("inf"),
    TEXT,
    [],
    {},
    {TEXT: [TEXT, {"nested": [1, 2.5, None, False]}], "": ""},
    (1, "two", (3,)),
    {3: "a key that is a number", "set": frozenset({"x"})},
    _Order(id="A1", total=Decimal("9.50"), at=TIMES[0]),
    [_Order(id=str(n), total=Decimal(n), at=TIMES[1]) for n in range(40)],
]


@pytest.mark.parametrize("result", RESULTS, ids=lambda result: type(result).__name__)
def test_a_finished_call_is_the_validated_body(result: object) -> None:
    value = to_jsonable_python(result)  # what the attempt records: `json_result`'s value
    made = finished_call("2.0", value)
    validated = ToolCallFinished(call_id="2.0", result=value)
    assert made == validated
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_dump() == validated.model_dump()
    assert made.model_fields_set == validated.model_fields_set
    record = made_record("01RUN", 3, 1, TIMES[0], made)
    assert record_json(record) == record_json(made_record("01RUN", 3, 1, TIMES[0], validated))
    assert made.model_copy(update={"call_id": "2.1"}) == validated.model_copy(
        update={"call_id": "2.1"}
    )
    with pytest.raises(ValidationError):
        made.call_id = "9.9"  # type: ignore[misc]  # frozen, as the validated body is


@pytest.mark.parametrize("output", RESULTS, ids=lambda result: type(result).__name__)
def test_a_completed_step_is_the_validated_event(output: object) -> None:
    value = to_jsonable_python(output)  # a call's result as the runtime records it
    made = step_completed("orders[3].charge", value)
    validated = StepSettled(key="orders[3].charge", status="completed", output=value)
    _same_event(made, validated)


@pytest.mark.parametrize("output", RESULTS, ids=lambda result: type(result).__name__)
def test_a_state_set_is_the_validated_event(output: object) -> None:
    values: dict[str, JsonValue] = {"total": to_jsonable_python(output), "n": 1}
    _same_event(state_set("remember", values), StateSet(key="remember", values=values))


def _same_event(made: StepSettled | StateSet, validated: StepSettled | StateSet) -> None:
    assert made == validated
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_dump() == validated.model_dump()
    assert made.model_fields_set == validated.model_fields_set
    plans = [StepsPlanned(events=(event,)) for event in (made, validated)]
    records = [made_record("01RUN", 3, 1, TIMES[0], plan) for plan in plans]
    assert record_json(records[0]) == record_json(records[1])
    assert made.model_copy(update={"key": "other"}) == validated.model_copy(update={"key": "other"})
    with pytest.raises(ValidationError):
        made.key = "other"  # type: ignore[misc]  # frozen, as the validated event is


@pytest.mark.parametrize("output", RESULTS, ids=lambda result: type(result).__name__)
def test_a_completed_run_is_the_validated_body(output: object) -> None:
    value = to_jsonable_python(output)  # a workflow's output: JSON, as its steps' are
    made, validated = completed_run(value), RunCompleted(output=value)
    assert made == validated
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_fields_set == validated.model_fields_set
    records = [made_record("01RUN", 9, 1, TIMES[0], body) for body in (made, validated)]
    assert record_json(records[0]) == record_json(records[1])
    with pytest.raises(ValidationError):
        made.output = None  # type: ignore[misc]  # frozen, as the validated body is


SIGNALS: list[Signal] = [
    Approve(call_id="2.0", by="ana", note=TEXT, arguments={"amount": [1, 2.5, None]}),
    Deny(call_id="2.0", by="ana", reason=TEXT),
    Resume(payload={"x": [1, {"y": TEXT}]}, call_id="2.0"),
    Resume(payload=None, event="paid", breakpoint=True),
    Cancel(reason=TEXT, by="ops"),
    UserInput(text=TEXT, queue="follow_up"),
    UserInput(text="steer"),
    ChildEnded(child_run_id="01RUN-2.1", call_id="2.1", status="completed"),
    Continued(continuation="01NEXT"),
]


def test_every_signal_type_is_sampled() -> None:
    union = typing.get_args(Signal)[0]
    assert {type(signal) for signal in SIGNALS} == set(typing.get_args(union))


@pytest.mark.parametrize("signal", SIGNALS, ids=lambda signal: signal.kind)
def test_a_signal_is_written_as_the_signal_union_writes_it(signal: Signal) -> None:
    # An inbox entry and a signal record serialise the signal by its own class; the bytes
    # are the union's.
    union = TypeAdapter(Signal).dump_json(signal)
    entry = InboxEntry(run_id="01RUN", number=3, key="k", signal=signal, at=TIMES[0])
    assert b',"signal":' + union + b',"at":' in entry.model_dump_json().encode()
    assert InboxEntry.model_validate_json(entry.model_dump_json()) == entry
    received = SignalReceived(number=3, key="k", signal=signal)
    assert received.model_dump_json().encode().endswith(b',"signal":' + union + b"}")

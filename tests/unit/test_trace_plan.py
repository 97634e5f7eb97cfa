"""The trace a run's log makes: trace context, derived ids, and the span plan fold."""

from __future__ import annotations

import datetime as dt

import pytest

from psych_core import (
    TRACE_MAP,
    ApprovalDecided,
    ApprovalRequested,
    AttemptStarted,
    Body,
    ChildFinished,
    ChildStarted,
    CompactionFailed,
    ConversationCompacted,
    ModelCallFailed,
    ModelCallFinished,
    OutputRejected,
    PlanContext,
    Record,
    Resume,
    RunAdmitted,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunSuspended,
    Scope,
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
    TraceParent,
    TraceView,
    Usage,
    child_traceparent,
    derived_trace_id,
    fold_view,
    parse_traceparent,
    plan_batch,
    run_trace_id,
    span_id_of,
)
from tests._bodies import BODY_TYPES

T0 = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
RUN = "01RUN"
CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def record(seq: int, body: Body, seconds: float, attempt: int = 1) -> Record:
    return Record(run_id=RUN, seq=seq, attempt=attempt, at=at(seconds), body=body)


def admitted(traceparent: str | None = None) -> Record:
    body = RunAdmitted(
        agent="support",
        spec_version="sha256:x",
        input="hi",
        scope=Scope(tenant="t"),
        traceparent=traceparent,
    )
    return record(0, body, 0, attempt=0)


def test_every_record_type_is_mapped() -> None:
    types = {body.model_fields["type"].default for body in BODY_TYPES}
    assert types == set(TRACE_MAP)


def test_traceparent_round_trips_and_refuses_what_is_not_one() -> None:
    parent = parse_traceparent(CALLER)
    assert parent == TraceParent(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True)
    assert str(parent) == CALLER
    unsampled = parse_traceparent(CALLER[:-2] + "00")
    assert unsampled is not None
    assert not unsampled.sampled
    for bad in (
        None,
        "",
        "garbage",
        "00-" + "0" * 32 + "-00f067aa0ba902b7-01",  # zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",  # zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # forbidden version
    ):
        assert parse_traceparent(bad) is None, bad


def test_ids_are_derived_stable_and_distinct() -> None:
    assert derived_trace_id(RUN) == derived_trace_id(RUN)
    assert derived_trace_id(RUN) != derived_trace_id("01OTHER")
    ids = {span_id_of(RUN, what) for what in ("run", "seq:2", "seq:3", "call:2.0", "call:2.1")}
    assert len(ids) == 5
    assert all(0 < span_id < 2**64 for span_id in ids)
    assert run_trace_id(RUN, None) == derived_trace_id(RUN)
    assert run_trace_id(RUN, CALLER) == 0x4BF92F3577B34DA6A3CE929D0E0E4736


def test_a_child_is_admitted_under_its_parents_call() -> None:
    child = parse_traceparent(child_traceparent(RUN, CALLER, "2.0"))
    assert child is not None
    assert child.trace_id == run_trace_id(RUN, CALLER)
    assert child.span_id == span_id_of(RUN, "call:2.0")


def test_a_batch_plans_what_it_ended_with_the_logs_times() -> None:
    context = PlanContext(provider="openai", request_model="gpt-x")
    view = fold_view(
        TraceView.empty(RUN),
        [admitted(CALLER), record(1, AttemptStarted(worker_id="w1"), 1)],
        context,
    )
    call = ToolCall(call_id="2.0", name="lookup", arguments='{"id": 1}')
    reply = ModelCallFinished(
        model="gpt-x-2026",
        tool_calls=(call,),
        usage=Usage(input=10, output=5, cache_read=90),
        usage_source="provider",
        finish_reason="tool_calls",
    )
    view, spans = plan_batch(
        view,
        [record(2, reply, 3), record(3, ToolCallStarted(call_id="2.0", name="lookup"), 3)],
        context,
    )
    [chat] = spans
    assert chat.name == "chat gpt-x"
    assert (chat.start, chat.end) == (at(1), at(3))  # from the commit before the call
    assert chat.parent_id == span_id_of(RUN, "run")
    assert chat.trace_id == run_trace_id(RUN, CALLER)
    assert chat.attributes["gen_ai.usage.input_tokens"] == 100  # the whole prompt
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 90
    assert chat.attributes["gen_ai.response.model"] == "gpt-x-2026"
    assert "gen_ai.output.messages" not in chat.attributes
    view, spans = plan_batch(
        view, [record(4, ToolCallFinished(call_id="2.0", result=1), 7)], context
    )
    [tool] = spans
    assert (tool.name, tool.start, tool.end) == ("execute_tool lookup", at(3), at(7))
    assert tool.attributes["psych.tool.outcome"] == "finished"
    view, spans = plan_batch(view, [record(5, RunCompleted(), 8)], context)
    [run] = spans
    assert (run.name, run.start, run.end) == ("invoke_agent support", at(0), at(8))
    assert run.parent_id == 0x00F067AA0BA902B7
    assert run.remote_parent
    assert [event.name for event in run.events] == ["psych.attempt"]


def test_missing_usage_is_not_measured_as_zero() -> None:
    view = fold_view(TraceView.empty(RUN), [admitted()], PlanContext())
    reply = ModelCallFinished(model="m", text="hi", usage=None, usage_source="missing")
    _, [chat] = plan_batch(view, [record(1, reply, 1)], PlanContext())
    assert "gen_ai.usage.input_tokens" not in chat.attributes
    assert chat.attributes["psych.usage.source"] == "missing"


def test_an_attempt_after_an_interruption_says_so() -> None:
    log = [
        admitted(),
        record(1, AttemptStarted(worker_id="w1"), 1),
        record(
            2,
            ModelCallFinished(
                model="m", tool_calls=(ToolCall(call_id="2.0", name="pay", arguments="{}"),)
            ),
            2,
        ),
        record(3, ToolCallStarted(call_id="2.0", name="pay"), 2),
        # worker w1 was killed here; w2 claims the run when the lease expires
        record(4, AttemptStarted(worker_id="w2"), 40, attempt=2),
        record(5, ToolCallSettled(call_id="2.0", note="started by attempt 1"), 40, attempt=2),
    ]
    view = fold_view(TraceView.empty(RUN), log[:4], PlanContext())
    view, [tool] = plan_batch(view, log[4:], PlanContext())
    assert tool.attributes["psych.tool.outcome"] == "unknown"
    assert (tool.start, tool.end) == (at(2), at(40))  # the gap is visible
    attempts = [event.attributes for event in view.events if event.name == "psych.attempt"]
    assert [a["psych.attempt.after"] for a in attempts] == ["admission", "interruption"]


def test_a_suspension_and_a_failed_run() -> None:
    log = [
        admitted(),
        record(1, AttemptStarted(worker_id="w1"), 1),
        record(2, ApprovalRequested(call_id="2.0", rule="always"), 2),
        record(3, RunSuspended(reason="approval", calls=("2.0",)), 2),
        record(4, AttemptStarted(worker_id="w2"), 3600, attempt=2),
        record(5, ModelCallFailed(model="m", error="boom", status=503), 3601, attempt=2),
        record(6, RunFailed(reason="model_error", error="boom"), 3601, attempt=2),
    ]
    view = fold_view(TraceView.empty(RUN), log[:5], PlanContext())
    _, (chat, run) = plan_batch(view, log[5:], PlanContext())
    assert chat.error == "503"
    assert run.error == "model_error"
    assert run.attributes["psych.run.status"] == "failed"
    names = [event.name for event in run.events]
    assert names == [
        "psych.attempt",
        "psych.approval.requested",
        "psych.suspended",
        "psych.attempt",
    ]
    assert run.events[-1].attributes["psych.attempt.after"] == "suspension"


@pytest.mark.parametrize("content", [False, True])
def test_content_only_when_asked(content: bool) -> None:
    context = PlanContext(content=content)
    call = ToolCall(call_id="1.0", name="lookup", arguments='{"id": 7}')
    log = [
        admitted(),
        record(1, ModelCallFinished(model="m", text="Checking", tool_calls=(call,)), 1),
        record(2, ToolCallStarted(call_id="1.0", name="lookup"), 1),
    ]
    view = fold_view(TraceView.empty(RUN), log[:1], context)
    view, [chat] = plan_batch(view, log[1:], context)
    view, [tool] = plan_batch(
        view, [record(3, ToolCallFinished(call_id="1.0", result={"ok": 1}), 2)], context
    )
    _, [run] = plan_batch(view, [record(4, RunCompleted(), 3)], context)
    assert ("gen_ai.output.messages" in chat.attributes) is content
    assert ("gen_ai.tool.call.arguments" in tool.attributes) is content
    assert ("gen_ai.input.messages" in run.attributes) is content
    if content:
        assert tool.attributes["gen_ai.tool.call.arguments"] == '{"id": 7}'
        assert tool.attributes["gen_ai.tool.call.result"] == '{"ok": 1}'


def test_every_record_type_becomes_what_trace_map_declares() -> None:
    call = ToolCall(call_id="2.0", name="lookup", arguments="{}")
    bodies: list[Body] = [
        AttemptStarted(worker_id="w1"),
        ToolsUnavailable(source="mcp:files", error="down"),
        ModelCallFailed(model="m", error="busy", status=429, retryable=True),
        ModelCallFinished(model="m", tool_calls=(call,)),
        ApprovalRequested(call_id="2.0", rule="always"),
        RunSuspended(reason="approval", calls=("2.0",)),
        AttemptStarted(worker_id="w2"),
        ApprovalDecided(number=1, call_id="2.0", approved=True, by="ana"),
        ToolCallStarted(call_id="2.0", name="lookup"),
        ToolCallWaiting(call_id="2.0", note="later"),
        SignalReceived(number=2, key="resume:1", signal=Resume(payload=1, call_id="2.0")),
        SignalIgnored(number=3, key="resume:2", reason="nothing waits"),
        ToolCallFinished(call_id="2.0", result=1),
        ToolCallStarted(call_id="2.1", name="helper"),
        ChildStarted(call_id="2.1", child_run_id="01RUN-2.1"),
        ChildFinished(call_id="2.1", child_run_id="01RUN-2.1", status="failed"),
        ToolCallFailed(call_id="2.1", reason="error", error="child failed"),
        ToolCallStarted(call_id="2.2", name="pay"),
        ToolCallSettled(call_id="2.2", note="timed out"),
        ConversationCompacted(kept_from=2, summary="so far", tokens=10, model="small"),
        CompactionFailed(model="small", error="busy"),
        ModelCallFinished(model="m", text="done"),
        OutputRejected(answer_seq=21, error="not JSON", try_number=1),
        StepsPlanned(),
        RunCancelled(reason="enough"),
    ]
    log = [admitted()] + [record(seq, body, seq) for seq, body in enumerate(bodies, start=1)]
    covered = {r.body.type for r in log} | {"run_completed", "run_failed", "offloaded"}
    assert covered == set(TRACE_MAP)  # the log below holds every type but those three
    view = TraceView.empty(RUN)
    planned: dict[int, list[str]] = {}
    for one in log:
        before = len(view.events)
        view, spans = plan_batch(view, [one], PlanContext())
        planned[one.seq] = [span.name.split()[0] for span in spans]
        declared = TRACE_MAP[one.body.type].split()
        where = f"seq {one.seq} ({one.body.type})"
        if declared[0] == "event":
            assert [e.name for e in view.events[before:]] == [declared[1]], where
            assert view.events[-1].at == one.at, where
        elif declared[0] == "span":
            kinds = [word for word in declared[1:] if word != "/"]  # an agent's or a workflow's
            assert len(planned[one.seq]) == 1, where
            assert planned[one.seq][0] in kinds, where
        else:
            assert planned[one.seq] == [], where
    assert planned[25] == ["invoke_workflow"]  # it planned steps: a workflow's run

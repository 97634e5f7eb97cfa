"""A simulator of logs with approvals, waits, subagents and signals arriving at any moment.

It drives `next_action` like the runtime does, writes the decisions' records by hand, and moves
drawn inbox entries in through `receive`, so the reducer meets every interleaving hypothesis
finds: a cancel while calls wait for approval, a message while a child runs, a resume that no
longer applies.
"""

from __future__ import annotations

import datetime as dt

from hypothesis import strategies as st

from psych_core import (
    AgentSpec,
    AgentTool,
    ApprovalRequested,
    Approve,
    AssistantMessage,
    AttemptStarted,
    Body,
    CallModel,
    Cancel,
    CancelRun,
    ChildEnded,
    ChildFinished,
    ChildStarted,
    CodeTool,
    CollectChildren,
    Compact,
    Compaction,
    CompactionFailed,
    Complete,
    ConversationCompacted,
    Deny,
    DenyCalls,
    Fail,
    Finished,
    FinishResumed,
    InboxEntry,
    ModelCallFinished,
    ModelRef,
    OutputRejected,
    Record,
    RejectOutput,
    Resume,
    RetryCalls,
    RunAdmitted,
    RunCalls,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunState,
    RunSuspended,
    Scope,
    SettleCalls,
    Signal,
    StartApproved,
    StartCalls,
    Suspend,
    TimeOutWaits,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
    ToolResultMessage,
    Usage,
    UserInput,
    UserMessage,
    fold,
    next_action,
    receive,
)

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

SPEC = AgentSpec(
    name="sim",
    model=ModelRef(model="fake"),
    tools=(
        CodeTool(name="safe", safe_to_retry=True),
        CodeTool(name="unsafe"),
        CodeTool(name="gated", requires_approval=True),
        CodeTool(name="waiter"),
        AgentTool(name="helper", spec=AgentSpec(name="child", model=ModelRef(model="fake"))),
    ),
    max_turns=5,
)
NAMES = ["safe", "unsafe", "gated", "waiter", "helper", "missing"]

STRUCTURED_SPEC = SPEC.model_copy(
    update={
        "name": "sim-structured",
        "output_type": {"type": "object", "required": ["ok"]},
        "output_retries": 1,
    }
)
"""`SPEC` with an output type: answers may be rejected while signals arrive."""

CONVERSATION_SPEC = SPEC.model_copy(
    update={
        "name": "sim-conversation",
        "ask_user": True,
        "compaction": Compaction(threshold_tokens=40, keep_turns=1),
    }
)
"""`SPEC` as a lasting conversation: a continuation (carried history, queued messages),
questions to the user, messages on every queue, and compaction past a measured size."""


class Simulation:
    def __init__(self, data: st.DataObject, run_id: str = "R1", spec: AgentSpec = SPEC) -> None:
        self.data = data
        self.spec = spec
        self.state = RunState.empty(run_id, spec)
        self.records: list[Record] = []
        self.inbox = 0
        self.attempt = 0
        self.conversation = spec.compaction is not None

    def add(self, body: Body) -> None:
        record = Record(
            run_id=self.state.run_id,
            seq=self.state.next_seq,
            attempt=self.attempt,
            at=T0 + dt.timedelta(seconds=self.state.next_seq),
            body=body,
        )
        self.state = fold(self.state, record)
        self.records.append(record)

    def signal(self, signal: Signal) -> None:
        """An inbox entry arrives and the attempt moves it in."""
        self.inbox += 1
        entry = InboxEntry(
            run_id=self.state.run_id, number=self.inbox, key=f"k{self.inbox}", signal=signal, at=T0
        )
        self.add(receive(self.state, entry))

    def claim(self) -> None:
        self.attempt += 1
        self.add(AttemptStarted(worker_id=f"w{self.attempt}"))

    def any_signal(self) -> Signal:
        call_ids = [c.call.call_id for c in self.state.calls] or ["0.0"]
        call_id = self.data.draw(st.sampled_from(call_ids), label="signal call")
        options: list[Signal] = [
            Approve(call_id=call_id, by="ana"),
            Deny(call_id=call_id, by="bo", reason="no"),
            Resume(payload={"ok": True}),
            Cancel(reason="stop"),
            UserInput(text="also this"),
            *(
                [
                    UserInput(text="and then", queue="follow_up"),
                    UserInput(text="next time", queue="next_run"),
                ]
                if self.conversation
                else []
            ),
            ChildEnded(child_run_id=f"R1-{call_id}", call_id=call_id, status="completed"),
        ]
        return self.data.draw(st.sampled_from(options), label="signal")

    def run(self) -> list[Record]:
        carried: tuple[UserMessage | AssistantMessage | ToolResultMessage, ...] = ()
        queued: tuple[str, ...] = ()
        if self.conversation and self.data.draw(st.booleans(), label="continues"):
            call = ToolCall(call_id="2.0", name="safe", arguments="{}")
            carried = (
                UserMessage("earlier"),
                AssistantMessage(None, (call,)),
                ToolResultMessage("2.0", "safe", "ok"),
                AssistantMessage("answered"),
            )
            queued = ("kept for you",)
        self.add(
            RunAdmitted(
                agent=self.spec.name,
                spec_version=self.spec.version,
                input="hi",
                scope=Scope(tenant="t"),
                continues="R0" if carried else None,
                history=carried,
                queued=queued,
                history_tokens=self.data.draw(st.sampled_from([None, 45]), label="measured")
                if carried
                else None,
            )
        )
        self.claim()
        while not self.state.ended and len(self.records) < 150:
            roll = self.data.draw(st.integers(0, 19), label="event")
            if roll == 0 and self.state.status != "waiting":
                self.claim()  # a crash: a new attempt takes the run over
                continue
            if roll == 1 and self.state.status != "waiting":
                self.signal(self.any_signal())
                continue
            if self.state.status == "waiting":
                self.claim()
                self.signal(self.any_signal())
                continue
            now = T0 + dt.timedelta(seconds=self.state.next_seq)
            self.step(next_action(self.state, now))
        return self.records

    def step(self, action: object) -> None:
        draw = self.data.draw
        match action:
            case CallModel():
                names = draw(
                    st.lists(st.sampled_from(NAMES + ["ask_user"] * self.conversation), max_size=3),
                    label="calls",
                )
                calls = tuple(
                    ToolCall(call_id=f"{self.state.next_seq}.{i}", name=name, arguments="{}")
                    for i, name in enumerate(names)
                )
                texts = ["done", "working"]
                if self.spec.output_type is not None:
                    texts += ['{"ok": 1}', "[]"]
                text = draw(st.sampled_from(texts), label="text")
                usage = None
                if self.conversation:
                    size = draw(st.sampled_from([None, 10, 30, 60]), label="size")
                    usage = None if size is None else Usage(input=size, output=5)
                self.add(ModelCallFinished(model="fake", text=text, tool_calls=calls, usage=usage))
            case Compact(kept_from):
                if draw(st.booleans(), label="summarised"):
                    self.add(
                        ConversationCompacted(
                            kept_from=kept_from,
                            summary="so far",
                            tokens=self.state.context_tokens or 0,
                            model="fake",
                        )
                    )
                else:
                    self.add(CompactionFailed(model="fake", error="down"))
            case StartCalls(calls):
                for call in calls:
                    if call.name == "missing":
                        self.add(
                            ToolCallFailed(call_id=call.call_id, reason="unknown_tool", error="no")
                        )
                    elif call.name == "gated":
                        self.add(
                            ApprovalRequested(call_id=call.call_id, rule="requires_approval=True")
                        )
                    else:
                        self.add(ToolCallStarted(call_id=call.call_id, name=call.name))
            case StartApproved(calls):
                for c in calls:
                    self.add(ToolCallStarted(call_id=c.call.call_id, name=c.call.name))
            case DenyCalls(calls):
                for c in calls:
                    self.add(ToolCallFailed(call_id=c.call.call_id, reason="denied", error="no"))
            case FinishResumed(calls):
                for c in calls:
                    self.add(ToolCallFinished(call_id=c.call.call_id, result=c.payload))
            case TimeOutWaits(calls):
                for c in calls:
                    self.add(ToolCallFinished(call_id=c.call.call_id, result={"timed_out": True}))
            case RetryCalls(calls):
                for call in calls:
                    self.add(ToolCallStarted(call_id=call.call_id, name=call.name))
            case SettleCalls(calls):
                for call in calls:
                    self.add(ToolCallSettled(call_id=call.call_id))
            case RunCalls(calls):
                for call in calls:
                    if call.name in ("waiter", "ask_user"):
                        # Sometimes a timed wait, due a few records from now: it times out
                        # unless a resume comes first.
                        ahead = draw(st.sampled_from([None, 2, 5]), label="due in")
                        due = (
                            None
                            if ahead is None
                            else T0 + dt.timedelta(seconds=self.state.next_seq + ahead)
                        )
                        self.add(ToolCallWaiting(call_id=call.call_id, note="parcel", due_at=due))
                    elif call.name == "helper":
                        self.add(
                            ChildStarted(call_id=call.call_id, child_run_id=f"R1-{call.call_id}")
                        )
                    elif draw(st.booleans(), label="ok"):
                        self.add(ToolCallFinished(call_id=call.call_id, result="ok"))
                    else:
                        self.add(ToolCallFailed(call_id=call.call_id, reason="error", error="boom"))
            case CollectChildren(calls):
                for c in calls:
                    child = c.child_run_id or "?"
                    self.add(
                        ChildFinished(
                            call_id=c.call.call_id, child_run_id=child, status="completed"
                        )
                    )
                    self.add(ToolCallFinished(call_id=c.call.call_id, result="child says hi"))
            case Suspend(reason, calls, due_at):
                ids = tuple(c.call.call_id for c in calls)
                self.add(RunSuspended(reason=reason, due_at=due_at, calls=ids))
            case CancelRun(reason, never, began):
                for c in never:
                    self.add(ToolCallFailed(call_id=c.call.call_id, reason="cancelled", error="x"))
                for c in began:
                    self.add(ToolCallSettled(call_id=c.call.call_id))
                self.add(RunCancelled(reason=reason))
            case RejectOutput(answer_seq, error, try_number):
                self.add(OutputRejected(answer_seq=answer_seq, error=error, try_number=try_number))
            case Complete():
                self.add(RunCompleted())
            case Fail(reason, error):
                self.add(RunFailed(reason=reason, error=error))
            case Finished():
                raise AssertionError("a running state has something to do")
            case _:
                raise AssertionError(f"unexpected action {action!r}")

"""The reducer's rules for workflow runs: events and answers aimed at waiting steps (and kept
when they come early), and the records that do not fit a workflow's log."""

from __future__ import annotations

from typing import Any

import pytest

from psych_core import (
    AgentSpec,
    AttemptStarted,
    Body,
    CodeTool,
    CorruptLog,
    FinishResumed,
    ForeachStep,
    HumanStep,
    InboxEntry,
    ItemStarted,
    Lit,
    ModelCallFinished,
    ModelRef,
    PlanSteps,
    Record,
    Resume,
    RunAdmitted,
    RunState,
    Scope,
    Signal,
    SignalIgnored,
    SignalReceived,
    StepSettled,
    StepsPlanned,
    ToolCallStarted,
    ToolCallWaiting,
    ToolStep,
    UserInput,
    WaitStep,
    WorkflowSpec,
    fold,
    next_action,
    receive,
)
from tests.unit._simulate_workflow import T0, Ok, Simulation, settled, simulate

TOOL = CodeTool(name="work")


class Log:
    """A workflow run's log written by hand, one decision or record at a time."""

    def __init__(self, spec: WorkflowSpec, *, spec_known: bool = True) -> None:
        self.spec = spec
        self.state = RunState.empty("W1", spec if spec_known else None)
        self.numbers = 0
        self.add(
            RunAdmitted(
                agent=spec.name, spec_version=spec.version, input="{}", scope=Scope(tenant="t")
            )
        )
        self.add(AttemptStarted(worker_id="w1"), attempt=1)

    def add(self, body: Body, attempt: int | None = None) -> RunState:
        record = Record(
            run_id="W1",
            seq=self.state.next_seq,
            attempt=self.state.attempt if attempt is None else attempt,
            at=T0,
            body=body,
        )
        self.state = fold(self.state, record)
        return self.state

    def plan(self) -> StepsPlanned:
        action = next_action(self.state, T0)
        assert isinstance(action, PlanSteps), action
        self.add(action.planned)
        return action.planned

    def signal(self, signal: Signal) -> Body:
        self.numbers += 1
        entry = InboxEntry(
            run_id="W1", number=self.numbers, key=f"k{self.numbers}", signal=signal, at=T0
        )
        body = receive(self.state, entry)
        self.add(body)
        return body


def test_an_event_that_comes_before_its_wait_step_is_kept_and_taken_once() -> None:
    spec = WorkflowSpec(
        name="wf",
        steps=(
            ToolStep(name="first", tool=TOOL),
            WaitStep(name="w1", event="go"),
            WaitStep(name="w2", event="go"),
        ),
    )
    log = Log(spec)
    log.plan()
    # Two events arrive while the tool step runs: neither wait step waits yet.
    assert isinstance(log.signal(Resume(event="go", payload=1)), SignalReceived)
    assert isinstance(log.signal(Resume(event="go", payload=2)), SignalReceived)
    assert log.state.workflow is not None and log.state.workflow.events == {"go": (1, 2)}
    log.add(ToolCallStarted(call_id="first", name="work"))
    from psych_core import ToolCallFinished

    log.add(ToolCallFinished(call_id="first", result="done"))
    planned = log.plan()
    # Both waits took their event in the plan, in order, without a call.
    assert [e.type for e in planned.events] == [
        "settled",
        "event_taken",
        "settled",
        "event_taken",
        "settled",
    ]
    assert planned.calls == ()
    assert log.state.workflow is not None and log.state.workflow.events == {}
    assert log.state.workflow.results["w1"].output == 1
    assert log.state.workflow.results["w2"].output == 2


def test_an_event_that_comes_between_a_waits_start_and_its_wait_ends_it_at_once() -> None:
    log = Log(WorkflowSpec(name="wf", steps=(WaitStep(name="w", event="go"),)))
    log.plan()
    log.add(ToolCallStarted(call_id="w", name="psych:wait"))
    assert isinstance(log.signal(Resume(event="go", payload={"ok": True})), SignalReceived)
    log.add(ToolCallWaiting(call_id="w"))
    waiting = log.state.call("w")
    assert waiting is not None and waiting.phase == "resumed"
    action = next_action(log.state, T0)
    assert isinstance(action, FinishResumed) and action.calls[0].payload == {"ok": True}


def test_an_event_no_wait_step_waits_for_and_a_user_message_are_ignored() -> None:
    log = Log(WorkflowSpec(name="wf", steps=(WaitStep(name="w", event="go"),)))
    ignored = log.signal(Resume(event="other", payload=1))
    assert isinstance(ignored, SignalIgnored)
    assert ignored.reason == "no step of this run waits for event 'other'"
    message = log.signal(UserInput(text="hello"))
    assert isinstance(message, SignalIgnored)
    assert message.reason == "a workflow run takes no user messages"


def test_an_answer_names_its_step_or_the_memo_key_of_the_one_waiting() -> None:
    spec = WorkflowSpec(
        name="wf",
        steps=(
            ForeachStep(
                name="orders",
                items=Lit([1, 2]),
                concurrency=2,
                steps=(HumanStep(name="ok", question="Ship?"),),
            ),
        ),
    )
    log = Log(spec)
    log.plan()
    for key in ("orders[0].ok", "orders[1].ok"):
        log.add(ToolCallStarted(call_id=key, name="psych:human"))
        log.add(ToolCallWaiting(call_id=key))
    ambiguous = log.signal(Resume(call_id="ok", payload=True))
    assert isinstance(ambiguous, SignalIgnored)
    assert "'ok' names several waiting calls (orders[0].ok, orders[1].ok)" in ambiguous.reason
    assert isinstance(log.signal(Resume(call_id="orders[1].ok", payload=True)), SignalReceived)
    answered = log.state.call("orders[1].ok")
    assert answered is not None and answered.phase == "resumed"
    nothing = log.signal(Resume(call_id="nope", payload=True))
    assert isinstance(nothing, SignalIgnored)


def test_an_answer_reaches_a_retried_human_step_by_its_name() -> None:
    from psych_core import Retry

    spec = WorkflowSpec(
        name="wf",
        steps=(
            HumanStep(
                name="ok",
                question="Ship?",
                answer_schema={"type": "boolean"},
                retry=Retry(attempts=2, backoff=0, on=("invalid_output",)),
            ),
        ),
    )
    answers = iter([Ok("maybe"), Ok(True)])
    sim = simulate(spec, script=lambda call_id, name, arguments: next(answers))
    assert settled(sim.records)["ok"] == ("completed", True)
    resumes = [r.body for r in sim.records if isinstance(r.body, SignalReceived)]
    assert [b.signal.call_id for b in resumes] == ["ok", "ok"]  # type: ignore[union-attr]


# -- records that do not fit ---------------------------------------------------------------------


def test_steps_planned_while_a_call_of_the_last_round_is_open_is_corrupt() -> None:
    log = Log(WorkflowSpec(name="wf", steps=(ToolStep(name="a", tool=TOOL),)))
    log.plan()
    with pytest.raises(CorruptLog, match="steps planned while call a of the last round is open"):
        log.add(StepsPlanned())


def test_a_step_settled_twice_or_an_item_out_of_turn_is_corrupt() -> None:
    log = Log(WorkflowSpec(name="wf", steps=(ToolStep(name="a", tool=TOOL),)), spec_known=False)
    log.add(StepsPlanned(events=(StepSettled(key="a", status="skipped"),)))
    with pytest.raises(CorruptLog, match="settled for step a, which has already settled"):
        log.add(StepsPlanned(events=(StepSettled(key="a", status="skipped"),)))
    with pytest.raises(CorruptLog, match="item_started for f, which is not a running foreach"):
        log.add(StepsPlanned(events=(ItemStarted(key="f", index=0),)))


def test_a_model_turn_in_a_workflow_run_and_a_plan_in_an_agent_run_are_corrupt() -> None:
    log = Log(WorkflowSpec(name="wf", steps=(ToolStep(name="a", tool=TOOL),)))
    log.add(StepsPlanned(events=(StepSettled(key="a", status="skipped"),)))
    with pytest.raises(CorruptLog, match="model_call_finished in a workflow run"):
        log.add(ModelCallFinished(model="m", text="hi"))
    agent = AgentSpec(name="a", model=ModelRef(model="m"))
    state = RunState.empty("A1", agent)
    records: list[Any] = [
        RunAdmitted(agent="a", spec_version=agent.version, input="hi", scope=Scope(tenant="t")),
        AttemptStarted(worker_id="w"),
        ModelCallFinished(model="m", text="hi"),
        StepsPlanned(),
    ]
    for seq, body in enumerate(records[:-1]):
        state = fold(state, Record(run_id="A1", seq=seq, attempt=seq and 1, at=T0, body=body))
    planned = Record(run_id="A1", seq=3, attempt=1, at=T0, body=records[-1])
    with pytest.raises(CorruptLog, match="steps_planned in an agent run"):
        fold(state, planned)


def test_a_simulated_log_never_leaves_an_event_unmoved() -> None:
    # Events sent at every moment of a run with waits: each moved in once, in order.
    spec = WorkflowSpec(
        name="wf",
        steps=(
            WaitStep(name="a", event="go"),
            ToolStep(name="t", tool=TOOL),
            WaitStep(name="b", event="go"),
        ),
    )
    sim = Simulation(spec, script=lambda c, n, a: Ok(c))
    sim.send(Resume(event="go", payload="early"))
    sim.run()
    assert sim.state.status == "completed"
    numbers = [r.body.number for r in sim.records if hasattr(r.body, "number")]
    assert numbers == list(range(1, len(numbers) + 1))
    assert settled(sim.records)["a"] == ("completed", "early")
    assert settled(sim.records)["b"] == ("completed", "b")

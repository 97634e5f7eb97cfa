"""Workflows end to end, through real workers, on `MemoryStore` and `SQLiteStore`: every step
kind, guards, retries that suspend the run between tries, timeouts, each failure kind, events,
answers, approvals, child runs, and the output as `report().output` and a session's view."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    AgentTool,
    CodeTool,
    ModelRef,
    ToolContext,
    WaitFor,
    WorkflowSpec,
    WorkflowTool,
)
from psych_runtime.errors import SpecError
from psych_runtime.records import RunSuspended, SignalIgnored, StepsPlanned, ToolCallStarted
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.workflows import (
    AgentStep,
    BranchStep,
    Case,
    Compare,
    ForeachStep,
    HumanStep,
    Lit,
    LoopStep,
    MapStep,
    Obj,
    ParallelStep,
    Ref,
    Retry,
    SetStateStep,
    SleepStep,
    ToolStep,
    Truthy,
    WaitStep,
    WorkflowStep,
)
from tests.integration._workflow_world import KINDS, World, world_of


@pytest.fixture(params=KINDS)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    async with world_of(request.param, tmp_path) as made:
        yield made


class Effects:
    """The tools, counting every time one ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, Any]] = []
        self.keys: list[str] = []
        self.fail_first: dict[str, int] = {}

    async def create(self, email: str) -> dict[str, Any]:
        """Create a user."""
        self.ran.append(("create", email))
        return {
            "id": "u1",
            "email": email,
            "orders": [{"cents": 500}, {"cents": 0}, {"cents": 250}],
        }

    async def charge(self, cents: int, ctx: ToolContext) -> str:
        """Charge an amount."""
        self.ran.append(("charge", cents))
        self.keys.append(ctx.idempotency_key)
        left = self.fail_first.get("charge", 0)
        if left:
            self.fail_first["charge"] = left - 1
            raise RuntimeError(f"the card was declined ({left} more)")
        return f"charged {cents}"

    async def slow(self) -> str:
        """Take a long time."""
        await asyncio.sleep(30)
        return "late"

    def tools(self) -> list[Any]:
        return [self.create, self.charge, self.slow]


CREATE = CodeTool(name="create")
CHARGE = CodeTool(name="charge")


def charge(name: str, cents: Any, **options: Any) -> ToolStep:
    return ToolStep(name=name, tool=CHARGE, arguments={"cents": cents}, **options)


async def test_tool_steps_foreach_guards_and_map_produce_the_runs_output(world: World) -> None:
    effects = Effects()
    spec = WorkflowSpec(
        name="onboard",
        input_schema={"type": "object", "required": ["email"]},
        steps=(
            ToolStep(name="create", tool=CREATE, arguments={"email": Ref("input.email")}),
            ForeachStep(
                name="orders",
                items=Ref("steps.create.output.orders"),
                concurrency=2,
                steps=(
                    charge(
                        "bill",
                        Ref("item.cents"),
                        when=Compare(left=Ref("item.cents"), op="gt", right=Lit(0)),
                    ),
                ),
            ),
            MapStep(
                name="summary",
                output=Obj(
                    fields={
                        "user": Ref("steps.create.output.id"),
                        "bills": Ref("steps.orders.output"),
                    }
                ),
            ),
        ),
    )
    runtime = world.runtime(effects.tools())
    run_id = await world.dispatch(spec, {"email": "ann@example.com"})
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    expected = {"user": "u1", "bills": ["charged 500", None, "charged 250"]}
    report = await psych_runtime.report(world.scoped, run_id)
    assert report.output == expected
    assert sorted(c.call_id for c in report.tool_calls) == [
        "create",
        "orders[0].bill",
        "orders[2].bill",
    ]
    assert effects.ran == [("create", "ann@example.com"), ("charge", 500), ("charge", 250)]


async def test_dispatch_checks_a_workflows_input_before_saving_anything(world: World) -> None:
    spec = WorkflowSpec(
        name="needs-email",
        input_schema={"type": "object", "required": ["email"]},
        steps=(MapStep(name="m", output=Ref("input.email")),),
    )
    with pytest.raises(
        SpecError, match="does not match its input_schema: email: required; nothing was admitted"
    ):
        await world.dispatch(spec, {})
    with pytest.raises(SpecError, match="must be JSON text"):
        await psych_runtime.dispatch(world.scoped, spec, "not json")
    assert (await world.scoped.list_runs()).items == ()


async def test_agent_workflow_and_parallel_steps_run_as_child_runs(world: World) -> None:
    effects = Effects()
    writer = AgentSpec(name="writer", model=ModelRef(model="fake"), tools=(CHARGE,))
    billing = WorkflowSpec(
        name="billing",
        input_schema={"type": "object", "required": ["cents"]},
        steps=(charge("bill", Ref("input.cents")),),
        output=Obj(fields={"billed": Ref("steps.bill.output")}),
    )
    spec = WorkflowSpec(
        name="both",
        steps=(
            ParallelStep(
                name="fan",
                branches={
                    "draft": (AgentStep(name="draft", agent=writer, input=Ref("input.topic")),),
                    "bill": (
                        WorkflowStep(
                            name="billing", workflow=billing, input=Obj(fields={"cents": Lit(42)})
                        ),
                    ),
                },
            ),
        ),
    )
    model = FakeModel().turn(tool_calls=[("charge", {"cents": 7})]).turn(text="A short poem.")
    runtime = world.runtime(effects.tools(), model=model)
    run_id = await world.dispatch(spec, {"topic": "cats"})
    done = await world.finish(run_id, runtime)
    assert done.status == "completed", done.error
    report = await psych_runtime.report(world.scoped, run_id)
    assert report.output == {"draft": "A short poem.", "bill": {"billed": "charged 42"}}
    assert sorted(report.children) == [f"{run_id}-billing", f"{run_id}-draft"]
    # The agent step's child used every agent feature: here, a tool call of its own.
    assert sorted(effects.ran) == [("charge", 7), ("charge", 42)]
    child = await psych_runtime.report(world.scoped, f"{run_id}-billing")
    assert child.output == {"billed": "charged 42"}


async def test_branch_loop_and_state(world: World) -> None:
    spec = WorkflowSpec(
        name="count",
        steps=(
            SetStateStep(name="init", values={"total": Lit(0)}),
            LoopStep(
                name="add",
                until=Compare(left=Ref("iteration"), op="gte", right=Lit(3)),
                steps=(SetStateStep(name="seen", values={"total": Ref("iteration")}),),
            ),
            BranchStep(
                name="size",
                cases=(
                    Case(
                        when=Compare(left=Ref("state.total"), op="gt", right=Lit(2)),
                        steps=(MapStep(name="big", output=Lit("big")),),
                    ),
                ),
                otherwise=(MapStep(name="small", output=Lit("small")),),
            ),
        ),
        output=Obj(fields={"size": Ref("steps.size.output"), "total": Ref("state.total")}),
    )
    run_id = await world.dispatch(spec)
    runtime = world.runtime()
    assert (await world.finish(run_id, runtime)).status == "completed"
    assert (await psych_runtime.report(world.scoped, run_id)).output == {"size": "big", "total": 3}


async def test_a_sleep_suspends_the_run_holding_no_worker_until_its_time(world: World) -> None:
    spec = WorkflowSpec(
        name="nap",
        steps=(SleepStep(name="nap", seconds=0.2), MapStep(name="after", output=Lit("awake"))),
    )
    runtime = world.runtime()
    run_id = await world.dispatch(spec)
    await world.work(runtime)
    waiting = await psych_runtime.status(world.scoped, run_id)
    assert (waiting.status, waiting.waiting, waiting.waiting_for) == (
        "waiting",
        "external",
        ("nap",),
    )
    assert waiting.due_at is not None
    # A timed wait is what `due()` lists once its time has come.
    await world.pass_until(waiting.due_at)
    due = await psych_runtime.due(world.store, world.clock.now())
    assert run_id in [row.run_id for row in due]
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    assert (await psych_runtime.report(world.scoped, run_id)).output == "awake"


async def test_events_and_answers_reach_their_steps_exactly_once(world: World) -> None:
    spec = WorkflowSpec(
        name="ship",
        steps=(
            WaitStep(
                name="paid",
                event="payment",
                payload_schema={"type": "object", "required": ["cents"]},
            ),
            HumanStep(
                name="confirm", question="Ship the order?", answer_schema={"type": "boolean"}
            ),
            WaitStep(name="delivered", event="delivery"),
        ),
        output=Obj(
            fields={
                "cents": Ref("steps.paid.output.cents"),
                "ok": Ref("steps.confirm.output"),
                "where": Ref("steps.delivered.output"),
            }
        ),
    )
    runtime = world.runtime()
    run_id = await world.dispatch(spec)
    # An event that comes before its step waits for it is kept for it.
    await psych_runtime.send_event(world.scoped, run_id, "delivery", "the porch")
    await world.work(runtime)
    waiting = await psych_runtime.status(world.scoped, run_id)
    assert waiting.waiting_for == ("paid",)
    await psych_runtime.send_event(world.scoped, run_id, "nobody-waits", 1)
    await psych_runtime.send_event(world.scoped, run_id, "payment", {"cents": 900})
    await world.work(runtime)
    assert (await psych_runtime.status(world.scoped, run_id)).waiting_for == ("confirm",)
    await psych_runtime.answer(world.scoped, run_id, "confirm", True)
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    report = await psych_runtime.report(world.scoped, run_id)
    assert report.output == {"cents": 900, "ok": True, "where": "the porch"}
    ignored = await world.bodies(run_id, SignalIgnored)
    assert [b.reason for b in ignored] == ["no step of this run waits for event 'nobody-waits'"]


async def test_a_wait_or_a_question_that_times_out_fails_with_kind_timeout(world: World) -> None:
    spec = WorkflowSpec(
        name="deadline",
        steps=(
            WaitStep(name="paid", event="payment", timeout=0.2, on_failure="continue"),
            HumanStep(name="ok", question="Still there?", timeout=0.2, on_failure="continue"),
        ),
        output=Obj(
            fields={"paid": Ref("steps.paid.failure.kind"), "ok": Ref("steps.ok.failure.kind")}
        ),
    )
    runtime = world.runtime()
    run_id = await world.dispatch(spec)
    assert (await world.finish(run_id, runtime)).status == "completed"
    output = (await psych_runtime.report(world.scoped, run_id)).output
    assert output == {"paid": "timeout", "ok": "timeout"}


async def test_a_retry_suspends_the_run_between_tries_and_shares_one_idempotency_key(
    world: World,
) -> None:
    effects = Effects()
    effects.fail_first["charge"] = 2
    spec = WorkflowSpec(
        name="pay",
        steps=(charge("pay", Lit(100), retry=Retry(attempts=3, backoff=0.1)),),
    )
    runtime = world.runtime(effects.tools())
    run_id = await world.dispatch(spec)
    await world.work(runtime)
    between = await psych_runtime.status(world.scoped, run_id)
    assert (between.status, between.waiting_for) == ("waiting", ("pay~2",))
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    report = await psych_runtime.report(world.scoped, run_id)
    assert [c.call_id for c in report.tool_calls] == ["pay", "pay~2", "pay#2", "pay~3", "pay#3"]
    assert report.output == "charged 100"
    assert effects.keys == [f"{run_id}:pay"] * 3
    suspended = await world.bodies(run_id, RunSuspended)
    assert [s.calls for s in suspended] == [("pay~2",), ("pay~3",)]


async def test_a_retry_that_runs_out_of_tries_fails_the_run_naming_the_step(world: World) -> None:
    effects = Effects()
    effects.fail_first["charge"] = 5
    spec = WorkflowSpec(
        name="pay", steps=(charge("pay", Lit(1), retry=Retry(attempts=2, backoff=0)),)
    )
    runtime = world.runtime(effects.tools())
    run_id = await world.dispatch(spec)
    done = await world.finish(run_id, runtime)
    assert (done.status, done.failure_reason) == ("failed", "step_failed")
    assert done.error is not None
    assert done.error.startswith(f"run {run_id}: workflow 'pay' failed at step pay (error): ")
    assert "the card was declined (4 more)" in done.error


async def test_a_tool_steps_timeout_is_a_timeout_when_safe_and_unknown_otherwise(
    world: World,
) -> None:
    effects = Effects()
    spec = WorkflowSpec(
        name="slow",
        steps=(
            ToolStep(
                name="safe",
                tool=CodeTool(name="slow", safe_to_retry=True),
                timeout=0.05,
                on_failure="continue",
            ),
        ),
        output=Ref("steps.safe.failure.kind"),
    )
    runtime = world.runtime(effects.tools())
    run_id = await world.dispatch(spec)
    assert (await world.finish(run_id, runtime)).status == "completed"
    assert (await psych_runtime.report(world.scoped, run_id)).output == "timeout"
    unsafe = spec.model_copy(
        update={
            "name": "slow-unsafe",
            "steps": (
                ToolStep(
                    name="safe", tool=CodeTool(name="slow"), timeout=0.05, on_failure="continue"
                ),
            ),
        }
    )
    run_id = await world.dispatch(unsafe)
    assert (await world.finish(run_id, runtime)).status == "completed"
    assert (await psych_runtime.report(world.scoped, run_id)).output == "outcome_unknown"


async def test_an_agent_step_past_its_timeout_fails_and_its_child_is_cancelled(
    world: World,
) -> None:
    async def wait_for_ever() -> WaitFor:
        """Wait for something that never comes."""
        return WaitFor("never")

    stuck = AgentSpec(
        name="stuck", model=ModelRef(model="fake"), tools=(CodeTool(name="wait_for_ever"),)
    )
    spec = WorkflowSpec(
        name="impatient",
        steps=(AgentStep(name="ask", agent=stuck, input=Lit("go"), timeout=0.3),),
    )
    model = FakeModel().turn(tool_calls=[("wait_for_ever", {})])
    runtime = world.runtime([wait_for_ever], model=model)
    run_id = await world.dispatch(spec)
    done = await world.finish(run_id, runtime)
    assert (done.status, done.failure_reason) == ("failed", "step_failed")
    assert "failed at step ask (timeout)" in (done.error or "")
    await world.work(runtime)
    child = await psych_runtime.status(world.scoped, f"{run_id}-ask")
    assert child.status == "cancelled"


async def test_approvals_apply_to_tool_steps_and_a_denial_is_kind_denied(world: World) -> None:
    effects = Effects()
    guarded = CodeTool(name="charge", requires_approval=True)
    spec = WorkflowSpec(
        name="approve-me",
        steps=(
            ToolStep(name="pay", tool=guarded, arguments={"cents": Lit(5)}, on_failure="continue"),
        ),
        output=Obj(fields={"out": Ref("steps.pay.output"), "why": Ref("steps.pay.failure")}),
    )
    runtime = world.runtime(effects.tools())
    approved = await world.dispatch(spec)
    await world.work(runtime)
    waiting = await psych_runtime.status(world.scoped, approved)
    assert (waiting.waiting, waiting.waiting_for) == ("approval", ("pay",))
    await psych_runtime.approve(world.scoped, approved, "pay", by="ann")
    await world.finish(approved, runtime)
    assert (await psych_runtime.report(world.scoped, approved)).output == {
        "out": "charged 5",
        "why": None,
    }
    denied = await world.dispatch(spec)
    await world.work(runtime)
    await psych_runtime.deny(world.scoped, denied, "pay", by="ann", reason="too much")
    await world.finish(denied, runtime)
    output: Any = (await psych_runtime.report(world.scoped, denied)).output
    assert output["why"]["kind"] == "denied"
    assert "denied by ann: too much" in output["why"]["error"]
    assert effects.ran == [("charge", 5)]


async def test_invalid_output_reference_and_max_steps_fail_the_run(world: World) -> None:
    effects = Effects()
    runtime = world.runtime(effects.tools())
    invalid = WorkflowSpec(
        name="schema",
        steps=(charge("pay", Lit(1), output_schema={"type": "object"}),),
    )
    run_id = await world.dispatch(invalid)
    done = await world.finish(run_id, runtime)
    assert "failed at step pay (invalid_output)" in (done.error or "")
    broken = WorkflowSpec(name="ref", steps=(charge("pay", Ref("input.cents")),))
    run_id = await world.dispatch(broken, {"amount": 1})
    done = await world.finish(run_id, runtime)
    assert "failed at step pay (reference)" in (done.error or "")
    assert "input has no field 'cents' (its fields: amount)" in (done.error or "")
    bounded = WorkflowSpec(
        name="bounded",
        max_steps=3,
        steps=(LoopStep(name="l", max_iterations=10, steps=(charge("pay", Lit(1)),)),),
    )
    run_id = await world.dispatch(bounded)
    done = await world.finish(run_id, runtime)
    assert done.failure_reason == "max_steps"


async def test_a_step_the_policy_takes_away_fails_with_kind_denied(world: World) -> None:
    class NoCharges:
        def authorize(self, scope: Any, action: Any, target: str) -> None:
            return None

        def narrow(self, scope: Any, tools: Any) -> list[str]:
            return [name for name in tools if name != "charge"]

    effects = Effects()
    runtime = world.runtime(effects.tools(), policy=NoCharges())
    spec = WorkflowSpec(name="policy", steps=(charge("pay", Lit(1)),))
    run_id = await world.dispatch(spec)
    done = await world.finish(run_id, runtime)
    assert "failed at step pay (denied)" in (done.error or "")
    assert effects.ran == []


async def test_cancel_ends_a_waiting_workflow_and_its_child_runs(world: World) -> None:
    async def wait_for_ever() -> WaitFor:
        """Wait for something that never comes."""
        return WaitFor("never")

    stuck = AgentSpec(
        name="stuck", model=ModelRef(model="fake"), tools=(CodeTool(name="wait_for_ever"),)
    )
    spec = WorkflowSpec(
        name="cancel-me",
        steps=(
            ParallelStep(
                name="both",
                branches={
                    "a": (WaitStep(name="w", event="never"),),
                    "b": (AgentStep(name="ask", agent=stuck, input=Lit("go")),),
                },
            ),
        ),
    )
    runtime = world.runtime(
        [wait_for_ever], model=FakeModel().turn(tool_calls=[("wait_for_ever", {})])
    )
    run_id = await world.dispatch(spec)
    await world.finish(run_id, runtime)
    await psych_runtime.cancel(world.scoped, run_id, "no longer needed")
    assert (await world.finish(run_id, runtime)).status == "cancelled"
    await world.work(runtime)
    assert (await psych_runtime.status(world.scoped, f"{run_id}-ask")).status == "cancelled"


async def test_an_agent_calls_a_workflow_as_a_tool(world: World) -> None:
    effects = Effects()
    billing = WorkflowSpec(
        name="billing",
        input_schema={"type": "object", "required": ["cents"]},
        steps=(charge("bill", Ref("input.cents")),),
    )
    support = AgentSpec(
        name="support",
        model=ModelRef(model="fake"),
        tools=(WorkflowTool(name="bill", spec=billing), CHARGE),
    )
    model = FakeModel().turn(tool_calls=[("bill", {"input": {"cents": 30}})]).turn(text="Billed.")
    runtime = world.runtime(effects.tools(), model=model)
    run_id = await psych_runtime.dispatch(world.scoped, support, "bill 30", clock=world.clock)
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    report = await psych_runtime.report(world.scoped, run_id)
    assert report.tool_calls[0].result == "charged 30"
    assert effects.ran == [("charge", 30)]
    offered: Any = model.requests[0].tools[0].parameters
    assert offered["properties"]["input"]["required"] == ["cents"]


async def test_a_session_runs_a_workflow_and_its_view_holds_the_output(tmp_path: Path) -> None:
    effects = Effects()
    spec = WorkflowSpec(
        name="hello",
        steps=(charge("pay", Ref("input.cents")),),
        output=Obj(fields={"paid": Ref("steps.pay.output")}),
    )
    async with psych_runtime.session(FakeModel(), tools=effects.tools()) as s:
        view = await s.ask(spec, json.dumps({"cents": 3}))
    assert (view.status, view.output, view.text) == ("completed", {"paid": "charged 3"}, None)


async def test_an_agent_step_uses_approvals_and_subagents(world: World) -> None:
    effects = Effects()
    helper = AgentSpec(name="helper", model=ModelRef(model="helper"), tools=(CHARGE,))
    lead = AgentSpec(
        name="lead",
        model=ModelRef(model="lead"),
        tools=(
            AgentTool(name="help", spec=helper),
            CodeTool(name="charge", requires_approval=True),
        ),
    )
    scripts = {
        "lead": FakeModel()
        .turn(tool_calls=[("help", {"input": "charge 2"}), ("charge", {"cents": 9})])
        .turn(text="all done"),
        "helper": FakeModel().turn(tool_calls=[("charge", {"cents": 2})]).turn(text="charged"),
    }

    class ByModel:
        async def complete(self, request: Any) -> Any:
            return await scripts[request.model.model].complete(request)

    spec = WorkflowSpec(
        name="delegate", steps=(AgentStep(name="lead", agent=lead, input=Lit("go")),)
    )
    runtime = world.runtime(effects.tools(), model=ByModel())
    run_id = await world.dispatch(spec)
    await world.finish(run_id, runtime)
    child = f"{run_id}-lead"
    waiting = await psych_runtime.status(world.scoped, child)
    assert waiting.waiting == "approval"
    await psych_runtime.approve(world.scoped, child, waiting.waiting_for[0], by="ann")
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    assert (await psych_runtime.report(world.scoped, run_id)).output == "all done"
    assert sorted(effects.ran) == [("charge", 2), ("charge", 9)]


async def test_every_round_is_one_steps_planned_record_with_its_calls(world: World) -> None:
    effects = Effects()
    spec = WorkflowSpec(
        name="rounds",
        steps=(
            ParallelStep(
                name="p", branches={"a": (charge("a", Lit(1)),), "b": (charge("b", Lit(2)),)}
            ),
            charge("c", Lit(3)),
        ),
    )
    runtime = world.runtime(effects.tools())
    run_id = await world.dispatch(spec)
    await world.finish(run_id, runtime)
    planned = await world.bodies(run_id, StepsPlanned)
    assert [[c.call_id for c in p.calls] for p in planned] == [["a", "b"], ["c"], []]
    starts = await world.bodies(run_id, ToolCallStarted)
    assert [s.call_id for s in starts] == ["a", "b", "c"]


async def test_a_truthy_guard_skips_and_the_skip_is_recorded(world: World) -> None:
    spec = WorkflowSpec(
        name="skip",
        steps=(
            MapStep(name="gate", output=Lit(False)),
            ToolStep(name="never", tool=CREATE, when=Truthy(value=Ref("steps.gate.output"))),
        ),
        output=Ref("steps.never.status"),
    )
    run_id = await world.dispatch(spec)
    assert (await world.finish(run_id, world.runtime(Effects().tools()))).status == "completed"
    assert (await psych_runtime.report(world.scoped, run_id)).output == "skipped"

"""Debugging and repairing workflow runs through real workers, on `MemoryStore` and
`SQLiteStore`: breakpoints and step mode chosen at dispatch (the version stays), `continue_run`,
`replay` from a failed step on a corrected version (the source run untouched), and reading a
run back: `workflow_view`, `report().steps`, `status().waiting_for`, `stream`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, ToolContext, WorkflowSpec
from psych_runtime.errors import NotReplayable, SpecError
from psych_runtime.records import RunAdmitted, SignalIgnored, StepsPlanned
from psych_runtime.workflows import (
    ForeachStep,
    HumanStep,
    MapStep,
    Obj,
    Ref,
    ToolStep,
    WaitStep,
)
from tests.integration._workflow_world import KINDS, World, world_of


@pytest.fixture(params=KINDS)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    async with world_of(request.param, tmp_path) as made:
        yield made


class Shop:
    """Tools that count each time they run."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, Any]] = []
        self.keys: list[str] = []

    async def create(self, email: str) -> dict[str, Any]:
        """Create a customer (not safe to run twice)."""
        self.ran.append(("create", email))
        return {"id": "c1", "email": email}

    async def charge(self, cents: int, ctx: ToolContext) -> str:
        """Charge an amount (not safe to run twice)."""
        self.ran.append(("charge", cents))
        self.keys.append(ctx.idempotency_key)
        return f"charged {cents}"

    async def send(self, to: str) -> str:
        """Send the receipt."""
        self.ran.append(("send", to))
        return f"sent to {to}"

    def tools(self) -> list[Any]:
        return [self.create, self.charge, self.send]

    def count(self, name: str) -> int:
        return sum(1 for ran, _ in self.ran if ran == name)


def checkout(send_to: str = "steps.create.output.email") -> WorkflowSpec:
    return WorkflowSpec(
        name="checkout",
        steps=(
            ToolStep(
                name="create", tool=CodeTool(name="create"), arguments={"email": Ref("input.email")}
            ),
            ForeachStep(
                name="orders",
                items=Ref("input.orders"),
                concurrency=2,
                steps=(
                    ToolStep(
                        name="charge",
                        tool=CodeTool(name="charge"),
                        arguments={"cents": Ref("item")},
                    ),
                ),
            ),
            ToolStep(name="send", tool=CodeTool(name="send"), arguments={"to": Ref(send_to)}),
        ),
        output=Obj(
            fields={"charges": Ref("steps.orders.output"), "sent": Ref("steps.send.output")}
        ),
    )


INPUT = {"email": "ann@example.com", "orders": [500, 250, 100]}


async def dispatch(world: World, spec: WorkflowSpec, **options: Any) -> str:
    return await psych_runtime.dispatch(
        world.scoped, spec, json.dumps(INPUT), clock=world.clock, **options
    )


# -- breakpoints and step mode ---------------------------------------------------------------


async def test_a_breakpoint_pauses_the_run_holding_no_worker_until_continue_run(
    world: World,
) -> None:
    shop = Shop()
    runtime = world.runtime(shop.tools())
    spec = checkout()
    run_id = await dispatch(world, spec, breakpoints=("charge", "send"))
    admitted = (await world.log(run_id))[0].body
    assert isinstance(admitted, RunAdmitted)
    assert admitted.spec_version == spec.version, "breakpoints are not part of the spec"
    assert admitted.breakpoints == ("charge", "send")
    await world.work(runtime)
    paused = await psych_runtime.status(world.scoped, run_id)
    assert paused.status == "waiting" and paused.due_at is None
    assert paused.waiting_for == ("orders[0].charge!", "orders[1].charge!")
    assert shop.ran == [("create", "ann@example.com")], "nothing ran past the breakpoint"
    view = await psych_runtime.workflow_view(world.scoped, run_id)
    orders = view.step("orders")
    assert orders is not None
    assert [s.status for item in orders.items for s in item.steps] == ["paused", "paused"]
    # An answer or an event does not end a pause; only continue_run does.
    await psych_runtime.answer(world.scoped, run_id, "charge", 1)
    # One pause continued: the round goes on only when its other pause is continued too.
    await psych_runtime.continue_run(world.scoped, run_id, "orders[1].charge")
    await world.work(runtime)
    assert (await psych_runtime.status(world.scoped, run_id)).waiting_for == ("orders[0].charge!",)
    assert shop.count("charge") == 0
    await psych_runtime.continue_run(world.scoped, run_id, "orders[0].charge")
    await world.work(runtime)
    assert sorted(shop.ran[1:]) == [("charge", 250), ("charge", 500)]
    ignored = await world.bodies(run_id, SignalIgnored)
    assert [b.reason for b in ignored] == ["no call of this run is waiting under the name 'charge'"]
    # With no step named, every pause goes on: the third item's, then the send's.
    paused = await psych_runtime.status(world.scoped, run_id)
    assert paused.waiting_for == ("orders[2].charge!",)
    await psych_runtime.continue_run(world.scoped, run_id)
    await world.work(runtime)
    assert (await psych_runtime.status(world.scoped, run_id)).waiting_for == ("send!",)
    await psych_runtime.continue_run(world.scoped, run_id)
    done = await world.finish(run_id, runtime)
    assert done.status == "completed"
    assert (shop.count("create"), shop.count("charge"), shop.count("send")) == (1, 3, 1)


async def test_step_mode_pauses_before_every_step(world: World) -> None:
    shop = Shop()
    runtime = world.runtime(shop.tools())
    spec = WorkflowSpec(
        name="steps",
        steps=(
            ToolStep(
                name="create", tool=CodeTool(name="create"), arguments={"email": Ref("input.email")}
            ),
            MapStep(name="shape", output=Ref("steps.create.output.id")),
        ),
    )
    run_id = await dispatch(world, spec, step_mode=True)
    pauses: list[tuple[str, ...]] = []
    for _ in range(5):
        await world.work(runtime)
        now = await psych_runtime.status(world.scoped, run_id)
        if now.status != "waiting":
            break
        pauses.append(now.waiting_for)
        await psych_runtime.continue_run(world.scoped, run_id)
    assert pauses == [("create!",), ("shape!",)]
    report = await psych_runtime.report(world.scoped, run_id)
    assert (report.status, report.output) == ("completed", "c1")


async def test_dispatch_refuses_a_breakpoint_that_names_no_step_and_breakpoints_on_an_agent(
    world: World,
) -> None:
    with pytest.raises(SpecError, match="breakpoint 'charges' names no step of workflow"):
        await dispatch(world, checkout(), breakpoints=("charges",))
    with pytest.raises(SpecError, match="step 'charge' sits in orders"):
        await dispatch(world, checkout(), breakpoints=("create[1].charge",))
    agent = AgentSpec(name="helper", model=ModelRef(model="fake"))
    with pytest.raises(SpecError, match="'helper' is an agent; nothing was admitted"):
        await psych_runtime.dispatch(world.scoped, agent, "hi", step_mode=True)
    assert (await world.scoped.list_runs()).items == ()


# -- replay ------------------------------------------------------------------------------------


async def test_replay_from_a_failed_step_on_a_corrected_version_leaves_the_source_intact(
    world: World,
) -> None:
    shop = Shop()
    runtime = world.runtime(shop.tools())
    broken = checkout(send_to="steps.create.output.mail")
    run_id = await dispatch(world, broken)
    failed = await world.finish(run_id, runtime)
    assert failed.status == "failed"
    assert "steps.create.output.mail" in (failed.error or "")
    before = [r.model_dump_json() for r in await world.log(run_id)]
    view = await psych_runtime.workflow_view(world.scoped, run_id)
    send = view.step("send")
    assert send is not None and send.status == "failed"
    assert send.failure is not None and send.failure.kind == "reference"

    fixed = checkout()
    again = await psych_runtime.replay(world.scoped, run_id, from_step="send", version=fixed)
    done = await world.finish(again, runtime)
    assert done.status == "completed"
    report = await psych_runtime.report(world.scoped, again)
    assert report.spec_version == fixed.version
    assert report.output == {
        "charges": ["charged 500", "charged 250", "charged 100"],
        "sent": "sent to ann@example.com",
    }
    # Nothing before the failed step ran again: one create, one charge per order.
    assert (shop.count("create"), shop.count("charge"), shop.count("send")) == (1, 3, 1)
    replayed = await psych_runtime.workflow_view(world.scoped, again)
    assert (replayed.replay_of, replayed.from_step) == (run_id, "send")
    assert [s.status for s in replayed.walk()] == [
        "replayed",
        "completed",
        "replayed",
        "replayed",
        "replayed",
        "completed",
    ]
    assert [row.key for row in report.steps] == ["send"], "only the step that ran has a try"
    # The source run is untouched.
    assert [r.model_dump_json() for r in await world.log(run_id)] == before
    assert (await psych_runtime.status(world.scoped, run_id)).status == "failed"


async def test_replay_from_an_item_copies_the_items_before_it_on_the_same_version(
    world: World,
) -> None:
    shop = Shop()
    runtime = world.runtime(shop.tools())
    spec = checkout()
    run_id = await dispatch(world, spec)
    assert (await world.finish(run_id, runtime)).status == "completed"
    again = await psych_runtime.replay(
        world.scoped, run_id, from_step="orders[1].charge", version=spec.version
    )
    assert (await world.finish(again, runtime)).status == "completed"
    assert [cents for name, cents in shop.ran if name == "charge"] == [500, 250, 100, 250, 100]
    # The runs that ran again did it under the new run's own keys.
    assert shop.keys[-2:] == [f"{again}:orders[1].charge", f"{again}:orders[2].charge"]
    # A new input: the copied steps keep what they produced, the rest uses the new one.
    third = await psych_runtime.replay(
        world.scoped,
        run_id,
        from_step="send",
        input=json.dumps({"email": "bob@example.com", "orders": [1]}),
    )
    assert (await world.finish(third, runtime)).status == "completed"
    assert shop.ran[-1] == ("send", "ann@example.com"), "create was copied, with its output"


async def test_replay_refuses_a_run_it_cannot_start_from(world: World) -> None:
    shop = Shop()
    runtime = world.runtime(shop.tools())
    waiting_spec = WorkflowSpec(name="wait", steps=(WaitStep(name="paid", event="paid"),))
    waiting = await dispatch(world, waiting_spec)
    await world.work(runtime)
    with pytest.raises(NotReplayable, match=f"run {waiting}: it is waiting; replay a run"):
        await psych_runtime.replay(world.scoped, waiting, from_step="paid")
    done = await dispatch(world, checkout())
    await world.finish(done, runtime)
    with pytest.raises(NotReplayable, match="from_step 'refund' names no step of workflow"):
        await psych_runtime.replay(world.scoped, done, from_step="refund")
    with pytest.raises(NotReplayable, match=r"no spec of version sha256:0+ is in the store"):
        await psych_runtime.replay(
            world.scoped, done, from_step="send", version="sha256:" + "0" * 64
        )
    with pytest.raises(SpecError, match="must be JSON text"):
        await psych_runtime.replay(world.scoped, done, from_step="send", input="not json")
    agent_run = await psych_runtime.dispatch(
        world.scoped, AgentSpec(name="helper", model=ModelRef(model="fake")), "hi"
    )
    with pytest.raises(NotReplayable, match="a run of agent 'helper', not of a workflow"):
        await psych_runtime.replay(world.scoped, agent_run, from_step="x")
    with pytest.raises(NotReplayable, match="read it with report"):
        await psych_runtime.workflow_view(world.scoped, agent_run)


# -- reading a run back ------------------------------------------------------------------------


async def test_view_report_status_and_stream_follow_a_waiting_run(world: World) -> None:
    shop = Shop()
    runtime = world.runtime(shop.tools())
    spec = WorkflowSpec(
        name="ship",
        steps=(
            ToolStep(
                name="create", tool=CodeTool(name="create"), arguments={"email": Ref("input.email")}
            ),
            HumanStep(name="confirm", question="Ship it?", answer_schema={"type": "boolean"}),
            WaitStep(name="shipped", event="shipped"),
        ),
    )
    run_id = await dispatch(world, spec)
    await world.work(runtime)
    status = await psych_runtime.status(world.scoped, run_id)
    assert (status.status, status.waiting_for) == ("waiting", ("confirm",))
    view = await psych_runtime.workflow_view(world.scoped, run_id)
    assert [(s.key, s.status) for s in view.steps] == [
        ("create", "completed"),
        ("confirm", "waiting"),
        ("shipped", "pending"),
    ]
    confirm = view.step("confirm")
    assert confirm is not None and confirm.waiting_for == "an answer to 'Ship it?'"
    assert confirm.input == {"question": "Ship it?", "schema": {"type": "boolean"}, "due_at": None}
    await psych_runtime.answer(world.scoped, run_id, "confirm", True)
    await psych_runtime.send_event(world.scoped, run_id, "shipped", {"by": "post"})
    assert (await world.finish(run_id, runtime)).status == "completed"
    report = await psych_runtime.report(world.scoped, run_id)
    assert [(row.key, row.attempt, row.outcome, row.output) for row in report.steps] == [
        ("create", 1, "succeeded", {"id": "c1", "email": "ann@example.com"}),
        ("confirm", 1, "succeeded", True),
        ("shipped", 1, "succeeded", {"by": "post"}),
    ]
    streamed = [r async for r in psych_runtime.stream(world.scoped, run_id)]
    assert sum(isinstance(r.body, StepsPlanned) for r in streamed) == 3
    assert streamed[-1].body.type == "run_completed"

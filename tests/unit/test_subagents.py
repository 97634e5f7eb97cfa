"""Subagents: a child run with its own log, the parent waiting without a worker, narrowed
tools, usage rolled up, cancel reaching the child."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import psych_runtime
from psych_runtime import (
    AgentSpec,
    AgentTool,
    CodeTool,
    Cost,
    Leases,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Usage,
    Worker,
)
from psych_runtime.ports import ModelRequest, ModelResponse
from psych_runtime.runtime import SystemClock, drive, load_state, registry_of
from psych_runtime.runtime._children import child_run_id, start_child
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")


class ByModel:
    """Routes each request to the FakeModel scripted for its model name."""

    def __init__(self, **models: FakeModel) -> None:
        self.models = models

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.models[request.model.model.replace("-", "_")].complete(request)


async def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"{order_id} shipped"


async def delete_all() -> str:
    """Delete every order."""
    raise AssertionError("a child must never run a tool its parent may not use")


CHILD = AgentSpec(
    name="researcher",
    instructions="Research orders.",
    model=ModelRef(model="child-model"),
    tools=(CodeTool(name="lookup"), CodeTool(name="delete_all")),
)
PARENT = AgentSpec(
    name="support",
    model=ModelRef(model="parent-model"),
    tools=(CodeTool(name="lookup"), AgentTool(name="research", spec=CHILD)),
)


async def test_a_subagent_runs_as_a_child_and_its_answer_is_the_calls_result() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    cost = Cost(amount=Decimal("0.01"), source="override")
    parent_model = (
        FakeModel()
        .turn(
            tool_calls=[("research", {"input": "where is A1?"})], usage=Usage(input=10), cost=cost
        )
        .turn(text="Research says A1 shipped.", usage=Usage(input=20), cost=cost)
    )
    child_model = (
        FakeModel()
        .turn(
            tool_calls=[("lookup", {"order_id": "A1"}), ("delete_all", {})],
            usage=Usage(input=5),
            cost=cost,
        )
        .turn(text="A1 shipped.", usage=Usage(input=7), cost=cost)
    )
    model = ByModel(parent_model=parent_model, child_model=child_model)
    run_id = await psych_runtime.dispatch(scoped, PARENT, "help")
    await Worker(
        store, Runtime(model=model, tools=[lookup, delete_all]), concurrency=2
    ).run_until_idle()

    parent = await psych_runtime.report(scoped, run_id)
    child_id = child_run_id(run_id, "2.0")
    child = await psych_runtime.report(scoped, child_id)
    assert parent.status == "completed" and parent.output == "Research says A1 shipped."
    assert parent.children == (child_id,)
    assert parent.tool_calls[0].result == "A1 shipped."
    # The child's log is its own, and it names its parent.
    child_log = await psych_runtime.read_log(scoped, child_id)
    assert child_log[0].body.parent_run_id == run_id  # type: ignore[union-attr]
    assert child.status == "completed"
    # Narrowed: the parent may not use delete_all, so the child is not offered it either.
    assert [d.name for d in child_model.requests[0].tools] == ["lookup"]
    refused = child.tool_calls[1]
    assert (refused.name, refused.outcome, refused.reason) == (
        "delete_all",
        "failed",
        "unknown_tool",
    )
    # Usage and cost roll up to the parent; each report also has its own.
    assert parent.own_totals.usage.input == 30 and child.totals.usage.input == 12
    assert parent.totals.usage.input == 42
    assert parent.totals.cost == Cost(amount=Decimal("0.04"), source="override")
    types = [r.body.type for r in await psych_runtime.read_log(scoped, run_id)]
    assert (
        types.count("run_suspended") == 1 and "child_started" in types and "child_finished" in types
    )


async def test_the_parent_waits_holding_no_worker_while_the_child_runs() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    model = ByModel(
        parent_model=FakeModel().turn(tool_calls=[("research", {"input": "go"})]).turn(text="ok"),
        child_model=FakeModel().turn(text="done"),
    )
    run_id = await psych_runtime.dispatch(scoped, PARENT, "help")
    claim = await store.claim("w", dt.timedelta(seconds=30), run_id=run_id)
    assert claim is not None
    runtime = Runtime(model=model, tools=[lookup, delete_all])
    state = (await drive(store, claim, runtime, registry_of(runtime))).state
    assert state is not None
    status = await psych_runtime.status(scoped, run_id)
    assert (state.status, status.waiting, status.waiting_for) == ("waiting", "children", ("2.0",))
    row = await store.get_run("acme", run_id)
    assert row is not None and row.lease_owner is None
    await Worker(store, Runtime(model=model, tools=[lookup, delete_all])).run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"


async def test_starting_a_child_again_finds_the_same_child() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    model = ByModel(parent_model=FakeModel().turn(tool_calls=[("research", {"input": "go"})]))
    run_id = await psych_runtime.dispatch(scoped, PARENT, "help")
    parent = await load_state(store, run_id)
    call = psych_runtime.ports.ToolCall(call_id="2.0", name="research", arguments='{"input": "go"}')
    ref = PARENT.tools[1]
    assert isinstance(ref, AgentTool)
    first = await start_child(store, parent, call, ref, "go", ("lookup",), SystemClock())
    again = await start_child(store, parent, call, ref, "go", ("lookup",), SystemClock())
    assert first == again == f"{run_id}-2.0"
    page = await scoped.list_runs(psych_runtime.RunQuery(parent_run_id=run_id))
    assert [row.run_id for row in page.items] == [first]
    del model


async def test_cancelling_a_parent_cancels_its_running_child() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    release = asyncio.Event()

    async def slow_lookup(order_id: str) -> str:
        """Look up, slowly."""
        await release.wait()
        return "shipped"

    slow_lookup.__name__ = "lookup"
    model = ByModel(
        parent_model=FakeModel().turn(tool_calls=[("research", {"input": "go"})]),
        child_model=FakeModel().turn(tool_calls=[("lookup", {"order_id": "A1"})]),
    )
    run_id = await psych_runtime.dispatch(scoped, PARENT, "help")
    worker = Worker(
        store,
        Runtime(
            model=model,
            tools=[slow_lookup, delete_all],
            cancel_grace=0.2,
            leases=Leases(ttl=dt.timedelta(seconds=0.3)),
        ),
        concurrency=2,
    )
    serving = asyncio.create_task(worker.run_until_idle())
    child_id = child_run_id(run_id, "2.0")
    async for record in psych_runtime.stream(scoped, run_id):
        if record.body.type == "run_suspended":
            break
    async for record in psych_runtime.stream(scoped, child_id):
        if record.body.type == "tool_call_started":
            break
    await psych_runtime.cancel(scoped, run_id, "customer left")
    await asyncio.wait_for(serving, timeout=20)
    release.set()
    assert (await psych_runtime.status(scoped, run_id)).status == "cancelled"
    child = await psych_runtime.status(scoped, child_id)
    assert child.status == "cancelled"
    assert child.error is not None and run_id in child.error

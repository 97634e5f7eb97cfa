"""Scope and policy: tenants never see each other's runs, the policy authorizes every public
call, and it narrows the tools a run is offered before every model call."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    AllowAll,
    CodeTool,
    MemoryStore,
    ModelRef,
    RunQuery,
    Runtime,
    Scope,
    ScopedStore,
    Worker,
)
from psych_runtime.errors import PolicyDenied, RunNotFound
from psych_runtime.ports import Policy, PolicyAction
from psych_runtime.records import ToolCallFailed
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import ToolRegistry

HOME = Scope(tenant="acme", principal="ann")
STRANGER = Scope(tenant="globex", principal="ann")

# What each public function's required parameters (other than the store and the run id) are
# given. A new public function with a run id and a new required parameter fails the test until
# a sample is added here: it cannot be forgotten.
SAMPLES: dict[str, Any] = {
    "call_id": "1.0",
    "by": "ann",
    "reason": "not now",
    "message": "hello",
    "payload": None,
    "event": "paid",
    "step": "confirm",
    "answer": "yes",
    "from_step": "confirm",
}


READS = ("status", "report", "read_log", "stream", "workflow_view")
"""The functions that only read a run: each asks the policy for ``read``."""


def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


deleted: list[str] = []


def delete_all(confirm: bool) -> str:
    """Delete every order."""
    deleted.append("all")
    return "deleted"


SPEC = AgentSpec(
    name="clerk",
    model=ModelRef(model="fake"),
    tools=(CodeTool(name="lookup"), CodeTool(name="delete_all")),
)


def run_id_functions() -> dict[str, Callable[..., Any]]:
    """Every public function of psych_runtime that takes a run id."""
    found: dict[str, Callable[..., Any]] = {
        name: obj
        for name in psych_runtime.__all__
        if inspect.isfunction(obj := getattr(psych_runtime, name))
        and "run_id" in inspect.signature(obj).parameters
    }
    assert {"status", "report", "read_log", "stream", "approve", "deny", "resume"} <= set(found)
    assert {"cancel", "interrupt"} <= set(found)
    return found


async def call(function: Callable[..., Any], store: ScopedStore, run_id: str) -> Any:
    kwargs: dict[str, Any] = {}
    for parameter in list(inspect.signature(function).parameters.values())[2:]:
        if parameter.default is inspect.Parameter.empty:
            assert parameter.name in SAMPLES, f"{function.__name__}: add a sample for it"
            kwargs[parameter.name] = SAMPLES[parameter.name]
    result = function(store, run_id, **kwargs)
    if inspect.isasyncgen(result):
        return await anext(result)
    return await result


async def outcome(function: Callable[..., Any], store: ScopedStore, run_id: str) -> str:
    try:
        await call(function, store, run_id)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).replace(run_id, '<id>')}"
    return "returned"


async def admitted_run(store: MemoryStore) -> str:
    model = FakeModel().turn(text="hello")
    async with psych_runtime.session(model, store=store, scope=HOME) as s:
        view = await s.ask(SPEC.model_copy(update={"tools": ()}), "hi")
    return view.run_id


@pytest.mark.parametrize("name", sorted(run_id_functions()))
async def test_another_tenants_run_is_exactly_like_a_missing_run(name: str) -> None:
    function = run_id_functions()[name]
    store = MemoryStore()
    run_id = await admitted_run(store)
    missing = "01NOSUCHRUN0000000000000000"
    stranger = await outcome(function, store.scoped(STRANGER), run_id)
    nothing = await outcome(function, store.scoped(STRANGER), missing)
    assert stranger == nothing
    assert stranger.startswith("RunNotFound: run <id> not found in this scope")
    # The run is there for its own tenant: reading it works.
    assert (await psych_runtime.status(store.scoped(HOME), run_id)).status == "completed"


@pytest.mark.parametrize("name", sorted(run_id_functions()))
async def test_a_plain_store_is_refused_saying_how_to_scope_it(name: str) -> None:
    function = run_id_functions()[name]
    store = MemoryStore()
    run_id = await admitted_run(store)
    with pytest.raises(TypeError) as refused:
        await call(function, cast(ScopedStore, store), run_id)
    assert str(refused.value).startswith(f"{name}() takes a scoped store, not MemoryStore:")
    assert "store.scoped(Scope(tenant=...))" in str(refused.value)


async def test_dispatch_refuses_a_plain_store_before_saving_anything() -> None:
    store = MemoryStore()
    with pytest.raises(TypeError, match=r"dispatch\(\) takes a scoped store, not MemoryStore"):
        await psych_runtime.dispatch(cast(ScopedStore, store), SPEC, "hi")
    assert (await store.list_runs("default", RunQuery())).items == ()


async def test_scoped_store_calls_treat_another_tenants_run_as_missing() -> None:
    store = MemoryStore()
    run_id = await admitted_run(store)
    other = store.scoped(STRANGER)
    with pytest.raises(RunNotFound):
        await other.run(run_id)
    with pytest.raises(RunNotFound):
        await other.read(run_id)
    assert await other.delete_run(run_id) is False
    assert (await other.list_runs()).items == ()
    assert await store.scoped(HOME).read(run_id)


async def test_a_session_of_another_tenant_cannot_drive_the_run() -> None:
    store = MemoryStore()
    run_id = await admitted_run(store)
    async with psych_runtime.session(FakeModel(), store=store, scope=STRANGER) as s:
        with pytest.raises(RunNotFound):
            await s.drive(run_id)


class Rules:
    """A policy from a table: principals denied actions, and tools taken away."""

    def __init__(
        self,
        *,
        denied_actions: dict[str, set[str]] | None = None,
        denied_tools: dict[str, set[str]] | None = None,
    ) -> None:
        self.denied_actions = denied_actions or {}
        self.denied_tools = denied_tools or {}
        self.narrowed: list[tuple[str | None, tuple[str, ...]]] = []

    def authorize(self, scope: Scope, action: PolicyAction, target: str) -> None:
        if action in self.denied_actions.get(scope.principal or "", set()):
            raise PolicyDenied(scope, action, target, "read-only role")

    def narrow(self, scope: Scope, tools: Sequence[str]) -> list[str]:
        self.narrowed.append((scope.principal, tuple(tools)))
        taken = self.denied_tools.get(scope.principal or "", set())
        return [*(name for name in tools if name not in taken), "not_a_tool_of_the_spec"]


def test_the_policies_in_the_box_fit_the_port() -> None:
    assert isinstance(AllowAll(), Policy)
    assert isinstance(Rules(), Policy)


async def test_a_tool_denied_to_a_principal_is_never_offered_and_a_forged_call_is_refused() -> None:
    deleted.clear()
    policy = Rules(denied_tools={"intern": {"delete_all"}})
    intern = Scope(tenant="acme", principal="intern")
    # The model calls the tool it was not offered anyway (a forged call).
    model = (
        FakeModel()
        .turn(tool_calls=[("delete_all", {"confirm": True}), ("lookup", {"order_id": "A1"})])
        .turn(text="done")
    )
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=model, tools=[lookup, delete_all], policy=policy),
        scope=intern,
    ) as s:
        view = await s.ask(SPEC, "clean up")
        log = await psych_runtime.read_log(s.store, view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert view.status == "completed"
    for request in model.requests:
        assert [tool.name for tool in request.tools] == ["lookup"]
    assert deleted == [], "the denied tool never ran"
    refused = [r.body for r in log if isinstance(r.body, ToolCallFailed)]
    assert [(b.call_id, b.reason) for b in refused] == [("2.0", "unknown_tool")]
    assert "available: lookup" in refused[0].error
    forged, allowed = report.tool_calls
    assert (forged.name, forged.outcome, forged.starts) == ("delete_all", "failed", 0)
    assert (allowed.name, allowed.outcome) == ("lookup", "succeeded")
    # Another principal of the same tenant is offered both.
    admin_model = FakeModel().turn(text="nothing to do")
    admin = Scope(tenant="acme", principal="admin")
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=admin_model, tools=[lookup, delete_all], policy=policy),
        scope=admin,
    ) as s:
        await s.ask(SPEC, "hi")
    assert [tool.name for tool in admin_model.requests[0].tools] == ["lookup", "delete_all"]


async def test_a_worker_narrows_tools_by_the_runs_own_scope() -> None:
    deleted.clear()
    store = MemoryStore()
    policy = Rules(denied_tools={"intern": {"delete_all"}})
    intern = store.scoped(Scope(tenant="acme", principal="intern"), policy=policy)
    run_id = await psych_runtime.dispatch(intern, SPEC, "clean up")
    model = FakeModel().turn(tool_calls=[("delete_all", {"confirm": True})]).turn(text="no")
    await Worker(
        store, Runtime(model=model, tools=[lookup, delete_all], policy=policy)
    ).run_until_idle()
    assert [tool.name for tool in model.requests[0].tools] == ["lookup"]
    assert deleted == []
    [call] = (await psych_runtime.report(intern, run_id)).tool_calls
    assert (call.outcome, call.reason) == ("failed", "unknown_tool")
    # Asked before each model call (an attempt that begins with one asks nothing more), for
    # the run's own scope.
    assert policy.narrowed == [("intern", ("lookup", "delete_all"))] * len(model.requests)


async def test_tools_are_resolved_again_before_every_model_call() -> None:
    deleted.clear()
    policy = Rules()
    model = FakeModel()

    class Revoking(FakeModel):
        """Takes delete_all away from the intern once the first answer is given."""

        async def complete(self, request: Any, **options: Any) -> Any:
            response = await model.complete(request, **options)
            policy.denied_tools["intern"] = {"delete_all"}
            return response

    model.turn(tool_calls=[("lookup", {"order_id": "A1"})])
    model.turn(tool_calls=[("delete_all", {"confirm": True})])
    model.turn(text="done")
    intern = Scope(tenant="acme", principal="intern")
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=Revoking(), tools=[lookup, delete_all], policy=policy),
        scope=intern,
    ) as s:
        view = await s.ask(SPEC, "go")
        report = await psych_runtime.report(s.store, view.run_id)
    offered = [[tool.name for tool in r.tools] for r in model.requests]
    assert offered == [["lookup", "delete_all"], ["lookup"], ["lookup"]]
    assert [(c.name, c.outcome, c.reason) for c in report.tool_calls] == [
        ("lookup", "succeeded", None),
        ("delete_all", "failed", "unknown_tool"),
    ]
    assert deleted == []


async def test_every_public_call_asks_the_policy_first() -> None:
    store = MemoryStore()
    policy = Rules(
        denied_actions={
            "auditor": {
                "dispatch",
                "approve",
                "deny",
                "resume",
                "send_event",
                "answer",
                "continue_run",
                "replay",
                "cancel",
                "interrupt",
            }
        }
    )
    writer = store.scoped(Scope(tenant="acme", principal="ann"), policy=policy)
    auditor = store.scoped(Scope(tenant="acme", principal="auditor"), policy=policy)
    with pytest.raises(PolicyDenied) as denied:
        await psych_runtime.dispatch(auditor, SPEC, "hi")
    assert (denied.value.action, denied.value.target) == ("dispatch", "clerk")
    assert "principal 'auditor' of tenant 'acme' may not dispatch 'clerk'" in str(denied.value)
    assert (await writer.list_runs()).items == (), "a refused dispatch saves nothing"
    run_id = await psych_runtime.dispatch(writer, SPEC, "hi")
    assert (await psych_runtime.status(auditor, run_id)).status == "queued"
    assert await psych_runtime.read_log(auditor, run_id)
    for name, function in run_id_functions().items():
        if name in READS:
            continue
        with pytest.raises(PolicyDenied) as denied:
            await call(function, auditor, run_id)
        assert (denied.value.action, denied.value.target) == (name, run_id)
        assert denied.value.scope == auditor.scope
    # Denied before the store was touched: the inbox is empty.
    assert await store.signals(run_id) == []


async def test_reads_are_denied_to_a_principal_without_read() -> None:
    store = MemoryStore()
    policy = Rules(denied_actions={"robot": {"read"}})
    run_id = await psych_runtime.dispatch(store.scoped(HOME), SPEC, "hi")
    robot = store.scoped(Scope(tenant="acme", principal="robot"), policy=policy)
    for name in READS:
        with pytest.raises(PolicyDenied, match=re.escape(f"may not read '{run_id}'")):
            await call(getattr(psych_runtime, name), robot, run_id)


async def test_a_session_allows_all_by_default() -> None:
    async with psych_runtime.session(FakeModel()) as s:
        assert isinstance(s.store.policy, AllowAll)


def test_resolution_keeps_the_specs_order_and_narrows_by_parent_then_policy() -> None:
    registry = ToolRegistry([lookup, delete_all])
    policy = Rules(denied_tools={"intern": {"lookup"}})
    intern = Scope(tenant="acme", principal="intern")
    assert list(registry.resolve(SPEC)) == ["lookup", "delete_all"]
    assert list(registry.resolve(SPEC, allowed=("delete_all",))) == ["delete_all"]
    assert list(registry.resolve(SPEC, intern, policy)) == ["delete_all"]
    assert list(registry.resolve(SPEC, intern, policy, allowed=("lookup",))) == []
    # The policy is asked only about the tools still in the running, in the spec's order.
    assert policy.narrowed == [("intern", ("lookup", "delete_all")), ("intern", ("lookup",))]
    assert list(ToolRegistry([lookup]).resolve(SPEC)) == ["lookup"]

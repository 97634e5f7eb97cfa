"""What the runtime reports to `Runtime.telemetry`, and that a failing adapter fails no run."""

from __future__ import annotations

import logging

import psych_runtime
from psych_core import child_traceparent
from psych_runtime import AgentSpec, AgentTool, CodeTool, ModelRef, Runtime, Scope, Worker
from psych_runtime.ports import Claimed, Committed, Stopped, Telemetry
from psych_runtime.records import RunAdmitted
from psych_runtime.testing import FakeModel

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


SPEC = AgentSpec(
    name="support",
    model=ModelRef(model="fake"),
    tools=(CodeTool(name="lookup"),),
)


def model() -> FakeModel:
    return FakeModel().turn(tool_calls=[("lookup", {"order": "A1"})]).turn(text="Shipped.")


class Recording(Telemetry):
    def __init__(self, traceparent: str | None = None) -> None:
        self.reports: list[Claimed | Committed | Stopped] = []
        self._traceparent = traceparent

    def traceparent(self) -> str | None:
        return self._traceparent

    def claimed(self, claimed: Claimed) -> None:
        self.reports.append(claimed)

    def committed(self, committed: Committed) -> None:
        self.reports.append(committed)

    def stopped(self, stopped: Stopped) -> None:
        self.reports.append(stopped)


class Failing(Telemetry):
    def traceparent(self) -> str | None:
        raise RuntimeError("no trace here")

    def claimed(self, claimed: Claimed) -> None:
        raise RuntimeError("exporter down")

    def committed(self, committed: Committed) -> None:
        raise RuntimeError("exporter down")

    def stopped(self, stopped: Stopped) -> None:
        raise RuntimeError("exporter down")


async def test_the_adapter_hears_the_claim_every_append_and_the_stop() -> None:
    telemetry = Recording()
    store = psych_runtime.MemoryStore()
    run_id = await psych_runtime.dispatch(store.scoped(Scope(tenant="t")), SPEC, "where is A1?")
    runtime = Runtime(model=model(), tools=[lookup], telemetry=telemetry)
    await Worker(store, runtime, poll_interval=0.01).run_until_idle()
    log = await store.read(run_id)
    claimed, *committed, stopped = telemetry.reports
    assert isinstance(claimed, Claimed)
    assert (claimed.run_id, claimed.attempt, claimed.store) == (run_id, 1, "MemoryStore")
    assert list(claimed.log) == log[:2]  # admission and this attempt's start
    assert claimed.waited >= 0
    assert all(isinstance(report, Committed) for report in committed)
    assert [r for report in committed for r in report.records] == log[2:]  # type: ignore[union-attr]
    assert all(report.seconds >= 0 for report in committed)  # type: ignore[union-attr]
    assert committed[-1].state.status == "completed"  # type: ignore[union-attr]
    assert isinstance(stopped, Stopped)
    assert stopped.state is not None
    assert (stopped.error, stopped.lease_lost, stopped.state.status) == (None, False, "completed")


async def test_a_failing_adapter_is_counted_and_logged_and_fails_no_run(caplog) -> None:
    store = psych_runtime.MemoryStore()
    scoped = store.scoped(Scope(tenant="t"), telemetry=Failing())
    run_id = await psych_runtime.dispatch(scoped, SPEC, "where is A1?")
    worker = Worker(store, Runtime(model=model(), tools=[lookup], telemetry=Failing()))
    with caplog.at_level(logging.WARNING, logger="psych_runtime.telemetry"):
        await worker.run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    assert worker.telemetry_errors == 1 + 3 + 1  # the claim, three appends, the stop
    messages = [r.getMessage() for r in caplog.records]
    assert any("Failing failed in committed" in m and "the run goes on" in m for m in messages)
    admitted = (await store.read(run_id))[0].body
    assert isinstance(admitted, RunAdmitted)
    assert admitted.traceparent is None


async def test_dispatch_records_the_callers_trace_and_a_child_joins_it() -> None:
    store = psych_runtime.MemoryStore()
    scoped = store.scoped(Scope(tenant="t"), telemetry=Recording(CALLER.upper()))
    helper = AgentSpec(name="helper", model=ModelRef(model="fake"))
    lead = AgentSpec(
        name="lead", model=ModelRef(model="fake"), tools=(AgentTool(name="ask", spec=helper),)
    )
    run_id = await psych_runtime.dispatch(scoped, lead, "go")
    admitted = (await store.read(run_id))[0].body
    assert isinstance(admitted, RunAdmitted)
    assert admitted.traceparent == CALLER  # normalised
    script = (
        FakeModel().turn(tool_calls=[("ask", {"input": "help"})]).turn(text="ok").turn(text="done")
    )
    await Worker(store, Runtime(model=script), poll_interval=0.01).run_until_idle()
    log = await store.read(run_id)
    child_id = next(r.body.child_run_id for r in log if r.body.type == "child_started")
    call_id = next(r.body.call_id for r in log if r.body.type == "child_started")
    child = (await store.read(child_id))[0].body
    assert isinstance(child, RunAdmitted)
    expected = child_traceparent(run_id, CALLER, call_id)
    assert child.traceparent == expected


async def test_an_adapter_that_says_something_else_is_not_recorded() -> None:
    store = psych_runtime.MemoryStore()
    scoped = store.scoped(Scope(tenant="t"), telemetry=Recording("not a traceparent"))
    run_id = await psych_runtime.dispatch(scoped, SPEC, "hi")
    admitted = (await store.read(run_id))[0].body
    assert isinstance(admitted, RunAdmitted)
    assert admitted.traceparent is None

"""Approvals, resumes, cancels, interrupts and the live stream, on the memory store."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

import psych_runtime
from psych_runtime import AgentSpec, ArgRule, CodeTool, MemoryStore, ModelRef, Scope, WaitFor
from psych_runtime.errors import NotAwaitingApproval
from psych_runtime.ports import ToolResultMessage, UserMessage
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")


class Ledger:
    def __init__(self) -> None:
        self.refunds: list[tuple[str, int]] = []

    async def refund(self, order_id: str, amount: int) -> str:
        """Refund an order."""
        self.refunds.append((order_id, amount))
        return f"refunded {amount} on {order_id}"

    async def lookup(self, order_id: str) -> str:
        """Look up an order."""
        return f"{order_id} shipped"


def make_spec(approval: Any = True, **extra: Any) -> AgentSpec:
    return AgentSpec(
        name="support",
        model=ModelRef(model="fake"),
        tools=(CodeTool(name="refund", requires_approval=approval), CodeTool(name="lookup")),
        **extra,
    )


def refund_then_answer(amount: int = 120) -> FakeModel:
    return (
        FakeModel()
        .turn(tool_calls=[("refund", {"order_id": "A1", "amount": amount})])
        .turn(text="Done.")
    )


async def test_a_call_needing_approval_suspends_the_run_until_approved() -> None:
    ledger = Ledger()
    store = MemoryStore()
    model = refund_then_answer()
    async with psych_runtime.session(
        model, tools=[ledger.refund, ledger.lookup], store=store, scope=SCOPE
    ) as s:
        view = await s.ask(make_spec(), "refund A1")
        assert view.status == "waiting"
        status = await psych_runtime.status(s.store, view.run_id)
        assert (status.waiting, status.waiting_for) == ("approval", ("2.0",))
        row = await store.get_run("acme", view.run_id)
        assert row is not None and row.lease_owner is None and row.runnable_at is None
        assert ledger.refunds == []

        number = await psych_runtime.approve(s.store, view.run_id, "2.0", by="ana", note="ok")
        assert number == 1
        done = await s.drive(view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert done.status == "completed" and done.text == "Done."
    assert ledger.refunds == [("A1", 120)]
    call = report.tool_calls[0]
    assert (call.outcome, call.approved, call.decided_by, call.decision_note) == (
        "succeeded",
        True,
        "ana",
        "ok",
    )
    assert call.approval_rule == "requires_approval=True"
    assert call.decided_at is not None


async def test_a_denied_call_is_answered_with_who_and_why() -> None:
    ledger = Ledger()
    model = refund_then_answer()
    async with psych_runtime.session(model, tools=[ledger.refund, ledger.lookup]) as s:
        view = await s.ask(make_spec(), "refund A1")
        await psych_runtime.deny(s.store, view.run_id, "2.0", by="bo", reason="over the limit")
        done = await s.drive(view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert done.status == "completed" and ledger.refunds == []
    call = report.tool_calls[0]
    assert (call.outcome, call.reason, call.approved) == ("failed", "denied", False)
    assert call.error == "denied by bo: over the limit"
    told = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert "denied by bo: over the limit" in told[0].content


async def test_an_approver_may_edit_the_arguments() -> None:
    ledger = Ledger()
    async with psych_runtime.session(
        refund_then_answer(500), tools=[ledger.refund, ledger.lookup]
    ) as s:
        view = await s.ask(make_spec(), "refund A1")
        await psych_runtime.approve(
            s.store, view.run_id, "2.0", by="ana", arguments={"order_id": "A1", "amount": 100}
        )
        await s.drive(view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert ledger.refunds == [("A1", 100)]
    call = report.tool_calls[0]
    assert call.arguments == {"order_id": "A1", "amount": 500}
    assert call.edited_arguments == {"order_id": "A1", "amount": 100}


async def test_a_decision_is_single_use_and_must_name_a_pending_call() -> None:
    async with psych_runtime.session(
        refund_then_answer(), tools=[Ledger().refund, Ledger().lookup]
    ) as s:
        view = await s.ask(make_spec(), "refund A1")
        with pytest.raises(NotAwaitingApproval, match=r"call 9\.9 is not awaiting approval"):
            await psych_runtime.approve(s.store, view.run_id, "9.9", by="ana")
        await psych_runtime.approve(s.store, view.run_id, "2.0", by="ana")
        with pytest.raises(NotAwaitingApproval, match="already decided"):
            await psych_runtime.deny(s.store, view.run_id, "2.0", by="bo", reason="no")
        await s.drive(view.run_id)
        with pytest.raises(NotAwaitingApproval, match="has ended"):
            await psych_runtime.approve(s.store, view.run_id, "2.0", by="ana")


async def test_two_racing_decisions_exactly_one_wins() -> None:
    for _ in range(10):
        async with psych_runtime.session(
            refund_then_answer(), tools=[Ledger().refund, Ledger().lookup]
        ) as s:
            view = await s.ask(make_spec(), "refund A1")
            results = await asyncio.gather(
                psych_runtime.approve(s.store, view.run_id, "2.0", by="ana"),
                psych_runtime.deny(s.store, view.run_id, "2.0", by="bo", reason="no"),
                return_exceptions=True,
            )
            assert sorted(type(r).__name__ for r in results) == ["NotAwaitingApproval", "int"]


async def test_an_argument_rule_asks_only_for_what_it_matches_in_a_mixed_turn() -> None:
    ledger = Ledger()
    model = (
        FakeModel()
        .turn(
            tool_calls=[
                ("refund", {"order_id": "A1", "amount": 50}),
                ("refund", {"order_id": "B2", "amount": 150}),
                ("lookup", {"order_id": "C3"}),
            ]
        )
        .turn(text="Done.")
    )
    spec = make_spec(ArgRule("amount", "gt", 100))
    async with psych_runtime.session(model, tools=[ledger.refund, ledger.lookup]) as s:
        view = await s.ask(spec, "refunds")
        # The calls that need no approval ran before the run suspended.
        assert view.status == "waiting"
        assert ledger.refunds == [("A1", 50)]
        status = await psych_runtime.status(s.store, view.run_id)
        assert status.waiting_for == ("2.1",)
        await psych_runtime.approve(s.store, view.run_id, "2.1", by="ana")
        done = await s.drive(view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert done.status == "completed"
    assert ledger.refunds == [("A1", 50), ("B2", 150)]
    assert report.tool_calls[1].approval_rule == "amount gt 100"
    assert [c.outcome for c in report.tool_calls] == ["succeeded"] * 3


async def test_named_rules_come_from_the_worker_and_unknown_ones_ask() -> None:
    ledger = Ledger()
    spec = make_spec("big_refund")

    def big(arguments: dict[str, Any]) -> bool:
        return int(arguments["amount"]) >= 1000

    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(
            model=refund_then_answer(10),
            tools=[ledger.refund, ledger.lookup],
            approval_rules={"big_refund": big},
        )
    ) as s:
        view = await s.ask(spec, "refund")
    assert view.status == "completed" and ledger.refunds == [("A1", 10)]
    async with psych_runtime.session(
        refund_then_answer(10), tools=[ledger.refund, ledger.lookup]
    ) as s:
        view = await s.ask(spec, "refund")
        report = await psych_runtime.report(s.store, view.run_id)
    assert view.status == "waiting"
    assert report.tool_calls[0].approval_rule is not None
    assert "not registered with this worker" in report.tool_calls[0].approval_rule


async def wait_for_parcel(order_id: str) -> WaitFor:
    """Wait until the carrier confirms delivery."""
    return WaitFor(note=f"delivery of {order_id}")


async def test_a_tool_can_wait_for_an_external_resume_whose_payload_is_its_result() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("wait_for_parcel", {"order_id": "A1"})])
        .turn(text="Delivered.")
    )
    spec = AgentSpec(
        name="a", model=ModelRef(model="fake"), tools=(CodeTool(name="wait_for_parcel"),)
    )
    async with psych_runtime.session(model, tools=[wait_for_parcel]) as s:
        view = await s.ask(spec, "tell me when A1 arrives")
        status = await psych_runtime.status(s.store, view.run_id)
        assert (view.status, status.waiting, status.waiting_for) == (
            "waiting",
            "external",
            ("2.0",),
        )
        await psych_runtime.resume(s.store, view.run_id, {"delivered": True})
        done = await s.drive(view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert done.status == "completed"
    assert report.tool_calls[0].result == {"delivered": True}
    told = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert told[0].content == '{"delivered":true}'


async def test_a_timed_wait_is_due_at_its_time_and_times_out_there() -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    due_at = now[0] + dt.timedelta(hours=1)

    async def sleep_an_hour() -> WaitFor:
        """Wait an hour."""
        return WaitFor(note="an hour", due_at=due_at)

    class Clock:
        def now(self) -> dt.datetime:
            return now[0]

    store = MemoryStore(clock=lambda: now[0])
    scoped = store.scoped(SCOPE)
    spec = AgentSpec(
        name="a", model=ModelRef(model="fake"), tools=(CodeTool(name="sleep_an_hour"),)
    )
    run_id = await psych_runtime.dispatch(scoped, spec, "wait")
    model = FakeModel().turn(tool_calls=[("sleep_an_hour", {})]).turn(text="An hour passed.")
    worker = psych_runtime.Worker(
        store, psych_runtime.Runtime(model=model, tools=[sleep_an_hour], clock=Clock())
    )
    await worker.run_until_idle()
    status = await psych_runtime.status(scoped, run_id)
    assert (status.status, status.due_at) == ("waiting", due_at)
    assert await psych_runtime.due(store, now[0]) == []
    now[0] = due_at + dt.timedelta(seconds=1)
    assert [row.run_id for row in await psych_runtime.due(store, now[0])] == [run_id]
    await worker.run_until_idle()
    report = await psych_runtime.report(scoped, run_id)
    assert report.status == "completed"
    assert report.tool_calls[0].result == {
        "resumed": False,
        "timed_out": True,
        "due_at": due_at.isoformat(),
    }


async def test_a_resume_when_nothing_waits_is_recorded_as_ignored() -> None:
    ledger = Ledger()
    async with psych_runtime.session(
        refund_then_answer(), tools=[ledger.refund, ledger.lookup]
    ) as s:
        view = await s.ask(make_spec(), "refund A1")
        await psych_runtime.resume(s.store, view.run_id, {"x": 1})
        still = await s.drive(view.run_id)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert still.status == "waiting"
    ignored = [r.body for r in log if r.body.type == "signal_ignored"]
    assert len(ignored) == 1
    assert isinstance(ignored[0], psych_runtime.records.SignalIgnored)
    assert "not waiting for a resume" in ignored[0].reason


async def test_cancel_a_waiting_run_fails_its_pending_calls_and_ends_it() -> None:
    ledger = Ledger()
    async with psych_runtime.session(
        refund_then_answer(), tools=[ledger.refund, ledger.lookup]
    ) as s:
        view = await s.ask(make_spec(), "refund A1")
        await psych_runtime.cancel(s.store, view.run_id, "customer left", by="ops")
        done = await s.drive(view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
        with pytest.raises(psych_runtime.errors.RunFinished):
            await psych_runtime.cancel(s.store, view.run_id)
    assert done.status == "cancelled" and ledger.refunds == []
    assert (report.tool_calls[0].outcome, report.tool_calls[0].reason) == ("failed", "cancelled")


async def test_cancel_a_running_run_gives_calls_a_grace_period_then_settles_them() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    started = asyncio.Event()
    finished: list[str] = []

    async def quick() -> str:
        """Quick."""
        started.set()
        await asyncio.sleep(0.05)
        finished.append("quick")
        return "quick done"

    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(30)
        finished.append("slow")
        return "slow done"

    spec = AgentSpec(
        name="a",
        model=ModelRef(model="fake"),
        tools=(CodeTool(name="quick"), CodeTool(name="slow")),
    )
    run_id = await psych_runtime.dispatch(scoped, spec, "go")
    model = FakeModel().turn(tool_calls=[("quick", {}), ("slow", {})])
    worker = psych_runtime.Worker(
        store,
        psych_runtime.Runtime(
            model=model,
            tools=[quick, slow],
            cancel_grace=0.3,
            leases=psych_runtime.Leases(ttl=dt.timedelta(seconds=0.3)),
        ),
    )
    serving = asyncio.create_task(worker.run_until_idle())
    await started.wait()
    await psych_runtime.cancel(scoped, run_id, "stop")
    await asyncio.wait_for(serving, timeout=10)
    report = await psych_runtime.report(scoped, run_id)
    assert report.status == "cancelled"
    outcomes = {c.name: c.outcome for c in report.tool_calls}
    assert outcomes == {"quick": "succeeded", "slow": "unknown"}
    assert finished == ["quick"]


async def test_interrupt_adds_a_message_the_model_sees_at_its_next_turn() -> None:
    release = asyncio.Event()
    called = asyncio.Event()

    async def lookup(order_id: str) -> str:
        """Look up."""
        called.set()
        await release.wait()
        return "shipped"

    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    spec = AgentSpec(name="a", model=ModelRef(model="fake"), tools=(CodeTool(name="lookup"),))
    run_id = await psych_runtime.dispatch(scoped, spec, "where is A1?")
    model = (
        FakeModel()
        .turn(tool_calls=[("lookup", {"order_id": "A1"})])
        .turn(text="A1 shipped; B2 too.")
    )
    worker = psych_runtime.Worker(
        store,
        psych_runtime.Runtime(
            model=model, tools=[lookup], leases=psych_runtime.Leases(ttl=dt.timedelta(seconds=0.3))
        ),
    )
    serving = asyncio.create_task(worker.run_until_idle())
    await called.wait()
    await psych_runtime.interrupt(scoped, run_id, "and B2?")
    # The heartbeat hears of it while the call runs, and the attempt moves it into the log.
    async for record in psych_runtime.stream(scoped, run_id):
        if record.body.type == "signal_received":
            break
    release.set()
    await asyncio.wait_for(serving, timeout=10)
    second = model.requests[1].messages
    roles = [m.role for m in second]
    assert roles == ["user", "assistant", "tool", "user"]
    assert isinstance(second[-1], UserMessage) and second[-1].text == "and B2?"
    status = await psych_runtime.status(scoped, run_id)
    assert (status.status, status.turns) == ("completed", 2)


async def test_stream_yields_every_record_once_in_order_until_the_end() -> None:
    ledger = Ledger()
    async with psych_runtime.session(
        refund_then_answer(), tools=[ledger.refund, ledger.lookup]
    ) as s:
        view = await s.ask(make_spec(), "refund A1")
        seen: list[int] = []

        async def follow(after: int) -> list[int]:
            return [
                record.seq async for record in psych_runtime.stream(s.store, view.run_id, after)
            ]

        following = asyncio.create_task(follow(-1))
        resumed = asyncio.create_task(follow(3))
        await asyncio.sleep(0.05)
        assert not following.done()
        await psych_runtime.approve(s.store, view.run_id, "2.0", by="ana")
        await s.drive(view.run_id)
        seen = await asyncio.wait_for(following, timeout=5)
        tail = await asyncio.wait_for(resumed, timeout=5)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert seen == [r.seq for r in log]
    assert tail == [r.seq for r in log if r.seq > 3]

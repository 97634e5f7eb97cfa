"""A2A peers as tool sources, against a real A2A agent: the demo peer built with the official
SDK's server API (`tests.integration.a2a_demo_peer`), on loopback, streaming or not."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    Leases,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Worker,
    dispatch,
    read_log,
    session,
)
from psych_runtime.a2a import A2AHttp, A2APeer
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import (
    ApprovalRequested,
    Record,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolsUnavailable,
)
from psych_runtime.testing import FakeModel
from psych_runtime.tools._a2a import _pool as a2a_pool
from tests.integration._a2a import demo_peer, ledger_lines
from tests.integration._mcp import free_port

pytestmark = pytest.mark.timeout(120)

MODEL = ModelRef(model="fake")
LOOPBACK = EgressPolicy(allow_loopback=True)


def agent(*peers: A2APeer) -> AgentSpec:
    return AgentSpec(name="a2a-user", model=MODEL, tools=peers, max_turns=6)


def bodies[T](records: Sequence[Record], kind: type[T]) -> list[T]:
    return [r.body for r in records if isinstance(r.body, kind)]


def offered(model: FakeModel, turn: int = 0) -> list[str]:
    return [tool.name for tool in model.requests[turn].tools]


class NoAsking:
    """A policy that takes every ``ask`` skill away from every scope."""

    def authorize(self, scope: Scope, action: str, target: str) -> None:
        return None

    def narrow(self, scope: Scope, tools: Sequence[str]) -> tuple[str, ...]:
        return tuple(name for name in tools if not name.endswith("__ask"))


def kinds(ledger: Path) -> list[str]:
    return [line[0] for line in ledger_lines(ledger)]


def by_call(records: Sequence[Record]) -> dict[str, str]:
    """Each call's id, by the name of the tool it called."""
    return {b.name: b.call_id for b in bodies(records, ToolCallStarted)}


async def test_card_skills_become_tools_narrowed_called_and_recorded(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(
            tool_calls=[
                ("peer__echo", {"message": "hi"}),
                ("peer__book", {"message": "Paris", "data": {"nights": 3}}),
                ("peer__slow", {"message": "not offered"}),
            ]
        )
        .turn(text="done")
    )
    with demo_peer(ledger) as url:
        runtime = Runtime(
            model=model,
            a2a_peers={"peer": A2AHttp(url=url)},
            egress=LOOPBACK,
            policy=NoAsking(),
        )
        spec = agent(A2APeer(name="peer", skills=("echo", "book", "ask", "fail")))
        async with session(runtime=runtime) as s:
            view = await s.ask(spec, "go")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    # The card's skills, narrowed to the allow-list and by the policy, in the card's order.
    assert offered(model) == ["peer__echo", "peer__book", "peer__fail"]
    definition = model.requests[0].tools[0]
    assert "Say the message back" in definition.description
    assert definition.parameters["required"] == ["message"]
    ids = by_call(records)
    finished = {f.call_id: f.result for f in bodies(records, ToolCallFinished)}
    assert finished == {
        ids["peer__echo"]: "echo: hi",
        ids["peer__book"]: {"booked": "Paris", "nights": 3},
    }
    # Tagged read-only on the card: safe; untagged: unsafe. Recorded when the call started.
    safety = {b.name: b.safe_to_retry for b in bodies(records, ToolCallStarted)}
    assert safety == {"peer__echo": True, "peer__book": False}
    (refused,) = bodies(records, ToolCallFailed)
    assert refused.reason == "unknown_tool" and "peer__slow" in refused.error
    # Only what the run was allowed reached the peer.
    assert sorted(line[:2] for line in ledger_lines(ledger) if line[0] != "card") == [
        ["book", "Paris/3"],
        ["echo", "hi"],
    ]


async def test_failed_rejected_and_input_required_tasks_are_failures_the_model_reads(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(
            tool_calls=[
                ("peer__fail", {"message": "x"}),
                ("peer__reject", {"message": "y"}),
                ("peer__ask", {"message": "a room"}),
            ]
        )
        .turn(text="done")
    )
    with demo_peer(ledger) as url:
        runtime = Runtime(model=model, a2a_peers={"peer": A2AHttp(url=url)}, egress=LOOPBACK)
        async with session(runtime=runtime) as s:
            view = await s.ask(agent(A2APeer(name="peer")), "go")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    ids = by_call(records)
    failed = {f.call_id: f for f in bodies(records, ToolCallFailed)}
    assert set(failed) == {ids["peer__fail"], ids["peer__reject"], ids["peer__ask"]}
    assert all(f.reason == "error" for f in failed.values())
    assert failed[ids["peer__fail"]].error == (
        "A2A peer 'peer' skill 'fail' failed: the fail skill always fails"
    )
    assert "rejected the task: I do not take such tasks" in failed[ids["peer__reject"]].error
    asked = failed[ids["peer__ask"]].error
    assert "needs more input: Which city?" in asked and "call the skill again" in asked
    # The model read each failure as the call's result.
    read = {m.call_id: m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)}
    assert read[ids["peer__ask"]].is_error and "Which city?" in read[ids["peer__ask"]].content
    # The task left waiting for input was cancelled at the peer (the session, closing, let
    # that cancel finish).
    assert kinds(ledger).count("cancel") == 1


async def test_a_peer_that_does_not_stream_is_polled_to_the_end(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(
            tool_calls=[
                ("peer__slow_read", {"message": "wait", "data": {"seconds": 1.5}}),
                ("peer__book", {"message": "Rome", "data": {"nights": 2}}),
            ]
        )
        .turn(text="done")
    )
    with demo_peer(ledger, DEMO_STREAMING="0") as url:
        connection = A2AHttp(url=url, poll_interval=0.2)
        runtime = Runtime(model=model, a2a_peers={"peer": connection}, egress=LOOPBACK)
        async with session(runtime=runtime) as s:
            view = await s.ask(agent(A2APeer(name="peer")), "go")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    ids = by_call(records)
    results = {f.call_id: f.result for f in bodies(records, ToolCallFinished)}
    assert results == {
        ids["peer__slow_read"]: "slow_read done",
        ids["peer__book"]: {"booked": "Rome", "nights": 2},
    }
    assert kinds(ledger).count("slow_read") == 1


async def test_a_polled_call_cut_off_by_its_timeout_cancels_the_remote_task(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(tool_calls=[("peer__slow", {"message": "a", "data": {"seconds": 30}})])
        .turn(text="done")
    )
    # The peer does not stream: the message is answered at once with its task, which is
    # polled, so the call knows which task to cancel from the start.
    with demo_peer(ledger, DEMO_STREAMING="0") as url:
        connection = A2AHttp(url=url, poll_interval=0.2)
        runtime = Runtime(model=model, a2a_peers={"peer": connection}, egress=LOOPBACK)
        async with session(runtime=runtime) as s:
            view = await s.ask(agent(A2APeer(name="peer", timeout=1.5)), "go")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    (settled,) = bodies(records, ToolCallSettled)
    assert "timeout" in settled.note
    seen = kinds(ledger)
    assert seen.count("cancel") == 1 and "slow-cancelled" in seen and "slow" not in seen


async def test_a_hung_call_ends_at_its_timeout_and_the_remote_task_is_cancelled(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(
            tool_calls=[
                ("peer__slow", {"message": "a", "data": {"seconds": 30}}),
                ("peer__slow_read", {"message": "b", "data": {"seconds": 30}}),
            ]
        )
        .turn(text="done")
    )
    with demo_peer(ledger) as url:
        runtime = Runtime(model=model, a2a_peers={"peer": A2AHttp(url=url)}, egress=LOOPBACK)
        async with session(runtime=runtime) as s:
            view = await s.ask(agent(A2APeer(name="peer", timeout=1.5)), "go")
            records = await read_log(s.store, view.run_id)
    # The session closed its connections after the remote cancels had been answered.
    assert view.status == "completed"
    (settled,) = bodies(records, ToolCallSettled)  # slow: unsafe, its effect may have begun
    assert "timeout" in settled.note and settled.call_id == by_call(records)["peer__slow"]
    (failed,) = bodies(records, ToolCallFailed)  # slow_read: tagged idempotent, a timeout
    assert failed.reason == "timeout"
    seen = kinds(ledger)
    assert seen.count("cancel") == 2, ledger_lines(ledger)
    assert "slow-cancelled" in seen and "slow_read-cancelled" in seen
    assert "slow" not in seen and "slow_read" not in seen  # neither ran to its end


async def test_cancelling_the_run_cancels_the_remote_task(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(tool_calls=[("peer__slow", {"message": "long", "data": {"seconds": 60}})])
        .turn(text="never")
    )
    store = MemoryStore()
    scoped = store.scoped(Scope(tenant="t1"))
    with demo_peer(ledger) as url:
        runtime = Runtime(
            model=model,
            a2a_peers={"peer": A2AHttp(url=url)},
            egress=LOOPBACK,
            cancel_grace=0.2,
            # A running run hears the cancel at its next lease renewal.
            leases=Leases(heartbeat=dt.timedelta(seconds=0.5)),
        )
        run_id = await dispatch(scoped, agent(A2APeer(name="peer")), "go")
        worker = asyncio.create_task(Worker(store, runtime, poll_interval=0.05).run_until_idle())
        deadline = time.monotonic() + 30
        while "slow-begun" not in kinds(ledger):
            assert time.monotonic() < deadline and not worker.done()
            await asyncio.sleep(0.05)
        task_id = next(line[1] for line in ledger_lines(ledger) if line[0] == "slow-begun")
        await psych_runtime.cancel(scoped, run_id, "changed my mind")
        await asyncio.wait_for(worker, 30)
        lines = ledger_lines(ledger)
    view = await psych_runtime.status(scoped, run_id)
    assert view.status == "cancelled"
    records = await scoped.read(run_id)
    (settled,) = bodies(records, ToolCallSettled)
    assert "grace" in settled.note
    # The peer was told to cancel that very task, and its work stopped there.
    assert ["cancel", f"{task_id}/none"] in [line[:2] for line in lines]
    assert ["slow-cancelled", task_id] in [line[:2] for line in lines]
    assert "slow" not in [line[0] for line in lines]


async def test_a_required_peer_that_is_down_fails_the_run_naming_it() -> None:
    model = FakeModel().turn(text="never asked")
    down = A2AHttp(url=f"http://127.0.0.1:{free_port()}", timeout=5)
    runtime = Runtime(model=model, a2a_peers={"gone": down}, egress=LOOPBACK)
    async with session(runtime=runtime) as s:
        view = await s.ask(agent(A2APeer(name="gone")), "go")
    assert view.status == "failed"
    assert view.error is not None and "A2A peer 'gone' cannot be reached" in view.error
    assert model.requests == []


async def test_an_optional_peer_that_is_down_is_left_out_and_logged(tmp_path: Path) -> None:
    model = FakeModel().turn(tool_calls=[("peer__echo", {"message": "x"})]).turn(text="done")
    down = A2AHttp(url=f"http://127.0.0.1:{free_port()}", timeout=5)
    with demo_peer() as url:
        runtime = Runtime(
            model=model,
            a2a_peers={"gone": down, "peer": A2AHttp(url=url)},
            egress=LOOPBACK,
        )
        spec = agent(A2APeer(name="gone", required=False), A2APeer(name="peer"))
        async with session(runtime=runtime) as s:
            view = await s.ask(spec, "go")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    missing = bodies(records, ToolsUnavailable)
    assert len(missing) == 2  # one per turn
    assert missing[0].source == "a2a:gone" and "cannot be reached" in missing[0].error
    assert not any(name.startswith("gone__") for name in offered(model))
    assert [f.result for f in bodies(records, ToolCallFinished)] == ["echo: x"]


async def test_the_card_and_the_calls_go_through_the_egress_seam(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    with demo_peer(ledger) as url:
        runtime = Runtime(model=FakeModel(), a2a_peers={"peer": A2AHttp(url=url)})
        async with session(runtime=runtime) as s:
            view = await s.ask(agent(A2APeer(name="peer")), "go")
    # Public addresses only, by default: loopback is refused before connecting.
    assert view.status == "failed" and view.error is not None
    assert "loopback" in view.error and "A2A peer 'peer'" in view.error
    assert ledger_lines(ledger) == []


async def test_the_card_is_kept_for_its_time_to_live_then_read_again(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"

    def script() -> FakeModel:
        model = FakeModel()
        for _ in range(2):
            model.turn(tool_calls=[("peer__echo", {"message": "x"})]).turn(text="done")
        return model

    with demo_peer(ledger) as url:
        kept = Runtime(
            model=script(), a2a_peers={"peer": A2AHttp(url=url, card_ttl=60)}, egress=LOOPBACK
        )
        async with session(runtime=kept) as s:
            for _ in range(2):  # two runs, two turns each: four resolutions
                assert (await s.ask(agent(A2APeer(name="peer")), "go")).status == "completed"
        assert kinds(ledger).count("card") == 1

        brief = Runtime(
            model=script(), a2a_peers={"peer": A2AHttp(url=url, card_ttl=0.3)}, egress=LOOPBACK
        )
        async with session(runtime=brief) as s:
            assert (await s.ask(agent(A2APeer(name="peer")), "go")).status == "completed"
            read = kinds(ledger).count("card")
            await asyncio.sleep(0.5)
            assert (await s.ask(agent(A2APeer(name="peer")), "go")).status == "completed"
        assert kinds(ledger).count("card") == read + 1
        assert read in (2, 3)  # the first run's two turns: read once, or again past 0.3 s


async def test_a_connection_left_idle_is_closed_and_made_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(a2a_pool, "IDLE_CLOSE", 0.0)
    ledger = tmp_path / "ledger"
    model = FakeModel()
    for _ in range(2):
        model.turn(tool_calls=[("peer__echo", {"message": "x"})]).turn(text="done")
    with demo_peer(ledger) as url:
        runtime = Runtime(
            model=model, a2a_peers={"peer": A2AHttp(url=url, card_ttl=600)}, egress=LOOPBACK
        )
        async with session(runtime=runtime) as s:
            first = await s.ask(agent(A2APeer(name="peer")), "one")
            second = await s.ask(agent(A2APeer(name="peer")), "two")
    assert first.status == second.status == "completed"
    # The card outlives both runs (kept, it is read once: the test above), so each read
    # here is a new connection: with no idle time allowed, the one left from the last model
    # call is closed at each turn's resolution and a new one made, and calls still go through.
    assert kinds(ledger) == ["card", "echo", "card"] * 2


async def test_a_peer_s_calls_wait_for_approval_when_the_reference_asks(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = FakeModel().turn(tool_calls=[("peer__book", {"message": "Oslo"})]).turn(text="done")
    with demo_peer(ledger) as url:
        runtime = Runtime(model=model, a2a_peers={"peer": A2AHttp(url=url)}, egress=LOOPBACK)
        spec = agent(A2APeer(name="peer", requires_approval=True))
        async with session(runtime=runtime) as s:
            view = await s.ask(spec, "go")
            records = await read_log(s.store, view.run_id)
            assert view.status == "waiting"
            (asked,) = bodies(records, ApprovalRequested)
            assert asked.rule == "requires_approval=True"
            assert not bodies(records, ToolCallStarted)
            assert "book" not in kinds(ledger)  # nothing reached the peer before approval
            await psych_runtime.approve(s.store, view.run_id, asked.call_id, by="ana")
            view = await s.drive(view.run_id)
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    assert [f.result for f in bodies(records, ToolCallFinished)] == [
        {"booked": "Oslo", "nights": 1}
    ]
    assert kinds(ledger).count("book") == 1

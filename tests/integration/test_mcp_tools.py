"""MCP servers as tool sources, against real servers: the demo server built with the SDK (over
stdio and over streamable HTTP on loopback) and `mcp-server-time` from the package registry."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from psych_runtime import (
    AgentSpec,
    ModelRef,
    Runtime,
    Scope,
    read_log,
    session,
)
from psych_runtime.mcp import McpHttp, McpServer, McpStdio
from psych_runtime.model.egress import EgressPolicy
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
from psych_runtime.tools._mcp import _pool
from tests.integration._mcp import BIN, demo_http, demo_stdio, ledger_lines

pytestmark = pytest.mark.timeout(120)

MODEL = ModelRef(model="fake")


def agent(*servers: McpServer) -> AgentSpec:
    return AgentSpec(name="mcp-user", model=MODEL, tools=servers, max_turns=6)


def bodies[T](records: Sequence[Record], kind: type[T]) -> list[T]:
    return [r.body for r in records if isinstance(r.body, kind)]


def offered(model: FakeModel, turn: int = 0) -> list[str]:
    return [tool.name for tool in model.requests[turn].tools]


class NoCharge:
    """A policy that takes the charge tool away from every scope."""

    def authorize(self, scope: Scope, action: str, target: str) -> None:
        return None

    def narrow(self, scope: Scope, tools: Sequence[str]) -> tuple[str, ...]:
        return tuple(name for name in tools if not name.endswith("__charge"))


async def test_a_stdio_server_s_tools_are_offered_narrowed_and_called(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(tool_calls=[("demo__add", {"a": 2, "b": 3}), ("demo__lookup", {"key": "k"})])
        .turn(tool_calls=[("demo__charge", {"cents": 5})])
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio(ledger)}, policy=NoCharge())
    spec = agent(McpServer(name="demo", tools=("add", "charge")))
    async with session(runtime=runtime) as s:
        view = await s.ask(spec, "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    # The allow-list keeps add and charge; the policy takes charge away.
    assert offered(model) == ["demo__add"]
    finished = bodies(records, ToolCallFinished)
    assert [f.result for f in finished] == [{"result": 5}]
    failed = bodies(records, ToolCallFailed)
    assert [f.reason for f in failed] == ["unknown_tool", "unknown_tool"]
    assert "demo__lookup" in failed[0].error and "demo__charge" in failed[1].error
    # Only the call it was allowed reached the server.
    assert [line[:2] for line in ledger_lines(ledger)] == [["add", "2+3"]]


async def test_annotations_decide_retry_safety_and_destructive_approval(tmp_path: Path) -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("demo__add", {"a": 1, "b": 1}), ("demo__lookup", {"key": "x"})])
        .turn(tool_calls=[("demo__charge", {"cents": 100})])
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio(tmp_path / "ledger")})
    spec = agent(McpServer(name="demo", approve_destructive=True))
    async with session(runtime=runtime) as s:
        view = await s.ask(spec, "go")
        records = await read_log(s.store, view.run_id)
    started = {b.name: b.safe_to_retry for b in bodies(records, ToolCallStarted)}
    assert started == {"demo__add": True, "demo__lookup": True}
    # charge has no annotations: destructive by MCP's defaults, so a person must approve it.
    assert view.status == "waiting"
    asked = bodies(records, ApprovalRequested)
    assert len(asked) == 1 and asked[0].rule == "requires_approval=True"
    # The start record keeps its safety in the JSON only when the tool said it.
    line = next(r for r in records if isinstance(r.body, ToolCallStarted)).model_dump_json()
    assert '"safe_to_retry":true' in line


async def test_results_errors_and_images_become_tool_results(tmp_path: Path) -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("demo__refuse", {}), ("demo__picture", {}), ("demo__add", {"a": "x"})])
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio()})
    async with session(runtime=runtime) as s:
        view = await s.ask(agent(McpServer(name="demo")), "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    failed = {f.call_id: f for f in bodies(records, ToolCallFailed)}
    refused = next(f for f in failed.values() if "refuses" in f.error)
    assert refused.reason == "error"
    invalid = next(f for f in failed.values() if f.reason == "invalid_arguments")
    assert "demo__add" in invalid.error
    (picture,) = bodies(records, ToolCallFinished)
    assert picture.result == {
        "content": [
            {"type": "text", "text": "a red pixel"},
            {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="},
        ]
    }


async def test_a_tool_added_at_run_time_is_offered_on_the_next_turn(tmp_path: Path) -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("demo__grow", {})])
        .turn(tool_calls=[("demo__fresh", {})])
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio()})
    async with session(runtime=runtime) as s:
        view = await s.ask(agent(McpServer(name="demo")), "go")
        records = await read_log(s.store, view.run_id)
    assert "demo__fresh" not in offered(model, 0)
    assert "demo__fresh" in offered(model, 1)
    assert [f.result for f in bodies(records, ToolCallFinished)][-1] == "fresh"


async def test_a_server_that_dies_mid_call_settles_it_and_is_started_again(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = (
        FakeModel()
        .turn(tool_calls=[("demo__die", {})])
        .turn(tool_calls=[("demo__add", {"a": 1, "b": 2})])
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio(ledger)})
    async with session(runtime=runtime) as s:
        view = await s.ask(agent(McpServer(name="demo")), "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    (settled,) = bodies(records, ToolCallSettled)
    assert "demo" in settled.note and "connection broke" in settled.note
    assert len(bodies(records, ToolCallFinished)) == 1
    pids = {line[0]: line[2] for line in ledger_lines(ledger)}
    assert pids["die"] != pids["add"]  # a new server process served the next turn


async def test_a_hung_call_ends_at_its_timeout(tmp_path: Path) -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("demo__slow", {"seconds": 30}), ("demo__slow_read", {"seconds": 30})])
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio()})
    async with session(runtime=runtime) as s:
        view = await s.ask(agent(McpServer(name="demo", timeout=0.5)), "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    (settled,) = bodies(records, ToolCallSettled)  # slow: unsafe, its effect may have begun
    assert "timeout" in settled.note
    (failed,) = bodies(records, ToolCallFailed)  # slow_read: read-only, a plain timeout
    assert failed.reason == "timeout"


async def test_a_required_server_that_is_down_fails_the_run_naming_it(tmp_path: Path) -> None:
    model = FakeModel().turn(text="never asked")
    down = McpStdio(command=str(tmp_path / "no-such-server"), timeout=5)
    runtime = Runtime(model=model, mcp_servers={"gone": down})
    async with session(runtime=runtime) as s:
        view = await s.ask(agent(McpServer(name="gone")), "go")
    assert view.status == "failed"
    assert view.error is not None and "MCP server 'gone'" in view.error
    assert model.requests == []


async def test_an_optional_server_that_is_down_is_left_out_and_logged(tmp_path: Path) -> None:
    model = FakeModel().turn(tool_calls=[("demo__add", {"a": 1, "b": 2})]).turn(text="done")
    down = McpStdio(command=str(tmp_path / "no-such-server"), timeout=5)
    runtime = Runtime(model=model, mcp_servers={"gone": down, "demo": demo_stdio()})
    spec = agent(McpServer(name="gone", required=False), McpServer(name="demo"))
    async with session(runtime=runtime) as s:
        view = await s.ask(spec, "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    missing = bodies(records, ToolsUnavailable)
    assert len(missing) == 2  # one per turn
    assert missing[0].source == "mcp:gone" and "no-such-server" in missing[0].error
    assert not any(name.startswith("gone__") for name in offered(model))


async def test_a_streamable_http_server_goes_through_the_egress_seam(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    model = FakeModel().turn(tool_calls=[("web__add", {"a": 20, "b": 22})]).turn(text="done")
    with demo_http(ledger) as url:
        refused = Runtime(model=FakeModel(), mcp_servers={"web": McpHttp(url=url)})
        async with session(runtime=refused) as s:
            view = await s.ask(agent(McpServer(name="web")), "go")
        # Public addresses only, by default: loopback is refused before connecting.
        assert view.status == "failed" and view.error is not None
        assert "loopback" in view.error
        allowed = Runtime(
            model=model,
            mcp_servers={"web": McpHttp(url=url)},
            egress=EgressPolicy(allow_loopback=True),
        )
        async with session(runtime=allowed) as s:
            view = await s.ask(agent(McpServer(name="web")), "go")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    (finished,) = bodies(records, ToolCallFinished)
    assert json.dumps(finished.result).count("42") >= 1
    assert [line[:2] for line in ledger_lines(ledger)] == [["add", "20+22"]]


async def test_a_third_party_server_from_the_registry_over_stdio() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("time__get_current_time", {"timezone": "Europe/Paris"})])
        .turn(text="done")
    )
    server = McpStdio(command=str(BIN / "mcp-server-time"), args=("--local-timezone", "UTC"))
    runtime = Runtime(model=model, mcp_servers={"time": server})
    spec = agent(McpServer(name="time", tools=("get_current_time",)))
    async with session(runtime=runtime) as s:
        view = await s.ask(spec, "what time is it in Paris?")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    assert offered(model) == ["time__get_current_time"]
    (finished,) = bodies(records, ToolCallFinished)
    assert "Europe/Paris" in json.dumps(finished.result)
    # mcp-server-time marks its tools read-only: recorded safe when the call started.
    assert [b.safe_to_retry for b in bodies(records, ToolCallStarted)] == [True]


async def test_a_session_left_idle_is_closed_and_opened_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pool, "IDLE_CLOSE", 0.0)
    ledger = tmp_path / "ledger"
    model = FakeModel()
    for total in (3, 4):
        model.turn(tool_calls=[("demo__add", {"a": 1, "b": total - 1})]).turn(text="done")
    runtime = Runtime(model=model, mcp_servers={"demo": demo_stdio(ledger)})
    async with session(runtime=runtime) as s:
        first = await s.ask(agent(McpServer(name="demo")), "one")
        second = await s.ask(agent(McpServer(name="demo")), "two")
    assert first.status == second.status == "completed"
    pids = [line[2] for line in ledger_lines(ledger)]
    assert len(pids) == 2 and pids[0] != pids[1]  # the idle server was stopped, a new one began

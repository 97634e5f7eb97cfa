"""A server with a large catalogue, deferred: the model gets search, describe and call instead
of 300 schemas, narrowing applies to discovery exactly as to calls, and the request shrinks
(bytes measured side by side by bench/mcp_catalogue.py, the ratio checked here)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bench.mcp_catalogue import catalogue_agent, demo_server, measure
from psych_runtime import Runtime, Scope, read_log, session
from psych_runtime.records import ToolCallFailed, ToolCallFinished, ToolCallStarted
from psych_runtime.testing import FakeModel

pytestmark = pytest.mark.timeout(120)


class EvenOnly:
    """A policy that keeps the even-numbered catalogue tools only."""

    def authorize(self, scope: Scope, action: str, target: str) -> None:
        return None

    def narrow(self, scope: Scope, tools: Sequence[str]) -> tuple[str, ...]:
        return tuple(name for name in tools if not name[-1:].isdigit() or int(name[-1]) % 2 == 0)


async def test_discovery_finds_describes_and_calls_within_the_narrowed_catalogue() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("cat__search", {"query": "tool_042 index"})])
        .turn(tool_calls=[("cat__describe", {"name": "cat__tool_042"})])
        .turn(
            tool_calls=[
                ("cat__call", {"name": "cat__tool_042", "arguments": {"query": "q", "limit": 2}}),
                ("cat__call", {"name": "cat__tool_043", "arguments": {"query": "q"}}),
                ("cat__describe", {"name": "tool_041"}),
            ]
        )
        .turn(text="done")
    )
    runtime = Runtime(model=model, mcp_servers={"cat": demo_server(300)}, policy=EvenOnly())
    spec = catalogue_agent("cat", deferred=True)
    async with session(runtime=runtime) as s:
        view = await s.ask(spec, "use index 42")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    assert [tool.name for tool in model.requests[0].tools] == [
        "cat__search",
        "cat__describe",
        "cat__call",
    ]
    finished = [r.body for r in records if isinstance(r.body, ToolCallFinished)]
    found = finished[0].result
    assert isinstance(found, list) and isinstance(found[0], dict)
    assert found[0]["name"] == "cat__tool_042"
    # Odd tools are narrowed away: search never shows them.
    assert all(int(str(hit["name"])[-1]) % 2 == 0 for hit in found if isinstance(hit, dict))
    described = finished[1].result
    assert isinstance(described, dict) and described["read_only"] is True
    assert finished[2].result == {"result": "tool_042: q (2)"}
    # A call or a description outside the narrowed catalogue is refused before anything runs.
    failed = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert [f.reason for f in failed] == ["invalid_arguments", "invalid_arguments"]
    assert "tool_043" in failed[0].error and "tool_041" in failed[1].error
    # The called tool's annotations (read-only) were recorded as the call's safety.
    started = [r.body for r in records if isinstance(r.body, ToolCallStarted)]
    assert [b.safe_to_retry for b in started if b.name == "cat__call"] == [True]


async def test_a_deferred_catalogue_of_300_tools_sends_far_fewer_bytes() -> None:
    eager, deferred = await measure(300)
    assert eager > 20 * deferred, (eager, deferred)

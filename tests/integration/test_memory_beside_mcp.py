"""The built-in tools of a spec (``remember``, ``forget``, ``ask_user``) stay offered beside
the MCP servers it names, also when one of them cannot be reached."""

from __future__ import annotations

import pytest

from psych_runtime import AgentSpec, ModelRef, Scope
from psych_runtime.conversations import LocalUserMemory
from psych_runtime.mcp import McpServer, McpStdio
from psych_runtime.tools import ToolRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_the_built_in_tools_stay_beside_an_mcp_server_that_is_down() -> None:
    spec = AgentSpec(
        name="concierge",
        model=ModelRef(model="fake"),
        tools=(McpServer(name="gone", required=False),),
        memory=True,
        ask_user=True,
    )
    registry = ToolRegistry(
        memory=LocalUserMemory(),
        mcp_servers={"gone": McpStdio(command="/nonexistent/psych-no-such-server")},
    )
    try:
        turn = await registry.resolve_turn(spec, Scope(tenant="acme", principal="alice"))
    finally:
        await registry.aclose()
    assert sorted(turn.tools) == ["ask_user", "forget", "remember"]
    assert [source for source, _ in turn.unavailable] == ["mcp:gone"]

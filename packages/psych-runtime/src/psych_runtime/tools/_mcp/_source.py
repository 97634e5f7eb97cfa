"""The tools each `McpServer` reference offers a run this turn, from the server's live list."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from psych_core import McpServer, Policy, Scope, SecretNotFound, SecretResolver
from psych_runtime.tools._http import EgressPolicy
from psych_runtime.tools._mcp._config import McpConnection, McpHttp
from psych_runtime.tools._mcp._pool import McpPool, McpRequestFailed, McpUnreachable
from psych_runtime.tools._mcp._tools import (
    Catalogue,
    DeferredCall,
    DeferredDescribe,
    DeferredSearch,
    McpToolCall,
)

McpExecutor = McpToolCall | DeferredSearch | DeferredDescribe | DeferredCall


class ServerUnavailable(Exception):
    """A server's tools could not be had this turn; the message names the server and why."""


@dataclass(frozen=True, slots=True)
class ServerTools:
    """What one server offers a run this turn, by the names the model sees."""

    executors: Mapping[str, McpExecutor]


class McpTools:
    """The MCP servers a worker can reach, and the sessions it holds to them.

    Args:
        connections: how to reach each server, by the name specs use.
        secrets: where the servers' credentials come from.
        egress: the rules HTTP servers' connections obey.
    """

    def __init__(
        self,
        connections: Mapping[str, McpConnection],
        secrets: SecretResolver | None,
        egress: EgressPolicy | None,
    ) -> None:
        self.pool = McpPool(connections, secrets, egress)

    async def offered(
        self,
        ref: McpServer,
        scope: Scope,
        policy: Policy | None,
        allowed: Collection[str] | None,
    ) -> ServerTools:
        """The tools `ref` offers a run of `scope`: the server's list, narrowed to the
        reference's allow-list, to `allowed` (a child run) and by `policy`; for a deferred
        server, the three discovery tools over that narrowed catalogue.

        Raises `ServerUnavailable` naming the server when it cannot be reached or listed.
        """
        connection = self.pool.connection(ref.name)
        limit = opening_limit(connection)
        try:
            async with asyncio.timeout(limit):
                session = await self.pool.session(ref.name, scope)
                listed = await session.tools()
        except TimeoutError:
            raise ServerUnavailable(
                f"MCP server {ref.name!r} did not answer within {limit:g} s"
            ) from None
        except (McpUnreachable, McpRequestFailed, SecretNotFound) as exc:
            raise ServerUnavailable(f"MCP server {ref.name!r} cannot be reached: {exc}") from None
        tools = {ref.tool_name(tool.name): tool for tool in listed if ref.offers(tool.name)}
        if allowed is not None and not (ref.deferred and ref.tool_name("call") in allowed):
            tools = {name: tool for name, tool in tools.items() if name in allowed}
        if policy is not None and tools:
            kept = set(policy.narrow(scope, tuple(tools)))
            tools = {name: tool for name, tool in tools.items() if name in kept}
        if not ref.deferred:
            return ServerTools(
                {name: McpToolCall(ref, tool, session) for name, tool in tools.items()}
            )
        if not tools:
            return ServerTools({})
        catalogue = Catalogue(ref, tools, session)
        executors: list[McpExecutor] = [
            DeferredSearch(catalogue),
            DeferredDescribe(catalogue),
            DeferredCall(catalogue),
        ]
        return ServerTools({executor.name: executor for executor in executors})

    async def aclose(self) -> None:
        """Close every session."""
        await self.pool.aclose()


def opening_limit(connection: McpConnection) -> float:
    """Seconds a session may take to open and list its tools: the connection's timeout, and
    the time a person has to consent when the server's OAuth grant needs one."""
    oauth = connection.oauth if isinstance(connection, McpHttp) else None
    if oauth is not None and oauth.grant == "authorization_code":
        return connection.timeout + oauth.authorize_timeout
    return connection.timeout

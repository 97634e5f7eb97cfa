"""Open MCP sessions, one per (tenant, server, credential), through the official SDK.

A session is never looked up by URL or command alone: its key holds the run's tenant and the
credential it was opened with (its secret's name and a digest of the value), so one tenant's
connection, and whatever the server tied to it, is never handed to another. Sessions open on
first use, are reused while alive, are checked with a ping after standing idle, are closed
after standing idle longer still (a worker serving many tenants does not keep a server process
or connection per tenant for ever), and close with the worker (`McpPool.aclose`).

Each session is held by a task of its own: the SDK's client (and the subprocess or HTTP
streams under it) is entered and left in that task, as anyio requires, while calls are made
from the attempts' tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Tool
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from psych_core import Scope, SecretResolver
from psych_runtime.model.egress._httpx2 import guarded_httpx2_client
from psych_runtime.tools._credentials import digest, filled, resolved
from psych_runtime.tools._http import EgressPolicy
from psych_runtime.tools._mcp._config import (
    McpConnection,
    McpHttp,
    McpStdio,
    credential_name,
)

log = logging.getLogger("psych_runtime.mcp")

IDLE_CHECK = 30.0
"""Seconds a session may stand idle before it is pinged on its next use."""

IDLE_CLOSE = 300.0
"""Seconds a session may stand idle, no call in flight, before the pool closes it."""

MAX_PAGES = 100
"""The most pages of one server's tool list read (a paginator that never ends cannot hang)."""


class McpUnreachable(Exception):
    """The server could not be reached (not started, refused, or it died)."""


class McpConnectionLost(Exception):
    """The connection broke while a request was in flight: its effect may have happened."""


class McpRequestFailed(Exception):
    """The server answered a request with an error."""


@dataclass(frozen=True, slots=True)
class SessionKey:
    """What a session is pooled by: never a URL or command alone."""

    tenant: str
    server: str
    credential: str | None
    digest: str | None


class McpSession:
    """One live connection to one server for one tenant and credential."""

    def __init__(
        self,
        server: str,
        connection: McpConnection,
        credential: str | None,
        egress: EgressPolicy | None,
        *,
        tenant: str,
        client_secret: str | None = None,
    ) -> None:
        self.server = server
        self._connection = connection
        self._credential = credential
        self._egress = egress
        self._tenant = tenant
        self._client_secret = client_secret
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._close = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._tools: tuple[Tool, ...] | None = None
        self._last_used = time.monotonic()
        self._in_flight = 0
        self.broken = False
        self.lists = 0
        """How many times the tool list was read from the server (the cache's misses)."""

    async def open(self) -> None:
        """Connect; `McpUnreachable` when the server cannot be reached."""
        self._task = asyncio.create_task(self._hold(), name=f"mcp session {self.server}")
        await self._ready.wait()
        if self._error is not None:
            raise McpUnreachable(_describe(self._error)) from None

    @property
    def alive(self) -> bool:
        """Whether the connection is still up, as far as is known without asking."""
        return (
            not self.broken
            and self._client is not None
            and self._task is not None
            and not self._task.done()
        )

    def idle_for(self, now: float) -> float:
        """Seconds since the session was last used; 0 while a call is in flight."""
        return 0.0 if self._in_flight else now - self._last_used

    async def healthy(self) -> bool:
        """Whether the session can serve: alive, and answering a ping after standing idle."""
        if not self.alive:
            return False
        if time.monotonic() - self._last_used < IDLE_CHECK:
            return True
        try:
            with anyio.fail_after(5):
                await self._connected().send_ping()
        except Exception:
            self.broken = True
            return False
        self._last_used = time.monotonic()
        return True

    async def tools(self) -> tuple[Tool, ...]:
        """The server's tools: read once, then again after it says the list changed."""
        if self._tools is not None:
            return self._tools
        client = self._connected()
        found: list[Tool] = []
        cursor: str | None = None
        try:
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                found.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.broken = True
                raise McpUnreachable(f"the connection closed: {exc.error.message}") from None
            raise McpRequestFailed(f"listing its tools failed: {exc.error.message}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self.broken = True
            raise McpUnreachable(_describe(exc)) from None
        self.lists += 1
        self._tools = tuple(found)
        self._last_used = time.monotonic()
        return self._tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call `tool`; `McpRequestFailed` when the server refuses the request,
        `McpConnectionLost` when the connection breaks while it is in flight."""
        client = self._connected()
        self._last_used = time.monotonic()
        self._in_flight += 1
        try:
            return await client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.broken = True
                raise McpConnectionLost(exc.error.message) from None
            raise McpRequestFailed(exc.error.message) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self.broken = True
            raise McpConnectionLost(_describe(exc)) from None
        finally:
            self._in_flight -= 1
            self._last_used = time.monotonic()

    async def aclose(self) -> None:
        """Close the connection (and stop a subprocess server)."""
        self._close.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), timeout=10)
            if not self._task.done():
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await self._task

    def _connected(self) -> Client:
        if self._client is None or self.broken:
            raise McpUnreachable("the connection is closed")
        return self._client

    def _changed(self) -> None:
        self._tools = None

    async def _hold(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client_for(stack))
                async with anyio.create_task_group() as group:
                    if _listens(client):
                        subscription = await stack.enter_async_context(
                            client.listen(tools_list_changed=True)
                        )
                        group.start_soon(self._watch, subscription)
                    self._client = client
                    self._ready.set()
                    await self._close.wait()
                    group.cancel_scope.cancel()
        except BaseException as exc:  # the holder's end is the session's end, whatever it was
            if not self._ready.is_set():
                self._error = exc
            elif not self._close.is_set():
                log.warning("MCP server %r: connection ended: %s", self.server, _describe(exc))
            if not isinstance(exc, Exception):
                raise  # cancelled, or the process is going down
        finally:
            self.broken = True
            self._client = None
            self._ready.set()

    async def _watch(self, subscription: AsyncIterator[object]) -> None:
        with contextlib.suppress(Exception):
            async for _event in subscription:
                self._changed()

    @asynccontextmanager
    async def _client_for(self, stack: AsyncExitStack) -> AsyncIterator[Client]:
        connection = self._connection
        if isinstance(connection, McpStdio):
            parameters = StdioServerParameters(
                command=connection.command,
                args=list(connection.args),
                env=filled(connection.env, self._credential) or None,
                cwd=connection.cwd,
            )
            client = Client(parameters, cache=None, message_handler=self._notified)
        else:
            auth = None
            if connection.oauth is not None:
                from psych_runtime.tools._mcp._oauth import oauth_auth

                auth = await oauth_auth(
                    server=self.server,
                    url=connection.url,
                    oauth=connection.oauth,
                    tenant=self._tenant,
                    client_secret=self._client_secret,
                )
            http = guarded_httpx2_client(
                self._egress,
                headers=filled(connection.headers, self._credential),
                timeout=connection.timeout,
                auth=auth,
            )
            stack.push_async_callback(http.aclose)
            transport = streamable_http_client(connection.url, http_client=http)
            client = Client(transport, cache=None, message_handler=self._notified)
        async with client:
            yield client

    async def _notified(self, message: object) -> None:
        # Servers of protocol versions before 2026-07-28 send the notice unasked.
        if isinstance(message, mcp_types.ToolListChangedNotification) or (
            getattr(message, "method", None) == "notifications/tools/list_changed"
        ):
            self._changed()
        await anyio.lowlevel.checkpoint()


def _listens(client: Client) -> bool:
    # Servers of earlier protocol versions send the notice unasked (`_notified`).
    capability = client.server_capabilities.tools
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    return modern and capability is not None and bool(capability.list_changed)


class McpPool:
    """The MCP sessions of one worker or session, by (tenant, server, credential).

    Args:
        connections: how to reach each server, by name.
        secrets: where credentials come from.
        egress: the rules HTTP connections obey.
    """

    def __init__(
        self,
        connections: Mapping[str, McpConnection],
        secrets: SecretResolver | None,
        egress: EgressPolicy | None,
    ) -> None:
        self._connections = dict(connections)
        self._secrets = secrets
        self._egress = egress
        self._sessions: dict[SessionKey, McpSession] = {}
        self._locks: dict[SessionKey, asyncio.Lock] = {}

    def connection(self, server: str) -> McpConnection:
        """How `server` is reached."""
        return self._connections[server]

    async def session(self, server: str, scope: Scope) -> McpSession:
        """The open session of `server` for `scope`'s tenant and credential; opened when there
        is none, or the one there stopped answering."""
        await self._close_idle()
        connection = self._connections[server]
        name = credential_name(connection, scope)
        owner = f"MCP server {server!r}"
        value = await resolved(self._secrets, name, owner)
        oauth = connection.oauth if isinstance(connection, McpHttp) else None
        secret_name = oauth.secret_name(scope.tenant) if oauth is not None else None
        client_secret = await resolved(self._secrets, secret_name, owner)
        names = " ".join(n for n in (name, secret_name) if n is not None) or None
        key = SessionKey(scope.tenant, server, names, digest(value, client_secret))
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            current = self._sessions.get(key)
            if current is not None and await current.healthy():
                return current
            if current is not None:
                del self._sessions[key]
                await current.aclose()
            opened = McpSession(
                server,
                connection,
                value,
                self._egress,
                tenant=scope.tenant,
                client_secret=client_secret,
            )
            try:
                await opened.open()
            except McpUnreachable:
                await opened.aclose()
                raise
            self._sessions[key] = opened
            return opened

    async def _close_idle(self) -> None:
        now = time.monotonic()
        idle = [key for key, held in self._sessions.items() if held.idle_for(now) > IDLE_CLOSE]
        for key in idle:
            held = self._sessions.pop(key)
            self._locks.pop(key, None)
            await held.aclose()

    @property
    def open_sessions(self) -> tuple[SessionKey, ...]:
        """The keys of the sessions open now."""
        return tuple(key for key, session in self._sessions.items() if session.alive)

    async def aclose(self) -> None:
        """Close every session."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.aclose()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    if isinstance(exc, MCPError):
        return exc.error.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

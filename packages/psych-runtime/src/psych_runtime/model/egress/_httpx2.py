"""`guarded_httpx2_client`: an httpx2 client held to the egress policy, for MCP over HTTP.

The MCP SDK talks streamable HTTP through httpx2, not httpx, so `Egress` cannot carry its
requests. The client made here sends them through a transport that runs the seam's checks
(`checked_addresses`) and connects only to the checked address, like `Egress` does.

httpx2 comes with the optional ``mcp`` extra: import this module only where MCP is used (the
egress package does not import it).
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from psych_runtime.model.egress._checks import checked_addresses
from psych_runtime.model.egress._policy import EgressPolicy, HostResolver, system_resolve

SSE_READ_TIMEOUT = 300.0
"""Seconds to wait for each read: the MCP SDK's default, as a server may hold an event stream
open with nothing to say for a while."""


def guarded_httpx2_client(
    policy: EgressPolicy | None,
    *,
    resolver: HostResolver | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    connect_timeout: float = 10.0,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An httpx2 client whose every request passes the egress policy, for the MCP SDK.

    Each request is checked before a connection is opened (scheme, host allowlist, every
    resolved address), then sent to the checked address; refusals raise `EgressRefused`, a
    host that does not resolve `EgressError`. The client follows no redirects, reads no proxy
    settings from the environment, and must be closed (``async with`` or ``aclose``).

    Args:
        policy: where requests may go; `EgressPolicy()` (any public host) when None.
        resolver: how host names are resolved; the system resolver when omitted.
        headers: headers sent with every request.
        timeout: seconds to wait for each write or pool slot (reads wait `SSE_READ_TIMEOUT`).
        connect_timeout: seconds to wait for a connection.
        auth: how requests are authenticated (the MCP SDK's OAuth providers); the requests
            the auth flow makes itself (discovery, registration, tokens) pass the policy too.
    """
    return httpx2.AsyncClient(
        transport=_GuardedHttpx2Transport(policy or EgressPolicy(), resolver or system_resolve),
        headers=dict(headers or {}),
        timeout=httpx2.Timeout(timeout, connect=connect_timeout, read=SSE_READ_TIMEOUT),
        follow_redirects=False,
        trust_env=False,
        auth=auth,
    )


class _GuardedHttpx2Transport(httpx2.AsyncBaseTransport):
    """Checks each request against the policy, then sends it to the checked address."""

    def __init__(self, policy: EgressPolicy, resolve: HostResolver) -> None:
        self._policy = policy
        self._resolve = resolve
        # One pool per host name: a connection made for one name is never reused for another
        # name that resolves to the same address.
        self._pools: dict[str, httpx2.AsyncBaseTransport] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        shown = str(url.copy_with(query=None, fragment=None))
        host = url.host
        addresses = await checked_addresses(
            self._policy, self._resolve, scheme=url.scheme, host=host, port=url.port, shown=shown
        )
        transport = self._pool(host)
        failure: httpx2.ConnectError | None = None
        for address in addresses:
            try:
                return await transport.handle_async_request(_pinned(request, address))
            except httpx2.ConnectError as exc:
                failure = exc  # try the host's next address
        assert failure is not None
        raise failure

    async def aclose(self) -> None:
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            await pool.aclose()

    def _pool(self, host: str) -> httpx2.AsyncBaseTransport:
        pool = self._pools.get(host)
        if pool is None:
            pool = self._pools[host] = httpx2.AsyncHTTPTransport(retries=0)
        return pool


def _pinned(request: httpx2.Request, address: str) -> httpx2.Request:
    # The Host header stays the name; TLS is told the name for SNI and certificate checks.
    extensions = dict(request.extensions)
    if request.url.scheme == "https":
        extensions.setdefault("sni_hostname", request.url.host)
    return httpx2.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=request.headers,
        stream=request.stream,
        extensions=extensions,
    )

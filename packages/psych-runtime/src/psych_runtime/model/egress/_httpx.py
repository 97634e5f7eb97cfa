"""`guarded_httpx_client`: an httpx client held to the egress policy, for SDKs that take one.

The A2A SDK sends its requests (the Agent Card, JSON-RPC calls, event streams) through an
``httpx.AsyncClient`` it is given. The client made here hands each request to the transport
`Egress` uses, so the seam's checks (`checked_addresses`: scheme, host allowlist, every
resolved address) run before a connection is opened, and the connection goes only to the
checked address. Every response body, whole or streamed, is held to the same size cap as
`Egress`'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx

from psych_core import EgressError, EgressRefused
from psych_runtime.model.egress._egress import DEFAULT_MAX_RESPONSE_BYTES
from psych_runtime.model.egress._policy import EgressPolicy, HostResolver, system_resolve
from psych_runtime.model.egress._transport import NEVER_SENT, GuardedTransport

STREAM_READ_TIMEOUT = 300.0
"""Seconds to wait for each read: an event stream may stand silent while a peer works."""


def guarded_httpx_client(
    policy: EgressPolicy | None,
    *,
    resolver: HostResolver | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    connect_timeout: float = 10.0,
    read_timeout: float = STREAM_READ_TIMEOUT,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> httpx.AsyncClient:
    """An httpx client whose every request passes the egress policy.

    Refusals raise `EgressRefused`, a host that does not resolve `EgressError` (both before
    anything is sent). The client follows no redirects, reads no proxy settings from the
    environment, and must be closed (``async with`` or ``aclose``).

    Args:
        policy: where requests may go; `EgressPolicy()` (any public host) when None.
        resolver: how host names are resolved; the system resolver when omitted.
        headers: headers sent with every request.
        timeout: seconds to wait for each write or pool slot.
        connect_timeout: seconds to wait for a connection.
        read_timeout: seconds to wait for each read.
        max_response_bytes: a response whose body grows past this many bytes fails with
            `EgressError` when that byte arrives (an event stream counts as one body).
    """
    transport = _CappedTransport(
        GuardedTransport(policy or EgressPolicy(), resolver or system_resolve, None),
        max_response_bytes,
    )
    return httpx.AsyncClient(
        transport=transport,
        headers=dict(headers or {}),
        timeout=httpx.Timeout(timeout, connect=connect_timeout, read=read_timeout),
        follow_redirects=False,
        trust_env=False,
    )


def never_sent(exc: BaseException) -> bool:
    """Whether a request made with a client from here failed before it could reach the
    server (refused by the policy, no connection made).

    SDKs wrap httpx's errors in their own, so the causes are followed.
    """
    seen: BaseException | None = exc
    for _ in range(16):  # a cycle of causes cannot hold this
        if seen is None:
            return False
        if isinstance(seen, (EgressRefused, *NEVER_SENT)):
            return True
        if isinstance(seen, EgressError):
            return not seen.sent
        seen = seen.__cause__ or seen.__context__
    return False


class _CappedTransport(httpx.AsyncBaseTransport):
    """Hands requests to the guarded transport; caps the size of every response body."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        shown = str(request.url.copy_with(query=None, fragment=None))
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self._limit, shown),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, url: str) -> None:
        self._inner = inner
        self._limit = limit
        self._url = url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._limit:
                raise EgressError(
                    f"{self._url}: the response is longer than {self._limit} bytes; refused",
                    url=self._url,
                    retryable=False,
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()

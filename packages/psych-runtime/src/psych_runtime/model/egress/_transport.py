"""httpx's side of the egress seam: the guarded transport, a client over it, and httpx's
failures told as `EgressError`.

Imported when an `Egress` first sends (or an SDK's client is made, `_httpx`), not with the
package: importing httpx takes about a quarter of a second (it loads its command line's
libraries when they are installed), which an app that never sends a request through the seam
(a worker whose model client is its own, a process that only dispatches) should not pay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx

from psych_core import EgressError
from psych_runtime.model.egress._checks import checked_addresses
from psych_runtime.model.egress._policy import EgressPolicy, HostResolver

# Failures that happen before a request can reach the server: no connection was made.
NEVER_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
    httpx.InvalidURL,
)

HTTP_ERRORS = (httpx.HTTPError, httpx.InvalidURL)
"""What httpx raises for a request that failed; `failure` tells each as an `EgressError`."""


def client(guard: GuardedTransport, each: float, connect: float) -> httpx.AsyncClient:
    """The client an `Egress` sends through: every request handed to `guard` (`each`: seconds
    for each read, write or pool slot, `connect`: for a connection), no redirects followed,
    no proxy settings read from the environment."""
    return httpx.AsyncClient(
        transport=guard,
        timeout=httpx.Timeout(each, connect=connect),
        follow_redirects=False,
        trust_env=False,
    )


def timeout(seconds: float) -> httpx.Timeout:
    """One request's own timeout for each read, write and connection."""
    return httpx.Timeout(seconds)


async def chunks(
    response: httpx.Response, fail: Callable[[Exception], EgressError]
) -> AsyncIterator[bytes]:
    """The response's body as it arrives; httpx's failures raised as `fail` makes them."""
    try:
        async for chunk in response.aiter_bytes():
            yield chunk
    except httpx.HTTPError as exc:
        raise fail(exc) from None


def failure(method: str, url: str, exc: Exception, redact: Callable[[str], str]) -> EgressError:
    """httpx's failure of a request to `url` as an `EgressError`: whether it timed out,
    can be retried, and may have reached the server; its text passed through `redact`."""
    if isinstance(exc, httpx.TimeoutException):
        what = {
            httpx.ConnectTimeout: "connecting",
            httpx.ReadTimeout: "waiting for the response",
            httpx.WriteTimeout: "sending the request",
            httpx.PoolTimeout: "waiting for a free connection",
        }.get(type(exc), "")
        message = f"{method} {url}: timed out {what}".rstrip()
        return EgressError(
            f"{message}; retry later or raise the timeout",
            url=url,
            sent=not isinstance(exc, NEVER_SENT),
            timed_out=True,
        )
    retryable = isinstance(exc, httpx.TransportError) and not isinstance(
        exc, httpx.UnsupportedProtocol
    )
    detail = redact(str(exc)) or type(exc).__name__
    return EgressError(
        f"{method} {url}: {type(exc).__name__}: {detail}",
        url=url,
        retryable=retryable,
        sent=not isinstance(exc, NEVER_SENT),
    )


class GuardedTransport(httpx.AsyncBaseTransport):
    """Checks each request against the policy, then sends it to the checked address."""

    def __init__(
        self,
        policy: EgressPolicy,
        resolve: HostResolver,
        shared: httpx.AsyncBaseTransport | None,
    ) -> None:
        self._policy = policy
        self._resolve = resolve
        self._shared = shared
        # One pool per host name: a connection made for one name is never reused for another
        # name that resolves to the same address.
        self._pools: dict[str, httpx.AsyncBaseTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        shown = str(url.copy_with(query=None, fragment=None))
        host = url.host
        addresses = await checked_addresses(
            self._policy, self._resolve, scheme=url.scheme, host=host, port=url.port, shown=shown
        )
        transport = self._pool(host)
        failure: httpx.ConnectError | None = None
        for address in addresses:
            try:
                return await transport.handle_async_request(_pinned(request, address))
            except httpx.ConnectError as exc:
                failure = exc  # try the host's next address
        assert failure is not None
        raise failure

    async def aclose(self) -> None:
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            await pool.aclose()
        if self._shared is not None:
            await self._shared.aclose()

    def _pool(self, host: str) -> httpx.AsyncBaseTransport:
        if self._shared is not None:
            return self._shared
        pool = self._pools.get(host)
        if pool is None:
            pool = self._pools[host] = httpx.AsyncHTTPTransport(retries=0)
        return pool


def _pinned(request: httpx.Request, address: str) -> httpx.Request:
    # The Host header stays the name; TLS is told the name for SNI and certificate checks.
    extensions = dict(request.extensions)
    if request.url.scheme == "https":
        extensions.setdefault("sni_hostname", request.url.host)
    return httpx.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=request.headers,
        stream=request.stream,
        extensions=extensions,
    )

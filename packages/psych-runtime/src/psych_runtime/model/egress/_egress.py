"""`Egress`: the one object every outbound HTTP request of the runtime goes through.

httpx is imported when an egress first sends (`_transport`), not with this module: importing
it takes about a quarter of a second, and with the rest of `import psych_runtime` it was most
of a worker's start (tests/unit/test_import_cost.py).
"""

from __future__ import annotations

import asyncio
import codecs
import string
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from psych_core import EgressError, EgressRefused, SecretNotFound, SecretResolver
from psych_runtime.model.egress._policy import EgressPolicy, HostResolver, system_resolve
from psych_runtime.model.egress._redact import Redactor

if TYPE_CHECKING:
    import httpx

    from psych_runtime.model.egress._transport import GuardedTransport
else:

    class _Httpx:
        """Stands for httpx in this module's annotations, which `typing.get_type_hints` and the
        docs evaluate: looking a name up on it imports httpx then, not before."""

        def __getattr__(self, name: str) -> object:
            import httpx

            return getattr(httpx, name)

    httpx = _Httpx()

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The longest response body read, whole or line by line, unless a caller says otherwise."""

DEFAULT_TOTAL_TIMEOUT = 300.0
"""Seconds one request may take in all, body included, unless a caller says otherwise."""


class EgressResponse:
    """The answer to a request sent through `Egress`.

    Attributes:
        status: the HTTP status code.
        headers: the response headers (case-insensitive).
        url: the URL that was asked for.
    """

    def __init__(
        self, response: httpx.Response, *, url: str, fail: Callable[[Exception], EgressError]
    ) -> None:
        # httpx is loaded by now: a response exists only once a request went out.
        from psych_runtime.model.egress._transport import chunks

        self._chunks = partial(chunks, response, fail)
        self.status: int = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self.url = url
        self._body: bytes | None = None

    async def read(self, limit: int = DEFAULT_MAX_RESPONSE_BYTES) -> bytes:
        """The whole body; `EgressError` when it breaks off or is longer than `limit` bytes.

        Read once, kept: later calls (after `Egress.request`, say) return the same bytes.
        """
        if self._body is not None:
            return self._body
        parts: list[bytes] = []
        size = 0
        async for chunk in self._chunks():
            size += len(chunk)
            if size > limit:
                raise self._too_long(limit)
            parts.append(chunk)
        self._body = b"".join(parts)
        return self._body

    async def read_prefix(self, limit: int) -> tuple[bytes, bool]:
        """At most `limit` bytes of the body, and whether it is longer (the rest is not read).

        For answers a caller shows in part (an http tool's response cut at its limit).
        """
        parts: list[bytes] = []
        size = 0
        async for chunk in self._chunks():
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(parts)[:limit], True
        return b"".join(parts), False

    async def lines(self, limit: int = DEFAULT_MAX_RESPONSE_BYTES) -> AsyncIterator[str]:
        """The body line by line, as it arrives (for server-sent events), decoded as UTF-8.

        Lines end at ``\\n``, ``\\r\\n`` or ``\\r``, the endings server-sent events allow.
        `EgressError` when the body breaks off or, counted in bytes as they arrive (so one
        endless line is caught too), goes past `limit`: the same cap as `read`.
        """
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        splitter = _LineSplitter()
        size = 0
        async for chunk in self._chunks():
            size += len(chunk)
            if size > limit:
                raise self._too_long(limit)
            for line in splitter.feed(decoder.decode(chunk)):
                yield line
        for line in splitter.feed(decoder.decode(b"", final=True)) + splitter.flush():
            yield line

    def _too_long(self, limit: int) -> EgressError:
        return EgressError(
            f"{self.url}: the response is longer than {limit} bytes; refused",
            url=self.url,
            retryable=False,
        )


class _LineSplitter:
    """Splits text that arrives in pieces into lines, in time linear in its length."""

    def __init__(self) -> None:
        self._start: list[str] = []  # the line begun so far
        self._cr = False  # the last piece ended in "\r": a "\n" may follow in the next

    def feed(self, text: str) -> list[str]:
        if self._cr:
            text, self._cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._cr = text[:-1], True
        pieces = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if len(pieces) == 1:
            self._start.append(pieces[0])
            return []
        pieces[0] = "".join(self._start) + pieces[0]
        self._start = [pieces.pop()]
        return pieces

    def flush(self) -> list[str]:
        rest, self._start = "".join(self._start), []
        if self._cr:
            self._cr = False
            return [rest]
        return [rest] if rest else []


class Egress:
    """Sends outbound HTTP requests, and refuses the ones its policy does not allow.

    Every request is checked before a connection is opened: the scheme (http or https), the
    host against `EgressPolicy.allow_hosts`, then every address the host resolves to against
    the policy's address rules. The connection then goes to the checked address (TLS still
    verifies the host name), so a name cannot resolve to something else in between.
    Refusals raise `EgressRefused`; connection failures and timeouts raise `EgressError`.

    Secrets are injected by name (`secret_headers`), resolved at send time from `secrets`, and
    redacted from every error this object raises. The egress owns one `httpx.AsyncClient`,
    made on first use and closed by `aclose` (or ``async with``). It follows no redirects and
    reads no proxy settings from the environment.

    Args:
        policy: where requests may go; `EgressPolicy()` (any public host) when omitted.
        secrets: where secret values come from.
        timeout: seconds to wait for each read, write or pool slot.
        connect_timeout: seconds to wait for a connection.
        total_timeout: seconds a request may take in all, from resolving its host to the
            last byte of its body (a server that keeps sending keep-alive lines can hold a
            request past every read timeout, never past this).
        resolver: how host names are resolved; the system resolver when omitted.
        transport: the httpx transport requests are handed to once the policy passed them
            (a test double, say); one connection pool per host when omitted.
    """

    def __init__(
        self,
        policy: EgressPolicy | None = None,
        *,
        secrets: SecretResolver | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
        resolver: HostResolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.policy = policy or EgressPolicy()
        self.secrets = secrets
        self.total_timeout = _positive("total_timeout", total_timeout)
        self._redactor = Redactor(secrets)
        self._timeouts = (timeout, connect_timeout)
        self._resolve = resolver or system_resolve
        self._given = transport
        self._guard: GuardedTransport | None = None
        self._client: httpx.AsyncClient | None = None

    def redact(self, text: str) -> str:
        """`text` with every secret value this egress knows replaced by ``[redacted:NAME]``."""
        return self._redactor.text(text)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        secret_headers: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | None = None,
        timeout: float | None = None,
        total_timeout: float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> EgressResponse:
        """Send a request and read the whole response.

        Args:
            method: the HTTP method.
            url: an ``http`` or ``https`` URL.
            headers: plain headers.
            secret_headers: headers whose values name secrets in braces, e.g.
                ``{"Authorization": "Bearer {OPENAI_API_KEY}"}``; filled in at send time.
            json: a body to send as JSON.
            content: a raw body.
            timeout: seconds for each read, write or connection of this request, instead of
                the egress's own.
            total_timeout: seconds this whole request may take, instead of the egress's own;
                past it the request fails with `EgressError` (``timed_out``).
            max_response_bytes: a longer response is refused with `EgressError`.
        """
        async with self.stream(
            method,
            url,
            headers=headers,
            secret_headers=secret_headers,
            json=json,
            content=content,
            timeout=timeout,
            total_timeout=total_timeout,
        ) as response:
            await response.read(max_response_bytes)
            return response

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        secret_headers: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | None = None,
        timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> AsyncIterator[EgressResponse]:
        """Send a request and yield the response with its body still to read.

        ``async with egress.stream("POST", url, json=body) as response:``, then
        ``async for line in response.lines()``. Arguments as for `request`. The total timeout
        covers the whole block: reading the body inside it counts.
        """
        shown = self.redact(url)
        limit = self.total_timeout
        if total_timeout is not None:
            limit = _positive("total_timeout", total_timeout)
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                raw = await self._send(
                    method, url, shown, headers, secret_headers, json, content, timeout
                )
                try:
                    yield EgressResponse(raw, url=shown, fail=self._failure(method, shown))
                finally:
                    await raw.aclose()
        except TimeoutError:
            if not deadline.expired():
                raise  # the block's own, not this deadline's
            raise EgressError(
                f"{method} {shown}: no whole response within the total timeout of {limit:g} s "
                "(the server kept the request open); retry later or raise total_timeout",
                url=shown,
                timed_out=True,
            ) from None

    async def _send(
        self,
        method: str,
        url: str,
        shown: str,
        headers: Mapping[str, str] | None,
        secret_headers: Mapping[str, str] | None,
        json: Any,
        content: bytes | None,
        timeout: float | None,
    ) -> httpx.Response:
        from psych_runtime.model.egress import _transport

        all_headers = dict(headers or {})
        all_headers.update(await self._fill(secret_headers or {}))
        client = self._http()
        try:
            request = client.build_request(
                method,
                url,
                headers=all_headers,
                json=json,
                content=content,
                timeout=_transport.timeout(timeout) if timeout is not None else client.timeout,
            )
            return await client.send(request, stream=True)
        except EgressRefused as exc:
            # The guard knows nothing of secrets: redact its message here.
            raise EgressRefused(
                self.redact(str(exc)), url=shown, host=exc.host, address=exc.address
            ) from None
        except EgressError as exc:
            raise EgressError(
                self.redact(str(exc)),
                url=shown,
                retryable=exc.retryable,
                sent=exc.sent,
                timed_out=exc.timed_out,
            ) from None
        except _transport.HTTP_ERRORS as exc:
            raise _transport.failure(method, shown, exc, self.redact) from None

    async def aclose(self) -> None:
        """Close every connection this egress holds, and the transport it was given."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        guard, self._guard = self._guard, None
        if guard is not None:
            await guard.aclose()  # and the transport it was given
        elif self._given is not None:
            await self._given.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            from psych_runtime.model.egress import _transport

            if self._guard is None:
                self._guard = _transport.GuardedTransport(self.policy, self._resolve, self._given)
            self._client = _transport.client(self._guard, *self._timeouts)
        return self._client

    def _failure(self, method: str, url: str) -> Callable[[Exception], EgressError]:
        """How a failure while reading a response to `method` `url` is told."""
        from psych_runtime.model.egress import _transport

        return partial(_transport.failure, method, url, redact=self.redact)

    async def _fill(self, templates: Mapping[str, str]) -> dict[str, str]:
        filled: dict[str, str] = {}
        for header, template in templates.items():
            values: dict[str, str] = {}
            for _literal, name, _spec, _conversion in string.Formatter().parse(template):
                if name is None or name in values:
                    continue
                values[name] = await self._secret(name)
            filled[header] = template.format_map(values)
        return filled

    async def _secret(self, name: str) -> str:
        if self.secrets is None:
            raise SecretNotFound(
                name, "this Egress", "it has no SecretResolver: pass secrets=... to Egress"
            )
        value = await self.secrets.resolve(name)
        if value is None:
            raise SecretNotFound(name, repr(self.secrets))
        return value


def _positive(name: str, seconds: float) -> float:
    if not seconds > 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {seconds!r}")
    return seconds

"""`OpenAIChatClient`: the `ModelClient` for OpenAI-compatible chat completions APIs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Iterable
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from psych_core import (
    Cost,
    EgressError,
    EgressRefused,
    ModelError,
    ModelFailure,
    ModelRequest,
    ModelResponse,
    SecretNotFound,
    SecretResolver,
    TextSink,
    Usage,
)
from psych_runtime.adapters import EnvSecretResolver
from psych_runtime.model._openai_usage import cost_from_openai, usage_from_openai
from psych_runtime.model._openai_wire import (
    FINISH_REASONS,
    BadReply,
    Reply,
    StreamReader,
    parse_reply,
    request_body,
    short,
)
from psych_runtime.model._pricing import PriceTable
from psych_runtime.model._retry import Backoff, retry_after, retryable_status
from psych_runtime.model.egress import (
    DEFAULT_MAX_RESPONSE_BYTES,
    Egress,
    EgressPolicy,
    EgressResponse,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_ERROR_BODY_LIMIT = 64 * 1024


class _Failed(Exception):
    """One attempt failed; `final` when trying again or another model cannot help."""

    def __init__(
        self, failure: ModelFailure, *, wait: float | None = None, final: bool = False
    ) -> None:
        self.failure = failure
        self.wait = wait
        self.final = final
        super().__init__(failure.reason)


class OpenAIChatClient:
    """A `ModelClient` for any OpenAI-compatible chat completions API.

    It sends the conversation, the tools and (when the spec asks for structured output) a JSON
    schema response format; reads whole or streamed answers (server-sent events, with
    ``stream_options.include_usage``); retries 429, 5xx and dropped connections with
    exponential backoff and jitter, honouring ``Retry-After`` (a LiteLLM gateway's
    ``llm_provider-retry-after`` too); then tries ``ModelRef.fallbacks`` in order. Every
    failed attempt is reported, so the log names it. Whatever the servers do, a call ends:
    each attempt within `total_timeout`, each wait between attempts within `max_backoff` or
    `max_retry_after`, and there are at most `max_attempts` per model.

    Usage comes from the provider's ``usage`` (missing when it sent none, never zero). Cost
    comes from the gateway when it reports one (``usage.cost``), else from `prices`, else from
    the bundled snapshot when the provider is known (from `provider` or the base URL), else it
    is None.

    Every request goes through an `Egress` that lets out only the base URL's host, and refuses
    private, loopback and link-local addresses: to reach a model server on this machine or
    your network, pass ``egress=EgressPolicy(allow_loopback=True)`` (or ``allow_private``).
    Close the client with `aclose` (or ``async with``) when done.

    Args:
        base_url: the API's base URL; ``$OPENAI_BASE_URL`` or OpenAI's when omitted.
        api_key_secret: the *name* of the secret holding the API key (sent as a bearer token);
            None sends no key (a local server).
        secrets: where the key's value comes from; environment variables when omitted.
        egress: an `EgressPolicy` for the egress the client makes (a policy without
            `allow_hosts` is narrowed to `base_url`'s host), or an `Egress` of your own to
            send through (it brings its own secrets and is yours to close).
        prices: the app's own prices, before the snapshot's.
        provider: the snapshot's id for the provider serving `base_url` (``"openai"``, ...)
            when the URL does not tell (a proxy in front of it).
        stream: stream answers (server-sent events) rather than wait for them whole. A call
            given ``on_text`` (live text, `Runtime.live`) streams regardless.
        timeout: seconds to wait for each read of the answer (for the egress the client
            makes; an `Egress` of your own has its own).
        connect_timeout: seconds to wait for a connection (likewise).
        total_timeout: seconds one attempt may take in all, the whole answer read (streamed
            or not), whichever egress sends it; past it the attempt fails (retryable), even
            when the server keeps sending keep-alive lines.
        max_response_bytes: the longest answer read, whole or streamed; a longer one fails
            the attempt (not retried).
        max_attempts: tries per model before moving to the next fallback.
        backoff: seconds before the first retry; doubled each retry, with jitter.
        max_backoff: the longest wait between retries.
        max_retry_after: the longest ``Retry-After`` honoured; asked to wait longer, the
            client moves to the next model.
        accept_finish_reasons: finish reasons beyond OpenAI's that this server uses for a
            whole answer. Any other finish reason fails the attempt.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key_secret: str | None = "OPENAI_API_KEY",
        secrets: SecretResolver | None = None,
        egress: Egress | EgressPolicy | None = None,
        prices: PriceTable | None = None,
        provider: str | None = None,
        stream: bool = False,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        total_timeout: float = 600.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_attempts: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 60.0,
        accept_finish_reasons: Iterable[str] = (),
    ) -> None:
        if api_key_secret is not None and api_key_secret.startswith(("sk-", "Bearer ")):
            raise ValueError(
                "api_key_secret is the name of the secret that holds the key, not the key: "
                "put the key in the environment (OPENAI_API_KEY) or your SecretResolver"
            )
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
        if not total_timeout > 0:
            raise ValueError(
                f"total_timeout must be a positive number of seconds, not {total_timeout!r}"
            )
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, not {max_response_bytes}")
        if isinstance(egress, Egress) and secrets is not None:
            raise ValueError("pass secrets to the Egress you give, not to the client as well")
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        host = urlsplit(url).hostname
        if not host or urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"base_url {url!r} is not an http(s) URL with a host")
        self.base_url = url
        self.api_key_secret = api_key_secret
        self.prices = prices
        self.provider = provider
        self.stream = stream
        self.max_attempts = max_attempts
        self.total_timeout = total_timeout
        self.max_response_bytes = max_response_bytes
        self._backoff = Backoff(backoff, max_backoff, max_retry_after)
        self._accept = FINISH_REASONS | frozenset(accept_finish_reasons)
        # Read the bundled prices now, not on the event loop at the first answer.
        self._snapshot = PriceTable.snapshot()
        self._owns_egress = not isinstance(egress, Egress)
        if not isinstance(egress, Egress):
            names = [api_key_secret] if api_key_secret else []
            policy = egress or EgressPolicy()
            if policy.allow_hosts is None:
                # This client only ever talks to its base URL: let nothing else out.
                policy = dataclasses.replace(policy, allow_hosts=(host,))
            egress = Egress(
                policy,
                secrets=secrets if secrets is not None else EnvSecretResolver(names),
                timeout=timeout,
                connect_timeout=connect_timeout,
            )
        self.egress: Egress = egress

    async def complete(
        self, request: ModelRequest, *, on_text: TextSink | None = None
    ) -> ModelResponse:
        """Ask `request.model`, retrying and falling back as needed; see the class docstring.

        Given `on_text` (a `TextSink`), the answer is streamed whatever `stream` says, and
        each piece of its text is handed to `on_text` as it arrives; a retry or a fallback
        starts the text again at offset 0. The response is the same as without it.

        Raises `ModelError` (with every failed attempt in `failures`) when no model answered.
        """
        failures: list[ModelFailure] = []
        for model in (request.model.model, *request.model.fallbacks):
            for attempt in range(1, self.max_attempts + 1):
                try:
                    return await self._ask(request, model, tuple(failures), on_text)
                except _Failed as failed:
                    failures.append(failed.failure)
                    if failed.final:
                        raise self._error(request, failures) from None
                    if not failed.failure.retryable or attempt == self.max_attempts:
                        break
                    delay = self._backoff.delay(attempt, failed.wait)
                    if delay is None:
                        break  # asked to wait longer than we will: try the next model
                    await asyncio.sleep(delay)
        raise self._error(request, failures)

    async def aclose(self) -> None:
        """Close the connections of the egress this client made (not of one it was given)."""
        if self._owns_egress:
            await self.egress.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OpenAIChatClient(base_url={self.base_url!r}, stream={self.stream})"

    # -- one attempt -------------------------------------------------------------------------

    async def _ask(
        self,
        request: ModelRequest,
        model: str,
        failures: tuple[ModelFailure, ...],
        on_text: TextSink | None = None,
    ) -> ModelResponse:
        stream = self.stream or on_text is not None
        body = request_body(request, model, stream=stream)
        secret_headers = (
            {"Authorization": f"Bearer {{{self.api_key_secret}}}"} if self.api_key_secret else {}
        )
        accept = "text/event-stream" if stream else "application/json"
        try:
            async with self.egress.stream(
                "POST",
                f"{self.base_url}/chat/completions",
                json=body,
                headers={"Accept": accept},
                secret_headers=secret_headers,
                total_timeout=self.total_timeout,
            ) as response:
                if not 200 <= response.status < 300:
                    raise await self._http_failure(model, response)
                reply = await self._read(response, model, stream, on_text)
        except BadReply as bad:
            reason = self.egress.redact(bad.reason)
            raise _Failed(ModelFailure(model, reason, 200, bad.retryable)) from None
        except (EgressRefused, SecretNotFound) as exc:
            # Configuration, not chance: no retry and no other model will get past it.
            raise _Failed(ModelFailure(model, self.egress.redact(str(exc))), final=True) from None
        except EgressError as exc:
            raise _Failed(ModelFailure(model, str(exc), None, exc.retryable)) from None
        return self._response(reply, failures)

    async def _read(
        self, response: EgressResponse, model: str, stream: bool, on_text: TextSink | None
    ) -> Reply:
        if stream:
            reader = StreamReader(model, self._accept, on_text)
            async for line in response.lines(self.max_response_bytes):
                reader.line(line)
            return reader.reply()
        raw = await response.read(self.max_response_bytes)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            text = raw.decode("utf-8", "replace")
            raise BadReply(f"the reply is not JSON ({exc}): {short(text, 120)}") from None
        return parse_reply(data, model, self._accept)

    async def _http_failure(self, model: str, response: EgressResponse) -> _Failed:
        try:
            raw = await response.read(_ERROR_BODY_LIMIT)
        except EgressError:
            raw = b""
        message = _error_message(raw)
        status = response.status
        if 300 <= status < 400:
            message = f"redirects are not followed (to {response.headers.get('location')!r}); "
            message += "set base_url to where the API is"
        reason = self.egress.redact(f"HTTP {status}: {message}" if message else f"HTTP {status}")
        retryable = retryable_status(status)
        wait = retry_after(response.headers) if retryable else None
        return _Failed(ModelFailure(model, reason, status, retryable), wait=wait)

    def _response(self, reply: Reply, failures: tuple[ModelFailure, ...]) -> ModelResponse:
        usage = usage_from_openai(reply.usage)
        cost = cost_from_openai(reply.usage)
        if cost is None and usage is not None:
            cost = self._price(reply.model, usage)
        return ModelResponse(
            model=reply.model,
            text=reply.text,
            tool_calls=reply.tool_calls,
            usage=usage,
            usage_source="provider" if usage is not None else "missing",
            cost=cost,
            finish_reason=reply.finish_reason,
            failures=failures,
        )

    def _price(self, model: str, usage: Usage) -> Cost | None:
        if self.prices is not None:
            cost = self.prices.cost(model, usage)
            if cost is not None:
                return cost
        return self._snapshot.cost(model, usage, provider=self.provider, base_url=self.base_url)

    def _error(self, request: ModelRequest, failures: list[ModelFailure]) -> ModelError:
        last = failures[-1]
        tried = ", ".join(dict.fromkeys(failure.model for failure in failures))
        return ModelError(
            f"run {request.run_id}: no model answered ({len(failures)} failed attempts, "
            f"models tried: {tried}); last: {last.model}: {last.reason}",
            model=last.model,
            status=last.status,
            retryable=last.retryable,
            failures=tuple(failures),
        )


def _error_message(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return short(text, 200)
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return short(error["message"], 300)
        if isinstance(error, str):
            return short(error, 300)
    return short(text, 200)

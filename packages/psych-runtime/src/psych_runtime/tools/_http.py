"""The http-tool executor: a declared request, filled in from the model's arguments and sent
through the egress seam.

Each tool reaches only the host its URL names: requests go through an `Egress` whose allowlist
is that host, under the app's `EgressPolicy` for addresses (public only unless the app allows
loopback or private networks). Secrets named in headers are filled in by the egress when the
request is sent; values never pass through here into a result or an error unredacted.
"""

from __future__ import annotations

import codecs
import dataclasses
import http
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from pydantic import JsonValue

from psych_core import (
    EgressError,
    EgressRefused,
    HttpTool,
    SecretNotFound,
    SecretResolver,
    ToolDefinition,
    UrlTemplate,
    placeholders,
)

# The one import from `model` that `tools` makes (DESIGN section 2): the egress seam.
from psych_runtime.model.egress import DEFAULT_TOTAL_TIMEOUT, Egress, EgressResponse
from psych_runtime.model.egress import EgressPolicy as EgressPolicy
from psych_runtime.tools._code import InvalidArguments, ToolRaised
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import (
    may_have_happened,
    parse_arguments,
    ran_out_of_time,
    render,
)
from psych_runtime.tools._wait import WaitFor

ERROR_BODY_BYTES = 2048
"""How much of a non-2xx response's body the model is shown."""

_BODYLESS = frozenset({"GET", "HEAD"})


class HttpTools:
    """Sends the requests of http tools: one `Egress` per declared host, made on first use.

    Args:
        policy: which addresses requests may reach (the app's); each tool's egress narrows
            its host allowlist to the tool's host. `EgressPolicy()` (public addresses only)
            when None.
        secrets: where the secrets named in headers come from.
        total_timeout: seconds a request of a tool without a `HttpTool.timeout` may take in
            all, body included: no server holds a call open longer, however it drips.
    """

    def __init__(
        self,
        policy: EgressPolicy | None = None,
        secrets: SecretResolver | None = None,
        *,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
    ) -> None:
        self.policy = policy or EgressPolicy()
        self.secrets = secrets
        self.total_timeout = total_timeout
        self._egresses: dict[str, Egress] = {}

    def bind(self, ref: HttpTool) -> HttpCall:
        """The executor of `ref`, sending through the egress of its host."""
        url = UrlTemplate.parse(ref.url)
        egress = self._egresses.get(url.host)
        if egress is None:
            policy = dataclasses.replace(self.policy, allow_hosts=(url.host,))
            egress = self._egresses[url.host] = Egress(
                policy, secrets=self.secrets, total_timeout=self.total_timeout
            )
        return HttpCall(ref, url, egress)

    async def aclose(self) -> None:
        """Close every connection the tools' egresses hold."""
        egresses, self._egresses = self._egresses, {}
        for egress in egresses.values():
            await egress.aclose()


@dataclass(frozen=True, slots=True)
class HttpCall:
    """One http tool, ready to be offered to a model and called."""

    ref: HttpTool
    url: UrlTemplate
    egress: Egress

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered this tool."""
        text = description or self.ref.description or f"{self.ref.method} {self.ref.url}"
        return ToolDefinition(self.ref.name, text, self.ref.arguments_schema)

    def validate(self, arguments: str) -> dict[str, Any]:
        """The model's arguments, checked against the tool's schema and the URL's path.

        A path argument fills exactly one path segment. A value that would not (one holding
        ``/`` or ``\\``, or leaving a segment empty, ``.`` or ``..``, even percent-encoded)
        is refused here, before the call starts, rather than encoded: servers and proxies
        commonly decode ``%2F`` and resolve ``%2E%2E`` before routing, so no encoding keeps
        such a value one segment on every server.
        """
        parsed = parse_arguments(self.ref.arguments_schema, arguments)
        problems = _path_problems(self.url.path, parsed)
        if problems:
            raise InvalidArguments("; ".join(problems))
        return parsed

    def target(self, arguments: dict[str, Any]) -> str:
        """The URL for these arguments; every value percent-encoded where it goes."""
        values = {name: quote(render(arguments[name]), safe="") for name in self.url.path_names}
        url = self.url.origin + self.url.path.format_map(values)
        pairs: list[str] = []
        for name, template in self.url.query:
            wanted = placeholders(template, "query value")
            if any(placeholder not in arguments for placeholder in wanted):
                continue  # an optional argument left out: so is its query pair
            filled = {p: quote(render(arguments[p]), safe="") for p in wanted}
            pairs.append(f"{name}={template.format_map(filled)}" if template or wanted else name)
        return f"{url}?{'&'.join(pairs)}" if pairs else url

    def body(self, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON body: the arguments the URL does not use (None for GET and HEAD)."""
        if self.ref.method in _BODYLESS:
            return None
        used = set(self.url.names)
        properties = self.ref.arguments_schema.get("properties", {})
        declared = isinstance(properties, dict) and any(n not in used for n in properties)
        body = {name: value for name, value in arguments.items() if name not in used}
        return body if body or declared else None

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Send the request; a 2xx answer is the result, any other fails the call.

        Raises `ToolRaised` for a failure that is known (a refusal, no connection, a non-2xx
        status), and `ToolOutcomeUnknown` (unsafe tools) or `ToolRaised` with reason
        ``timeout`` (safe tools) when the request may have reached the server.
        """
        ref = self.ref
        url = self.target(arguments)
        if ref.headers and self.egress.secrets is None and _names_secrets(ref):
            raise ToolRaised(
                f"tool {ref.name!r} names secrets in its headers, but the worker has no "
                "SecretResolver: pass secrets=... to the Worker or session"
            )
        try:
            async with self.egress.stream(
                ref.method,
                url,
                secret_headers=ref.headers,
                json=self.body(arguments),
                timeout=ref.timeout,
                # The whole call's bound, however the server drips; when the tool sets
                # none, the egress's own.
                total_timeout=ref.timeout,
            ) as response:
                if 200 <= response.status < 300:
                    data, cut = await response.read_prefix(ref.max_response_bytes)
                    return _result(response, data, cut, ref.max_response_bytes)
                data, cut = await response.read_prefix(ERROR_BODY_BYTES)
        except (SecretNotFound, EgressRefused) as exc:
            raise ToolRaised(f"tool {ref.name!r}: {exc}") from None
        except EgressError as exc:
            if not exc.sent:
                raise ToolRaised(f"tool {ref.name!r}: {exc}") from None
            if exc.timed_out:
                raise ran_out_of_time(ref, f"tool {ref.name!r}: {exc}") from None
            raise may_have_happened(ref, f"tool {ref.name!r}: {exc}") from None
        raise ToolRaised(_failure(ref, response, data, cut))


def _path_problems(path: str, arguments: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for segment in path.split("/"):
        names = placeholders(segment, "url path")
        if not names or any(name not in arguments for name in names):
            continue  # the schema check has said what is missing
        values = {name: render(arguments[name]) for name in names}
        slashed = [name for name, value in values.items() if _splits(value)]
        for name in slashed:
            problems.append(
                f"{name}: {values[name]!r} holds a '/' or '\\', which would add a path "
                "segment to the URL; give one segment"
            )
        filled = _fully_decoded(segment.format_map(values))
        if not slashed and filled in ("", ".", ".."):
            given = " ".join(repr(values[name]) for name in names)
            problems.append(
                f"{', '.join(names)}: {given} would turn the URL's path segment {segment!r} "
                f"into {filled!r}, which moves the request to another path; give a value "
                "that names one thing"
            )
    return problems


def _splits(value: str) -> bool:
    decoded = _fully_decoded(value)
    return "/" in decoded or "\\" in decoded


def _fully_decoded(text: str) -> str:
    # Some servers decode twice: judge what is left after every layer of %-encoding is gone.
    while (decoded := unquote(text)) != text:
        text = decoded
    return text


def _names_secrets(ref: HttpTool) -> bool:
    return any(placeholders(value, "header") for value in ref.headers.values())


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _text(data: bytes, cut: bool) -> str:
    # A cut body may end inside a character: the incomplete tail is dropped, not mangled.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return decoder.decode(data, final=not cut)


def _is_json(response: EgressResponse) -> bool:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def _result(response: EgressResponse, data: bytes, cut: bool, limit: int) -> JsonValue:
    status = f"HTTP {response.status} {_phrase(response.status)}".rstrip()
    if cut:
        return (
            f"{_text(data, cut)}\n[cut: the response is longer than {limit} bytes, the tool's "
            "max_response_bytes; only the start is shown]"
        )
    if not data:
        return f"{status} (no body)"
    text = _text(data, cut)
    if _is_json(response):
        try:
            parsed: JsonValue = json.loads(text)
        except ValueError:
            return text
        return parsed
    return text


def _failure(ref: HttpTool, response: EgressResponse, data: bytes, cut: bool) -> str:
    status = f"HTTP {response.status} {_phrase(response.status)}".rstrip()
    message = f"{status} from {ref.method} {response.url}"
    location = response.headers.get("location")
    if 300 <= response.status < 400 and location:
        message += f" (redirects to {location}; http tools follow no redirects)"
    text = _text(data, cut).strip()
    if text:
        more = f"\n[the body goes on past {ERROR_BODY_BYTES} bytes]" if cut else ""
        message += f": {text}{more}"
    return message

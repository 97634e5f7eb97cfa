"""The egress seam: what it refuses (before any connection), what it lets out, and how.

Requests to addresses off this machine are only ever made with a recording test transport
underneath, so that nothing could leave even if the seam let them through.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

import httpx
import pytest

from psych_runtime import (
    Egress,
    EgressError,
    EgressPolicy,
    EgressRefused,
    EnvSecretResolver,
    SecretNotFound,
)

SECRET = "tok-5e1f0c2a9b8d7e6f"


@dataclass
class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    port: int = 0
    accepted: int = 0
    requests: list[bytes] = field(default_factory=list)
    respond: bool = True


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    state = Listener()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.accepted += 1
        head = await reader.readuntil(b"\r\n\r\n")
        state.requests.append(head)
        if state.respond:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        else:
            await reader.read()  # say nothing until the client gives up and hangs up
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state


class Recorder(httpx.MockTransport):
    """A transport that answers 200 to everything and remembers what reached it."""

    def __init__(self) -> None:
        self.seen: list[httpx.Request] = []
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return httpx.Response(200, text="ok")


def resolver(table: Mapping[str, Sequence[str]], asked: list[str] | None = None):
    async def resolve(host: str, port: int) -> Sequence[str]:
        if asked is not None:
            asked.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return resolve


# -- refused before connecting ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.1/admin", "a private address"),
        ("https://[::ffff:10.0.0.1]/", "a private address"),
        ("http://192.168.1.1/", "a private address"),
        ("http://100.64.0.1/", "a private address"),
        ("http://0.0.0.0:8080/", "a reserved address"),
        ("http://[fe80::1]/", "link-local"),
    ],
)
async def test_private_and_link_local_addresses_are_refused_without_a_connection(
    url: str, kind: str
) -> None:
    transport = Recorder()
    async with Egress(transport=transport) as egress:
        with pytest.raises(EgressRefused) as refused:
            await egress.request("GET", url)
    assert transport.seen == []
    assert "refused before connecting" in str(refused.value)
    assert kind in str(refused.value)


async def test_localhost_is_resolved_and_refused_and_no_connection_is_made(
    listener: Listener,
) -> None:
    async with Egress() as egress:
        with pytest.raises(EgressRefused) as refused:
            await egress.request("GET", f"http://localhost:{listener.port}/")
        with pytest.raises(EgressRefused):
            await egress.request("GET", f"http://127.0.0.1:{listener.port}/")
    assert listener.accepted == 0
    assert refused.value.host == "localhost"
    assert refused.value.address in ("127.0.0.1", "::1")
    assert "a loopback address; allow it with EgressPolicy(allow_loopback=True)" in str(
        refused.value
    )


async def test_the_same_listener_is_reached_once_loopback_is_allowed(listener: Listener) -> None:
    async with Egress(EgressPolicy(allow_loopback=True)) as egress:
        response = await egress.request("GET", f"http://localhost:{listener.port}/hi")
    assert response.status == 200
    assert await response.read() == b"ok"
    assert listener.accepted == 1
    assert listener.requests[0].startswith(b"GET /hi HTTP/1.1")
    assert f"host: localhost:{listener.port}".encode() in listener.requests[0].lower()


async def test_a_name_that_resolves_to_a_private_address_is_refused() -> None:
    transport = Recorder()
    table = {"internal.example": ["10.1.2.3"], "mixed.example": ["93.184.216.34", "10.0.0.5"]}
    async with Egress(transport=transport, resolver=resolver(table)) as egress:
        for host in table:
            with pytest.raises(EgressRefused) as refused:
                await egress.request("GET", f"https://{host}/")
            assert "a private address" in str(refused.value)
    assert transport.seen == []


async def test_a_host_off_the_allowlist_is_refused_before_it_is_even_resolved() -> None:
    transport = Recorder()
    asked: list[str] = []
    policy = EgressPolicy(allow_hosts=("api.example.com", "*.models.example"))
    table = {
        "api.example.com": ["93.184.216.34"],
        "eu.models.example": ["93.184.216.35"],
        "evil.example.com": ["93.184.216.36"],
    }
    async with Egress(policy, transport=transport, resolver=resolver(table, asked)) as egress:
        assert (await egress.request("GET", "https://API.example.com/v1")).status == 200
        assert (await egress.request("GET", "https://eu.models.example/v1")).status == 200
        with pytest.raises(EgressRefused, match="not on the egress allowlist"):
            await egress.request("GET", "https://evil.example.com/")
        with pytest.raises(EgressRefused, match="not on the egress allowlist"):
            await egress.request("GET", "https://models.example/")
    assert "evil.example.com" not in asked
    assert len(transport.seen) == 2


async def test_an_allowed_request_goes_to_the_address_that_was_checked() -> None:
    transport = Recorder()
    table = {"api.example.com": ["93.184.216.34"]}
    async with Egress(transport=transport, resolver=resolver(table)) as egress:
        await egress.request("POST", "https://api.example.com/v1/chat?x=1", json={"a": 1})
    [sent] = transport.seen
    assert sent.url.host == "93.184.216.34"
    assert str(sent.url) == "https://93.184.216.34/v1/chat?x=1"
    assert sent.headers["host"] == "api.example.com"
    assert sent.extensions["sni_hostname"] == "api.example.com"
    assert sent.content == b'{"a":1}'


async def test_a_network_allowed_by_name_is_let_through() -> None:
    transport = Recorder()
    policy = EgressPolicy(allow_networks=("169.254.169.254/32",), allow_private=True)
    async with Egress(policy, transport=transport) as egress:
        assert (await egress.request("GET", "http://169.254.169.254/")).status == 200
        assert (await egress.request("GET", "http://10.0.0.1/")).status == 200
        with pytest.raises(EgressRefused):
            await egress.request("GET", "http://169.254.0.1/")
    assert len(transport.seen) == 2


async def test_only_http_and_https_leave() -> None:
    transport = Recorder()
    async with Egress(transport=transport) as egress:
        with pytest.raises(EgressError):
            await egress.request("GET", "ftp://93.184.216.34/file")
    assert transport.seen == []


async def test_a_name_that_does_not_resolve_is_a_retryable_error() -> None:
    async with Egress(transport=Recorder(), resolver=resolver({})) as egress:
        with pytest.raises(EgressError) as failed:
            await egress.request("GET", "https://nowhere.example/")
    assert not isinstance(failed.value, EgressRefused)
    assert failed.value.retryable
    assert "cannot resolve host 'nowhere.example'" in str(failed.value)


async def test_the_next_address_is_tried_when_one_refuses_the_connection(
    listener: Listener,
) -> None:
    # 127.0.0.2 is loopback too, but nothing listens there on this port.
    table = {"twice.test": ["127.0.0.2", "127.0.0.1"]}
    policy = EgressPolicy(allow_loopback=True)
    async with Egress(policy, resolver=resolver(table)) as egress:
        response = await egress.request("GET", f"http://twice.test:{listener.port}/")
    assert response.status == 200
    assert listener.accepted == 1


# -- secrets -------------------------------------------------------------------------------------


async def test_secrets_are_injected_by_name_at_send_time() -> None:
    transport = Recorder()
    secrets = EnvSecretResolver(["API"], environ={"API": SECRET})
    async with Egress(transport=transport, secrets=secrets) as egress:
        await egress.request(
            "GET",
            "http://93.184.216.34/",
            headers={"X-Plain": "yes"},
            secret_headers={"Authorization": "Bearer {API}", "X-Twice": "{API}:{API}"},
        )
    [sent] = transport.seen
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.headers["x-twice"] == f"{SECRET}:{SECRET}"
    assert sent.headers["x-plain"] == "yes"


async def test_a_secret_with_no_value_stops_the_request_and_names_the_secret() -> None:
    transport = Recorder()
    async with Egress(transport=transport, secrets=EnvSecretResolver(environ={})) as egress:
        with pytest.raises(SecretNotFound) as missing:
            await egress.request("GET", "http://93.184.216.34/", secret_headers={"A": "{API}"})
    async with Egress(transport=transport) as bare:
        with pytest.raises(SecretNotFound, match="no SecretResolver"):
            await bare.request("GET", "http://93.184.216.34/", secret_headers={"A": "{API}"})
    assert transport.seen == []
    assert missing.value.name == "API"
    assert "environment variable 'API'" in str(missing.value)


async def test_errors_never_carry_a_secret_value() -> None:
    secrets = EnvSecretResolver(["API"], environ={"API": SECRET})
    async with Egress(EgressPolicy(allow_loopback=True), secrets=secrets) as egress:
        await secrets.resolve("API")
        with pytest.raises(EgressError) as failed:
            # Port 9 (discard): nothing listens, the connection is refused.
            await egress.request("GET", f"http://127.0.0.1:9/?key={SECRET}")
    assert SECRET not in str(failed.value)
    assert "[redacted:API]" in str(failed.value)
    assert failed.value.retryable


async def test_a_server_that_does_not_answer_times_out(listener: Listener) -> None:
    listener.respond = False
    async with Egress(EgressPolicy(allow_loopback=True), timeout=0.2) as egress:
        with pytest.raises(EgressError, match="timed out waiting for the response") as failed:
            await egress.request("GET", f"http://127.0.0.1:{listener.port}/")
    assert failed.value.retryable


async def test_a_response_over_the_size_limit_is_refused() -> None:
    async with Egress(transport=Recorder()) as egress:
        with pytest.raises(EgressError, match="longer than 1 bytes") as failed:
            await egress.request("GET", "http://93.184.216.34/", max_response_bytes=1)
    assert not failed.value.retryable

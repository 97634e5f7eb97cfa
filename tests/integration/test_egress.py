"""The egress seam: what it refuses (before any connection), what it lets out, and how.

Requests to addresses off this machine are only ever made with a recording test transport
underneath, so that nothing could leave even if the seam let them through.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from psych_runtime import EgressPolicy, EnvSecretResolver
from psych_runtime.errors import EgressError, EgressRefused, SecretNotFound
from psych_runtime.ports import Egress

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


# -- IPv6 forms that carry an IPv4 address ------------------------------------------------------

# Each family, carrying a private, a loopback and a link-local IPv4 address.
SIXTOFOUR = {"private": "2002:a00:1::1", "loopback": "2002:7f00:1::1", "link": "2002:a9fe:a9fe::1"}
NAT64 = {"private": "64:ff9b::a00:1", "loopback": "64:ff9b::7f00:1", "link": "64:ff9b::a9fe:a9fe"}
# Teredo: server 65.54.227.120, client (stored inverted) 10.0.0.1 / 127.0.0.1 / 169.254.169.254.
TEREDO = {
    "private": "2001:0:4136:e378:8000:63bf:f5ff:fffe",
    "loopback": "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "link": "2001:0:4136:e378:8000:63bf:5601:5601",
}
WHAT = {
    "private": "a private address",
    "loopback": "a loopback address",
    "link": "a link-local address",
}


@pytest.mark.parametrize("family", ["6to4", "NAT64", "Teredo"])
@pytest.mark.parametrize("kind", ["private", "loopback", "link"])
async def test_ipv6_forms_carrying_a_refused_ipv4_address_are_refused_like_it(
    family: str, kind: str
) -> None:
    address = {"6to4": SIXTOFOUR, "NAT64": NAT64, "Teredo": TEREDO}[family][kind]
    transport = Recorder()
    async with Egress(transport=transport) as egress:
        with pytest.raises(EgressRefused) as refused:
            await egress.request("GET", f"http://[{address}]/")
    assert transport.seen == []
    assert f"{WHAT[kind]} ({family} for " in str(refused.value)


@pytest.mark.parametrize(
    "address",
    [
        "2002:808:808::1",  # 6to4 for 8.8.8.8
        "64:ff9b::808:808",  # NAT64 (DNS64 answers this for IPv4-only hosts) for 8.8.8.8
        "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo, client 8.8.8.8
        "::ffff:8.8.8.8",
    ],
)
async def test_ipv6_forms_carrying_a_public_ipv4_address_go_out(address: str) -> None:
    transport = Recorder()
    async with Egress(transport=transport) as egress:
        assert (await egress.request("GET", f"http://[{address}]/")).status == 200
    assert len(transport.seen) == 1


async def test_allowing_private_networks_does_not_open_loopback_through_an_ipv6_form() -> None:
    transport = Recorder()
    async with Egress(EgressPolicy(allow_private=True), transport=transport) as egress:
        for family in (SIXTOFOUR, NAT64, TEREDO):
            assert (await egress.request("GET", f"http://[{family['private']}]/")).status == 200
            with pytest.raises(EgressRefused, match="a loopback address"):
                await egress.request("GET", f"http://[{family['loopback']}]/")
            with pytest.raises(EgressRefused, match="a link-local address"):
                await egress.request("GET", f"http://[{family['link']}]/")
    assert len(transport.seen) == 3


async def test_the_ipv4_form_or_the_ipv6_one_may_be_allowed_by_network() -> None:
    transport = Recorder()
    policy = EgressPolicy(allow_networks=("169.254.169.254/32", "64:ff9b::7f00:1/128"))
    async with Egress(policy, transport=transport) as egress:
        for address in (SIXTOFOUR["link"], NAT64["link"], NAT64["loopback"]):
            assert (await egress.request("GET", f"http://[{address}]/")).status == 200
        with pytest.raises(EgressRefused):
            await egress.request("GET", f"http://[{SIXTOFOUR['loopback']}]/")
    assert len(transport.seen) == 3


async def test_site_local_addresses_are_private() -> None:
    transport = Recorder()
    async with Egress(transport=transport) as egress:
        with pytest.raises(EgressRefused, match="a private address; allow it with"):
            await egress.request("GET", "http://[fec0::1]/")
    assert transport.seen == []
    async with Egress(EgressPolicy(allow_private=True), transport=transport) as egress:
        assert (await egress.request("GET", "http://[fec0::1]/")).status == 200


async def test_local_use_nat64_is_refused_unless_its_prefix_is_allowed() -> None:
    # 64:ff9b:1::/48 may carry the IPv4 address at any of several places: it cannot be read.
    transport = Recorder()
    async with Egress(EgressPolicy(allow_private=True), transport=transport) as egress:
        with pytest.raises(EgressRefused, match="a local-use NAT64 address") as refused:
            await egress.request("GET", "http://[64:ff9b:1::808:808]/")
    assert "allow_networks=('64:ff9b:1::/48',)" in str(refused.value)
    assert transport.seen == []
    policy = EgressPolicy(allow_networks=("64:ff9b:1::/48",))
    async with Egress(policy, transport=transport) as egress:
        assert (await egress.request("GET", "http://[64:ff9b:1::808:808]/")).status == 200


# -- bounded in all ------------------------------------------------------------------------------


@pytest.fixture
async def dripping() -> AsyncIterator[int]:
    """A server on 127.0.0.1 that answers 200 and then sends one byte every 0.1 s, for ever."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1000000000\r\n\r\n")
        try:
            for _ in range(6000):  # ten minutes at most, whoever is listening
                writer.write(b":")
                await writer.drain()
                await asyncio.sleep(0.1)
        except ConnectionError:
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_a_server_that_keeps_dripping_is_cut_off_at_the_total_timeout(
    dripping: int,
) -> None:
    url = f"http://127.0.0.1:{dripping}/v1"
    async with asyncio.timeout(20):  # the test's own bound: the egress must end sooner
        async with Egress(EgressPolicy(allow_loopback=True), total_timeout=0.5) as egress:
            with pytest.raises(EgressError) as whole:
                await egress.request("GET", url)
            with pytest.raises(EgressError) as lines:
                await read_all(egress, url, total_timeout=0.3)
    assert whole.value.timed_out and whole.value.retryable
    assert f"GET {url}: no whole response within the total timeout of 0.5 s" in str(whole.value)
    assert "within the total timeout of 0.3 s" in str(lines.value)


async def read_all(egress: Egress, url: str, **options: Any) -> list[str]:
    """Every line of the body, read inside the `stream` block."""
    async with egress.stream("GET", url, **options) as response:
        return [line async for line in response.lines()]


async def test_a_timeout_of_the_callers_own_inside_a_stream_is_left_alone() -> None:
    async with Egress(transport=Recorder()) as egress:
        with pytest.raises(TimeoutError):
            async with egress.stream("GET", "http://93.184.216.34/"):
                raise TimeoutError("the caller's")


def test_a_total_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="total_timeout must be a positive number"):
        Egress(total_timeout=0)


# -- bodies read line by line --------------------------------------------------------------------


class Chunks(httpx.MockTransport):
    """A transport whose answers are these body chunks, sent one by one."""

    def __init__(self, *chunks: bytes) -> None:
        async def body() -> AsyncIterator[bytes]:
            for piece in chunks:
                yield piece

        super().__init__(lambda request: httpx.Response(200, content=body()))


async def read_lines(transport: httpx.MockTransport, limit: int | None = None) -> list[str]:
    async with (
        Egress(transport=transport) as egress,
        egress.stream("GET", "http://93.184.216.34/") as response,
    ):
        if limit is None:
            return [line async for line in response.lines()]
        return [line async for line in response.lines(limit)]


async def test_lines_split_on_every_ending_even_across_chunks() -> None:
    chunks = Chunks(b"data: a\r", b"\ndata: \xc3", b"\xa9\r\r\n", b"\n", b"x\ry\nlast")
    assert await read_lines(chunks) == ["data: a", "data: é", "", "", "x", "y", "last"]
    assert await read_lines(Chunks(b"one\r")) == ["one"]
    assert await read_lines(Chunks(b"")) == []


async def test_a_body_read_line_by_line_has_the_same_cap_as_a_whole_one() -> None:
    with pytest.raises(EgressError, match="longer than 10 bytes") as capped:
        await read_lines(Chunks(b"data: 1\n\n", b"data: 2\n\n"), limit=10)
    assert not capped.value.retryable
    # One endless line is counted as it comes, not once it ends.
    with pytest.raises(EgressError, match="longer than 10 bytes"):
        await read_lines(Chunks(*[b"x" * 4] * 4), limit=10)
    assert await read_lines(Chunks(b"data: 1\n\n"), limit=10) == ["data: 1", ""]

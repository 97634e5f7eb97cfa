"""The egress seam's httpx2 client (MCP over HTTP): the same refusals as `Egress`, the same pinning.

Every request goes to a listener on 127.0.0.1 or is refused before connecting; a listener
counts what reaches it, so a refusal is seen to have made no connection.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

import httpx2
import pytest

from psych_runtime import EgressPolicy
from psych_runtime.errors import EgressError, EgressRefused
from psych_runtime.model.egress import HostResolver
from psych_runtime.model.egress._httpx2 import SSE_READ_TIMEOUT, _pinned, guarded_httpx2_client

LOOPBACK = EgressPolicy(allow_loopback=True)


@dataclass
class Listener:
    """A TCP listener on 127.0.0.1 that answers 200 and keeps what it was sent."""

    port: int = 0
    accepted: int = 0
    requests: list[bytes] = field(default_factory=list)
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    state = Listener()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.accepted += 1
        state.requests.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        await reader.read()  # keep the connection open until the client hangs up
        state.hung_up.set()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state


def resolver(table: Mapping[str, Sequence[str]], asked: list[str] | None = None) -> HostResolver:
    async def resolve(host: str, port: int) -> Sequence[str]:
        if asked is not None:
            asked.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return resolve


async def test_loopback_is_refused_under_the_default_policy_without_a_connection(
    listener: Listener,
) -> None:
    async with guarded_httpx2_client(None) as client:
        with pytest.raises(EgressRefused) as refused:
            await client.get(f"http://127.0.0.1:{listener.port}/mcp")
        with pytest.raises(EgressRefused) as by_name:
            await client.get(f"http://localhost:{listener.port}/mcp?token=x")
    assert listener.accepted == 0
    assert "a loopback address; allow it with EgressPolicy(allow_loopback=True)" in str(
        refused.value
    )
    assert str(by_name.value).startswith(f"http://localhost:{listener.port}/mcp: refused")
    assert by_name.value.host == "localhost"
    assert by_name.value.address in ("127.0.0.1", "::1")
    assert not by_name.value.sent


async def test_loopback_is_reached_once_the_policy_allows_it(listener: Listener) -> None:
    async with guarded_httpx2_client(LOOPBACK) as client:
        response = await client.post(f"http://127.0.0.1:{listener.port}/mcp", content=b"{}")
    assert response.status_code == 200
    assert response.content == b"ok"
    assert listener.accepted == 1
    assert listener.requests[0].startswith(b"POST /mcp HTTP/1.1")


async def test_the_request_goes_to_the_checked_address_with_the_host_header_kept(
    listener: Listener,
) -> None:
    asked: list[str] = []
    table = {"mcp.test": ["127.0.0.1"]}
    headers = {"Authorization": "Bearer t"}
    async with guarded_httpx2_client(
        LOOPBACK, resolver=resolver(table, asked), headers=headers
    ) as client:
        response = await client.get(f"http://mcp.test:{listener.port}/mcp")
    assert response.status_code == 200
    assert asked == ["mcp.test"]
    head = listener.requests[0].lower()
    assert f"host: mcp.test:{listener.port}\r\n".encode() in head
    assert b"authorization: bearer t\r\n" in head


async def test_a_name_resolving_to_loopback_is_refused_when_loopback_is_not_allowed(
    listener: Listener,
) -> None:
    table = {"mcp.test": ["93.184.216.34", "127.0.0.1"]}
    async with guarded_httpx2_client(None, resolver=resolver(table)) as client:
        with pytest.raises(EgressRefused, match=r"mcp\.test \(127\.0\.0\.1\) is a loopback"):
            await client.get(f"http://mcp.test:{listener.port}/mcp")
    assert listener.accepted == 0


async def test_a_host_off_the_allowlist_is_refused_before_it_is_resolved(
    listener: Listener,
) -> None:
    asked: list[str] = []
    table = {"mcp.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}
    policy = EgressPolicy(allow_hosts=("mcp.test",), allow_loopback=True)
    async with guarded_httpx2_client(policy, resolver=resolver(table, asked)) as client:
        with pytest.raises(EgressRefused, match="not on the egress allowlist") as refused:
            await client.get(f"http://other.test:{listener.port}/mcp")
        assert (await client.get(f"http://mcp.test:{listener.port}/mcp")).status_code == 200
    assert refused.value.host == "other.test"
    assert asked == ["mcp.test"]
    assert listener.accepted == 1


async def test_only_http_and_https_leave(listener: Listener) -> None:
    async with guarded_httpx2_client(LOOPBACK) as client:
        with pytest.raises(EgressRefused, match="only http and https requests may leave"):
            await client.get(f"ftp://127.0.0.1:{listener.port}/file")
    assert listener.accepted == 0


async def test_a_name_that_does_not_resolve_is_an_error_before_sending() -> None:
    async with guarded_httpx2_client(None, resolver=resolver({})) as client:
        with pytest.raises(EgressError) as failed:
            await client.get("https://nowhere.test/mcp")
    assert not isinstance(failed.value, EgressRefused)
    assert not failed.value.sent
    assert "cannot resolve host 'nowhere.test'" in str(failed.value)


async def test_the_next_address_is_tried_when_one_refuses_the_connection(
    listener: Listener,
) -> None:
    # 127.0.0.2 is loopback too, but nothing listens there on this port.
    table = {"twice.test": ["127.0.0.2", "127.0.0.1"]}
    async with guarded_httpx2_client(LOOPBACK, resolver=resolver(table)) as client:
        assert (await client.get(f"http://twice.test:{listener.port}/")).status_code == 200
    assert listener.accepted == 1


async def test_closing_the_client_closes_its_connections(listener: Listener) -> None:
    client = guarded_httpx2_client(LOOPBACK)
    await client.get(f"http://127.0.0.1:{listener.port}/")
    assert not listener.hung_up.is_set()  # kept alive in the host's pool
    await client.aclose()
    await asyncio.wait_for(listener.hung_up.wait(), timeout=1)


def test_https_requests_keep_the_name_for_tls() -> None:
    request = httpx2.Request("POST", "https://mcp.example.com/mcp?x=1", content=b"{}")
    sent = _pinned(request, "93.184.216.34")
    assert str(sent.url) == "https://93.184.216.34/mcp?x=1"
    assert sent.headers["host"] == "mcp.example.com"
    assert sent.extensions["sni_hostname"] == "mcp.example.com"
    plain = _pinned(httpx2.Request("GET", "http://mcp.example.com/"), "93.184.216.34")
    assert "sni_hostname" not in plain.extensions


async def test_the_client_follows_no_redirects_reads_no_environment_and_waits_for_streams() -> None:
    async with guarded_httpx2_client(
        None, headers={"X-Client": "psych"}, timeout=7.0, connect_timeout=3.0
    ) as client:
        assert not client.follow_redirects
        assert not client.trust_env
        assert client.headers["x-client"] == "psych"
        assert client.timeout == httpx2.Timeout(7.0, connect=3.0, read=SSE_READ_TIMEOUT)

"""Fixtures the model-client test modules share: the scripted chat server on loopback, started
once per module, and emptied of replies before each test (which must ask for every reply it
scripted); and `make_client`, OpenAIChatClients for it (closed after the test) whose API key
is `API_KEY`, from a secret resolver."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from psych_runtime import EgressPolicy, EnvSecretResolver, OpenAIChatClient
from tests.integration._chat_server import API_KEY, ChatServer, MakeClient, serve


@pytest.fixture(scope="module")
def running_server() -> Iterator[ChatServer]:
    with serve() as running:
        yield running


@pytest.fixture
def server(running_server: ChatServer) -> Iterator[ChatServer]:
    running_server.reset()
    yield running_server
    assert not running_server.replies, "a scripted reply was never asked for"


@pytest.fixture
async def make_client(server: ChatServer) -> AsyncIterator[MakeClient]:
    clients: list[OpenAIChatClient] = []

    def make(**options: Any) -> OpenAIChatClient:
        options.setdefault("egress", EgressPolicy(allow_loopback=True))
        options.setdefault(
            "secrets", EnvSecretResolver(["TEST_KEY"], environ={"TEST_KEY": API_KEY})
        )
        options.setdefault("api_key_secret", "TEST_KEY")
        options.setdefault("backoff", 0.01)
        client = OpenAIChatClient(server.base_url, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()

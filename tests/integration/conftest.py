"""Fixtures the model-client test modules share: the scripted chat server on loopback, started
once per module, and emptied of replies before each test (which must ask for every reply it
scripted)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration._chat_server import ChatServer, serve


@pytest.fixture(scope="module")
def running_server() -> Iterator[ChatServer]:
    with serve() as running:
        yield running


@pytest.fixture
def server(running_server: ChatServer) -> Iterator[ChatServer]:
    running_server.reset()
    yield running_server
    assert not running_server.replies, "a scripted reply was never asked for"

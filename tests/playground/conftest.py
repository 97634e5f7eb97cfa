"""The playground every API test module shares: its server and a worker, started once per test
session on a temporary SQLite file and a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.playground._processes import Playground, running


@pytest.fixture(scope="session")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Playground]:
    home = tmp_path_factory.mktemp("playground")
    with running(home, {"PSYCH_STORE": f"sqlite:///{home / 'playground.db'}"}) as started:
        yield started

"""The crash test on MySQL/MariaDB: kill -9 at random moments and at every named fault point,
with nothing lost and nothing unsafe done twice (DESIGN.md section 4, items 3 and 4).

200 runs in a fresh database of the server PSYCH_TEST_MYSQL_DSN names, two worker processes,
a driver that kills them at least 50 times and restarts each at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests._mysql_databases import create_database, drop_database, url_for
from tests.integration.crash_driver import REACHABLE, check_outcome, crash_run

pytestmark = pytest.mark.integration


@pytest.fixture
async def database() -> AsyncIterator[str]:
    name = await create_database()
    try:
        yield name
    finally:
        await drop_database(name)


@pytest.mark.timeout(600)
async def test_mysql_runs_survive_kill_9_with_nothing_lost_or_repeated(
    database: str, tmp_path: Path
) -> None:
    outcome = await crash_run(url_for(database), tmp_path / "ledger.txt")
    assert outcome.kills >= 50
    assert len(outcome.run_ids) >= 200
    never = set(REACHABLE) - outcome.points_hit
    assert not never, f"never died at {never}"
    check_outcome(outcome)
    settled = sum(
        1 for log in outcome.logs.values() for r in log if r.body.type == "tool_call_settled"
    )
    kinds = [kind for kind, _, _ in outcome.ledger]
    assert settled > 0, "some unsafe calls were settled unknown"
    assert kinds.count("safe") > len(outcome.run_ids), "some safe calls ran more than once"

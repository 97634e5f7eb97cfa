"""kill -9 workflow workers at random moments and at every step boundary, on MySQL/MariaDB:
every run completes with its output, no completed step runs again, no unsafe step runs twice,
every ``unknown`` is a step whose worker died, and no log has a gap (DESIGN.md section 4, items
3 and 4, for workflows).

Workflow runs in a fresh database of the server PSYCH_TEST_MYSQL_DSN names, two worker
processes, and a driver that kills them at least 100 times and restarts each at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests._mysql_databases import create_database, drop_database, url_for
from tests.integration.workflow_crash_driver import (
    REACHABLE,
    check_workflows,
    crash_workflows,
    summary,
    tally,
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def database() -> AsyncIterator[str]:
    name = await create_database()
    try:
        yield name
    finally:
        await drop_database(name)


@pytest.mark.timeout(240)
async def test_mysql_workflows_survive_kill_9_with_nothing_lost_or_repeated(
    database: str, tmp_path: Path
) -> None:
    outcome = await crash_workflows(url_for(database), tmp_path / "ledger.txt")
    counted = tally(outcome)
    print(summary(outcome, counted))  # shown when the test fails, and under -s
    assert outcome.kills >= 100
    never = set(REACHABLE) - outcome.points_hit
    assert not never, f"never died at {never}"
    check_workflows(outcome)
    # The kills landed where they matter: unsafe steps were cut off, settled unknown and
    # retried; safe ones were run again; runs waited for a retry and were woken when due.
    assert counted.unknown > 0
    assert counted.retries["outcome_unknown"] > 0
    assert counted.retries["error"] > 0
    assert counted.safe_reruns > 0
    assert counted.wakes

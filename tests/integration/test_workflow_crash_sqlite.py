"""kill -9 workflow workers at random moments and at every step boundary, on SQLite: every run
completes with its output, no completed step runs again, no unsafe step runs twice, every
``unknown`` is a step whose worker died, and no log has a gap (DESIGN.md section 4, items 3
and 4, for workflows).

Workflow runs on one SQLite file (parallel branches, a foreach, a wait for an event, a retry
that suspends the run), two worker processes, and a driver that kills them at least 100 times
and restarts each at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.workflow_crash_driver import (
    REACHABLE,
    check_workflows,
    crash_workflows,
    summary,
    tally,
)


@pytest.mark.timeout(240)
async def test_sqlite_workflows_survive_kill_9_with_nothing_lost_or_repeated(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    outcome = await crash_workflows(url, tmp_path / "ledger.txt")
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

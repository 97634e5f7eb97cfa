"""kill -9 at random moments and at every named fault point: nothing lost, nothing unsafe twice.

200 runs on one SQLite file, two worker processes, a driver that kills them at least 50 times
and restarts each at once (DESIGN.md section 4, items 3 and 4).
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.crash_driver import REACHABLE, check_outcome, crash_run


async def test_sqlite_runs_survive_kill_9_with_nothing_lost_or_repeated(tmp_path: Path) -> None:
    outcome = await crash_run(f"sqlite:///{tmp_path / 'runs.sqlite'}", tmp_path / "ledger.txt")
    assert outcome.kills >= 50
    assert len(outcome.run_ids) >= 200
    never = set(REACHABLE) - outcome.points_hit
    assert not never, f"never died at {never}"
    check_outcome(outcome)
    # The kills landed where they matter: some unsafe calls were settled unknown, and some
    # safe calls ran more than once.
    settled = sum(
        1 for log in outcome.logs.values() for r in log if r.body.type == "tool_call_settled"
    )
    kinds = [kind for kind, _, _ in outcome.ledger]
    assert settled > 0
    assert kinds.count("safe") > len(outcome.run_ids)

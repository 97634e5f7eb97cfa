"""The stuck rule: runs that have not ended and are not getting anywhere, and only those."""

from __future__ import annotations

import dataclasses
import datetime as dt

from psych_playground.stuck import stuck
from psych_runtime.ports import RunRow

NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
LEASE = dt.timedelta(seconds=15)
AT_ONCE = dt.datetime.min.replace(tzinfo=dt.UTC)  # how stores say "-infinity"


def _row(**fields: object) -> RunRow:
    row = RunRow(
        run_id="R1",
        tenant="default",
        agent="support",
        spec_version="sha256:x",
        status="running",
        waiting=None,
        parent_run_id=None,
        attempt=1,
        lease_owner="w",
        lease_expires_at=NOW + dt.timedelta(seconds=5),
        runnable_at=NOW + dt.timedelta(seconds=5),
        next_seq=4,
        inbox_last=0,
        created_at=NOW - dt.timedelta(minutes=1),
        updated_at=NOW - dt.timedelta(seconds=1),
        claims=1,
    )
    return dataclasses.replace(row, **fields)  # type: ignore[arg-type]


def _reason(row: RunRow) -> str | None:
    found = stuck(row, NOW, LEASE)
    return None if found is None else found.reason


def test_a_running_run_under_its_lease_is_not_stuck() -> None:
    assert _reason(_row()) is None


def test_a_running_run_whose_lease_expired_made_no_progress() -> None:
    expired = _row(lease_expires_at=NOW - dt.timedelta(seconds=1))
    found = stuck(expired, NOW, LEASE)
    assert found is not None
    assert found.reason == "no_progress"
    assert "attempt 1 of run R1 expired" in found.detail


def test_three_claims_since_the_last_suspension_are_too_many() -> None:
    assert _reason(_row(claims=2, attempt=7)) is None  # earlier attempts suspended: not stuck
    found = stuck(_row(claims=3, attempt=3), NOW, LEASE)
    assert found is not None
    assert found.reason == "attempts"
    assert "claimed 3 times" in found.detail
    assert _reason(_row(claims=3, status="queued", lease_expires_at=None)) == "attempts"


def test_a_queued_run_no_worker_takes_for_longer_than_a_lease() -> None:
    queued = _row(status="queued", lease_owner=None, lease_expires_at=None, runnable_at=AT_ONCE)
    assert _reason(dataclasses.replace(queued, updated_at=NOW - dt.timedelta(seconds=10))) is None
    late = dataclasses.replace(queued, updated_at=NOW - dt.timedelta(seconds=16))
    found = stuck(late, NOW, LEASE)
    assert found is not None
    assert found.reason == "no_progress"
    assert "queued and no worker has taken it for 16 s" in found.detail
    # Released for later (a worker could not serve it): counted from when it is due again.
    held = dataclasses.replace(late, runnable_at=NOW - dt.timedelta(seconds=5))
    assert _reason(held) is None


def test_a_run_waiting_for_a_person_is_waiting_not_stuck() -> None:
    waiting = _row(
        status="waiting",
        waiting="approval",
        lease_owner=None,
        lease_expires_at=None,
        runnable_at=None,
        updated_at=NOW - dt.timedelta(days=3),
    )
    assert _reason(waiting) is None
    woken = dataclasses.replace(waiting, runnable_at=AT_ONCE)  # since when, the store never says
    assert _reason(woken) is None


def test_a_timed_wait_is_stuck_once_due_for_longer_than_a_lease() -> None:
    timed = _row(status="waiting", waiting="external", lease_owner=None, lease_expires_at=None)
    assert _reason(dataclasses.replace(timed, runnable_at=NOW + dt.timedelta(hours=1))) is None
    assert _reason(dataclasses.replace(timed, runnable_at=NOW - dt.timedelta(seconds=5))) is None
    overdue = dataclasses.replace(timed, runnable_at=NOW - dt.timedelta(seconds=20))
    assert _reason(overdue) == "no_progress"


def test_an_ended_run_is_never_stuck() -> None:
    for status in ("completed", "failed", "cancelled"):
        ended = _row(status=status, claims=9, lease_expires_at=NOW - dt.timedelta(hours=1))
        assert _reason(ended) is None

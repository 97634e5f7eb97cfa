"""The recovery measure: a worker process is killed mid-run, and a fresh one resumes the run
once its lease expires, even when the queue admitted behind it is drained before then (the
fresh worker serves until the run resumes; one that drained the store and left would miss it).
It opens an SQLite store, so this module needs psych-store-sqlite (a flavour without it skips
the module, saying so). No time is compared with a goal here (timed tests flake)."""

from __future__ import annotations

from pathlib import Path

import psych_store_sqlite
from bench._recovery import recovery_behind_queue


async def test_a_killed_run_resumes_after_a_queue_drained_before_its_lease_expired(
    tmp_path: Path,
) -> None:
    assert psych_store_sqlite.SQLiteStore is not None  # what the worker processes open
    url = f"sqlite:///{tmp_path / 'recovery.sqlite'}"
    # Two queued runs of three calls are done in a fraction of the 2 s lease.
    recovery = await recovery_behind_queue(url, queue=2, calls=3, lease_s=2.0, concurrency=2)
    assert recovery.queue == 2
    assert recovery.ahead == 2  # admitted before the lease expired, they started first
    assert recovery.expiry_to_resume_s >= 0  # never before the lease expired
    assert recovery.kill_to_resume_s >= recovery.expiry_to_resume_s
    assert recovery.lease_s == 2.0

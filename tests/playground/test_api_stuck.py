"""Stuck runs, made as they happen: a server with no worker (runs wait to be claimed), and
claims taken through the public Store API by a "worker" that appends nothing and dies (the
lease expires; after three such claims, the attempts are too many)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from psych_store_sqlite import SQLiteStore
from tests.playground._processes import Playground, running

SHORT = dt.timedelta(milliseconds=200)


@pytest.fixture(scope="module")
def without_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Playground]:
    home = tmp_path_factory.mktemp("no-worker")
    env = {"PSYCH_STORE": f"sqlite:///{home / 'stuck.db'}", "PLAYGROUND_LEASE_SECONDS": "1"}
    with running(home, env, worker=False) as started:
        yield started


def _claim_and_die(database: Path, run_id: str, times: int) -> None:
    """Claim `run_id` `times` times, each under a short lease that expires unrenewed."""

    async def claims() -> None:
        store = SQLiteStore(database)
        try:
            for _ in range(times):
                claim = await store.claim("vanishing-worker", SHORT, run_id=run_id)
                assert claim is not None, f"run {run_id} could not be claimed"
                await asyncio.sleep(SHORT.total_seconds() + 0.05)
        finally:
            await store.close()

    asyncio.run(claims())


def _stuck(playground: Playground) -> dict[str, dict[str, str]]:
    page = playground.api.get("/api/runs", params={"stuck": "true"}).json()
    return {run["run_id"]: run["stuck"] for run in page["items"]}


def test_runs_no_worker_takes_or_keeps_are_stuck(without_worker: Playground) -> None:
    database = Path(without_worker.env["PSYCH_STORE"].removeprefix("sqlite:///"))
    queued, abandoned, crashing = (without_worker.run(f"hello {n}") for n in range(3))
    assert _stuck(without_worker) == {}  # just admitted: not stuck yet
    _claim_and_die(database, abandoned, 1)
    _claim_and_die(database, crashing, 3)
    time.sleep(1.1)  # longer than a lease (PLAYGROUND_LEASE_SECONDS=1)
    stuck = _stuck(without_worker)
    assert set(stuck) == {queued, abandoned, crashing}
    assert stuck[queued]["reason"] == "no_progress"
    assert "queued and no worker has taken it" in stuck[queued]["detail"]
    assert stuck[abandoned]["reason"] == "no_progress"
    assert f"the lease of attempt 1 of run {abandoned} expired" in stuck[abandoned]["detail"]
    assert stuck[crashing]["reason"] == "attempts"
    assert f"run {crashing} was claimed 3 times" in stuck[crashing]["detail"]
    detail = without_worker.detail(crashing)
    assert (detail["summary"]["attempt"], detail["status"]["status"]) == (3, "running")
    # Its timeline shows each attempt lost, and where.
    timeline = without_worker.api.get(f"/api/runs/{crashing}/timeline").json()
    attempts = [bar["outcome"] for bar in timeline["bars"] if bar["kind"] == "attempt"]
    assert attempts == ["lost", "lost", None]
    assert [mark["kind"] for mark in timeline["marks"]] == ["crash", "crash"]
    # A run that waits for nothing it can be stuck on is not listed.
    waiting = without_worker.api.get("/api/runs", params={"stuck": "true", "status": "waiting"})
    assert waiting.json()["items"] == []

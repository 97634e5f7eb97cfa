"""The scale-out measure's worker processes connect, wait for the word, then drain the store
together, and the host's CPU use over that window is measured. They open an SQLite store, so
this module needs psych-store-sqlite (a flavour without it skips the module, saying so)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psych_store_sqlite
from bench import durable_steps


async def test_worker_processes_start_together_and_drain_the_store(tmp_path: Path) -> None:
    assert psych_store_sqlite.SQLiteStore is not None  # what the worker processes open
    url = f"sqlite:///{tmp_path / 'procs.sqlite'}"
    scale = await durable_steps.process_runs_per_second(url, 2, 6, 2)
    assert scale.runs_per_s > 0
    # The two workers' CPU is counted (they ran Python for a while), and the host was busy
    # with at least what they used of its cores.
    assert scale.host.worker_cores > 0
    assert scale.host.busy is not None
    assert 0 < scale.host.busy <= 1
    assert scale.host.busy * scale.host.cores >= 0.5 * scale.host.worker_cores
    connection = sqlite3.connect(tmp_path / "procs.sqlite")
    try:
        statuses = connection.execute(
            "SELECT status, count(*) FROM psych_runs GROUP BY 1"
        ).fetchall()
    finally:
        connection.close()
    assert statuses == [("completed", 6)]

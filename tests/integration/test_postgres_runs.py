"""Worker processes on PostgreSQL: the crash test (kill -9, again and again), eight workers
sharing 500 runs, and the server dropping every connection in the middle of runs.

Each test has a schema (or, for the restart, a database) of its own on the server that
`scripts/dev-services.sh start` brings up (PSYCH_TEST_POSTGRES_DSN).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import random
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from psych_core import RunStatusName
from psych_runtime import RunQuery, Scope, dispatch
from psych_runtime.ports import Store
from tests._postgres import connect, drop_schema, new_schema, test_dsn
from tests.integration import crash_driver
from tests.integration._stores import open_store
from tests.integration.crash_driver import (
    REACHABLE,
    CrashOutcome,
    check_one_live_attempt,
    check_outcome,
    crash_run,
)
from tests.integration.crash_worker import SPEC

ROOT = Path(__file__).resolve().parents[2]
SCOPE = Scope(tenant="crash")
FINAL: tuple[RunStatusName, ...] = ("completed", "failed", "cancelled")


def store_url(schema: str, *, dsn: str | None = None, max_size: int = 4) -> str:
    return f"{dsn or test_dsn()}?schema={schema}&max_size={max_size}"


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    (await connect()).terminate()  # fails at once, saying how to start the server
    name = new_schema("it")
    try:
        yield name
    finally:
        await drop_schema(name)


# -- checks on the logs ------------------------------------------------------------------------


async def outcome_of(store: Store, run_ids: list[str], ledger: Path) -> CrashOutcome:
    scoped = store.scoped(SCOPE)
    outcome = CrashOutcome(run_ids=run_ids, logs={}, ledger=[])
    outcome.logs = {run_id: await scoped.read(run_id) for run_id in run_ids}
    for line in (await asyncio.to_thread(ledger.read_text)).splitlines():
        kind, key, _label, _attempt, pid = line.split()
        outcome.ledger.append((kind, key, pid))
    return outcome


async def count_ended(store: Store, run_ids: Sequence[str]) -> int:
    """How many of `run_ids` have ended: one listing per final status."""
    wanted = set(run_ids)
    ended = 0
    for status in FINAL:
        page = await store.list_runs(SCOPE.tenant, RunQuery(status=status, limit=10_000))
        ended += sum(row.run_id in wanted for row in page.items)
    return ended


async def holding_leases(store: Store, processes: Sequence[subprocess.Popen[bytes]]) -> list[int]:
    """The indexes of the `processes` whose worker holds a run's lease now (a worker's id is
    ``host:pid:suffix``)."""
    page = await store.list_runs(SCOPE.tenant, RunQuery(status="running", limit=10_000))
    owners = {row.lease_owner.split(":")[1] for row in page.items if row.lease_owner}
    return [i for i, process in enumerate(processes) if str(process.pid) in owners]


def start_worker(
    url: str, ledger: Path, *, lease_ttl: float, log: Path | None = None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRASH_LEASE_TTL": str(lease_ttl)}
    env.pop("PSYCH_FAULTS", None)
    module = "tests.integration.postgres_worker" if log else "tests.integration.crash_worker"
    with contextlib.ExitStack() as files:
        stderr = files.enter_context(log.open("ab")) if log else subprocess.DEVNULL
        return subprocess.Popen(
            [sys.executable, "-m", module, url, str(ledger)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


# -- the crash test ----------------------------------------------------------------------------


async def test_postgres_runs_survive_kill_9_with_nothing_lost_or_repeated(
    schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Store] = []

    def open_and_keep(url: str) -> Store:
        store = open_store(url)
        opened.append(store)
        return store

    monkeypatch.setattr(crash_driver, "open_store", open_and_keep)
    try:
        outcome = await crash_run(store_url(schema), tmp_path / "ledger.txt")
    finally:
        for store in opened:
            await store.close()
    assert outcome.kills >= 50
    assert len(outcome.run_ids) >= 200
    never = set(REACHABLE) - outcome.points_hit
    assert not never, f"never died at {never}"
    check_outcome(outcome)
    for run_id, log in outcome.logs.items():
        check_one_live_attempt(run_id, log)
    settled = sum(
        1 for log in outcome.logs.values() for r in log if r.body.type == "tool_call_settled"
    )
    kinds = [kind for kind, _, _ in outcome.ledger]
    assert settled > 0
    assert kinds.count("safe") > len(outcome.run_ids)


# -- eight workers, 500 runs -------------------------------------------------------------------


async def test_eight_workers_share_500_runs_and_no_run_has_two_live_attempts(
    schema: str, tmp_path: Path
) -> None:
    url = store_url(schema, max_size=3)
    ledger = tmp_path / "ledger.txt"
    await asyncio.to_thread(ledger.touch)
    store = open_store(url)
    processes: list[subprocess.Popen[bytes]] = []
    rng = random.Random(11)
    try:
        await store.migrate()
        scoped = store.scoped(SCOPE)
        run_ids = [await dispatch(scoped, SPEC, f"run {i}") for i in range(250)]
        processes = [start_worker(url, ledger, lease_ttl=1.0) for _ in range(8)]
        run_ids += [await dispatch(scoped, SPEC, f"run {i}") for i in range(250, 500)]
        started = time.monotonic()
        kills = 0
        while (ended := await count_ended(store, run_ids)) < len(run_ids):
            assert time.monotonic() - started < 100, f"only {ended} of 500 runs ended"
            if kills < 3 and ended >= 100 * (kills + 1):
                # kill -9 a worker in the middle of its runs; its leases expire and other
                # workers take the runs over. Only a worker that holds a lease right now: a
                # victim that happened to be idle would prove nothing.
                busy = await holding_leases(store, processes)
                if busy:
                    victim = rng.choice(busy)
                    processes[victim].send_signal(signal.SIGKILL)
                    processes[victim].wait()
                    processes[victim] = start_worker(url, ledger, lease_ttl=1.0)
                    kills += 1
            await asyncio.sleep(0.05)
        outcome = await outcome_of(store, run_ids, ledger)
    finally:
        await asyncio.to_thread(stop, processes)
        await store.close()
    assert kills == 3
    assert len(set(run_ids)) == 500
    check_outcome(outcome)  # every run completed, no unsafe effect twice
    attempts = collections.Counter(
        max(record.attempt for record in log) for log in outcome.logs.values()
    )
    for run_id, log in outcome.logs.items():
        check_one_live_attempt(run_id, log)
    assert sum(count for attempt, count in attempts.items() if attempt > 1) > 0, (
        "the killed workers' runs were taken over by other workers",
        attempts,
    )


# -- the server drops every connection -----------------------------------------------------------


def _with_database(dsn: str, database: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def test_workers_ride_through_the_server_dropping_every_connection(tmp_path: Path) -> None:
    """Two outages in the middle of 600 runs: every connection to the runs' database is
    terminated (pg_terminate_backend) while appends are in flight (held on a row lock), and
    the database refuses new connections for 2 s, as a restarting server does. Set
    PSYCH_TEST_POSTGRES_RESTART to a command (e.g. ``pg_ctlcluster 15 main restart``) to
    restart the whole server instead: that cuts every other user of the server too."""
    admin = await connect()
    database = f"psych_restart_{uuid.uuid4().hex[:12]}"
    await admin.execute(f"CREATE DATABASE {database}")
    runs_dsn = _with_database(test_dsn(), database)
    # Two outages 0.5 s apart can keep one operation from the database for about 10 s: one
    # begun in the first outage's refusals reconnects, then waits on the second's held row
    # lock (up to 5 s) until it is cut and refused again for 2 s, and `retry_for` counts all
    # of it. The store promises to keep trying for `retry_for`, so the workers get longer
    # than these outages take together, not the default 10 s they can just exceed.
    url = f"{runs_dsn}?schema=psych&max_size=4&retry_for=30"
    ledger, log = tmp_path / "ledger.txt", tmp_path / "workers.log"
    await asyncio.to_thread(ledger.touch)
    store = open_store(url)
    processes: list[subprocess.Popen[bytes]] = []

    async def outage() -> None:
        nonlocal admin
        # Hold every run row, so that the workers' next appends wait in flight on its lock;
        # cut once several do.
        locker = await asyncpg.connect(runs_dsn)
        await locker.execute("BEGIN; SELECT 1 FROM psych.runs FOR UPDATE")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            blocked = await admin.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 "
                "AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO psych.records%'",
                database,
            )
            if blocked >= 2:
                break
            await asyncio.sleep(0.01)
        command = os.environ.get("PSYCH_TEST_POSTGRES_RESTART")
        try:
            if command:
                await asyncio.to_thread(subprocess.run, shlex.split(command), check=True)
                admin.terminate()  # it went down with the server
                admin = await connect()
                return
            await admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
            try:
                await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = $1",
                    database,
                )
                await asyncio.sleep(2)
            finally:
                await admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        finally:
            locker.terminate()

    try:
        await store.migrate()
        scoped = store.scoped(SCOPE)
        run_ids = [await dispatch(scoped, SPEC, f"run {i}") for i in range(600)]
        processes = [start_worker(url, ledger, lease_ttl=10.0, log=log) for _ in range(2)]
        started = time.monotonic()
        outages: list[int] = []  # how many runs had ended when each began
        next_outage = float("inf")  # once the workers are well under way; then 0.5 s apart
        while (ended := await count_ended(store, run_ids)) < len(run_ids):
            assert time.monotonic() - started < 90, f"only {ended} of 600 runs ended"
            if not outages and ended >= 20:
                next_outage = time.monotonic()
            if len(outages) < 2 and time.monotonic() >= next_outage:
                outages.append(ended)
                await outage()
                next_outage = time.monotonic() + 0.5
            await asyncio.sleep(0.1)
        outcome = await outcome_of(store, run_ids, ledger)
        assert all(process.poll() is None for process in processes), "no worker died"
    finally:
        await asyncio.to_thread(stop, processes)
        await store.close()
        await admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        await admin.close()
    assert len(outages) == 2 and 20 <= outages[0] <= outages[1] < len(run_ids), (
        "both outages hit in the middle of the runs",
        outages,
    )
    check_outcome(outcome)  # every run completed; no unsafe effect ran twice
    for run_id, run_log in outcome.logs.items():
        check_one_live_attempt(run_id, run_log)
    messages = (await asyncio.to_thread(log.read_text)).splitlines()
    waited = sum("waits for the database" in line for line in messages)
    resent = sum("sending it again" in line and "the append of" in line for line in messages)
    assert waited > 0, "the workers waited for the database to come back"
    assert resent > 0, "appends whose connection broke in flight were sent again"
    unexpected = [
        line
        for line in messages
        if "psych_runtime" in line and ("died" in line or "unavailable" in line)
    ]
    assert not unexpected, unexpected[:5]

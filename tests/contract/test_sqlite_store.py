"""SQLiteStore passes the store contract suite, each test on a fresh file; then what is its own:
several processes on one file, migrations, the settings in force, sqlite errors translated."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest

from psych_core import (
    AttemptStarted,
    Batch,
    DuplicateSignal,
    LeaseLost,
    NewRun,
    Record,
    Resume,
    RunAdmitted,
    RunIndex,
    RunQuery,
    SchemaVersion,
    Scope,
    Store,
    StoreError,
    StoreUnavailable,
    ToolCallFinished,
)
from psych_runtime.testing.store_contract import StoreContract
from psych_store_sqlite import SCHEMA_VERSION, SQLiteStore
from psych_store_sqlite._lane import Lane
from psych_store_sqlite._schema import MIGRATIONS
from tests._spec_once import check_read_once_and_written_once

pytestmark = pytest.mark.contract

PROCESS = Path(__file__).with_name("_sqlite_process.py")
LEASE = dt.timedelta(seconds=60)


class TestSQLiteStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path

    async def create_store(self) -> SQLiteStore:
        store = SQLiteStore(self.folder / "psych.db")
        await store.migrate()
        return store

    async def close_store(self, store: Store) -> None:
        assert isinstance(store, SQLiteStore)
        await store.close()


# -- what is SQLite's own ------------------------------------------------------------------


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "psych.db") as store:
        await store.migrate()
        yield store


async def admit(store: Store, run_id: str, tenant: str = "t") -> None:
    first = Record(
        run_id=run_id,
        seq=0,
        attempt=0,
        at=dt.datetime.now(dt.UTC),
        body=RunAdmitted(
            agent="a", spec_version="sha256:s", input="hi", scope=Scope(tenant=tenant)
        ),
    )
    new = NewRun(run_id=run_id, tenant=tenant, agent="a", spec_version="sha256:s")
    assert await store.create_run(new, first) == (run_id, True)


def start(db: Path, go: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PROCESS), str(db), str(go), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_ready(processes: Sequence[subprocess.Popen[str]]) -> None:
    """Wait until every process has started and opened its store."""
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n", process.communicate(timeout=30)


def open_gate(go: Path, until: float = 0.0) -> None:
    """Let the waiting processes go at once; those that poll stop at `until` (Unix time)."""
    gate = go.with_suffix(".tmp")
    gate.write_text(str(until))
    gate.rename(go)


def finish(processes: Sequence[subprocess.Popen[str]]) -> list[set[str]]:
    """Wait for every process; each must exit 0. Returns the runs each one won."""
    won: list[set[str]] = []
    for process in processes:
        out, err = process.communicate(timeout=90)
        assert process.returncode == 0, err
        lines = [line.split() for line in out.splitlines()]
        assert all(line[0] == "won" for line in lines), out
        won.append({line[1] for line in lines})
    return won


async def race(processes: Sequence[subprocess.Popen[str]], go: Path) -> list[set[str]]:
    """Start the processes together and wait for them to end."""

    def run() -> list[set[str]]:
        wait_ready(processes)
        open_gate(go)
        return finish(processes)

    return await asyncio.to_thread(run)


async def assert_finished_once(store: SQLiteStore, run_ids: Sequence[str]) -> None:
    for run_id in run_ids:
        log = await store.read(run_id)
        assert [record.seq for record in log] == [0, 1, 2, 3], run_id
        assert isinstance(log[1].body, AttemptStarted) and log[1].attempt == 1
        row = await store.get_run("t", run_id)
        assert row is not None and (row.status, row.attempt, row.lease_owner) == (
            "completed",
            1,
            None,
        )


async def test_two_processes_share_the_runs_of_one_file(store: SQLiteStore, tmp_path: Path) -> None:
    run_ids = [f"run-{i:03}" for i in range(60)]
    for run_id in run_ids:
        await admit(store, run_id)
    go = tmp_path / "go"
    processes = [start(Path(store.path), go, "work", f"worker-{n}") for n in range(2)]
    first, second = await race(processes, go)
    assert first | second == set(run_ids)
    assert not first & second, "no run was claimed by both processes"
    await assert_finished_once(store, run_ids)


async def test_two_processes_race_for_each_run_and_exactly_one_wins(
    store: SQLiteStore, tmp_path: Path
) -> None:
    # Both processes poll; the runs become claimable one at a time, 20 ms apart, so the two
    # race for every one of them.
    run_ids = [f"run-{i:03}" for i in range(40)]
    for run_id in run_ids:
        await admit(store, run_id)
        assert await store.claim("setup", LEASE, run_id=run_id) is not None
    go = tmp_path / "go"
    processes = [start(Path(store.path), go, "poll", f"worker-{n}") for n in range(2)]
    await asyncio.to_thread(wait_ready, processes)
    base = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=0.3)
    for i, run_id in enumerate(run_ids):
        await store.release(run_id, 1, base + dt.timedelta(seconds=0.02 * i))
    open_gate(go, until=base.timestamp() + 0.02 * len(run_ids) + 1.0)
    first, second = await asyncio.to_thread(finish, processes)
    assert first | second == set(run_ids) and not first & second
    for run_id in run_ids:
        log = await store.read(run_id)
        assert [record.seq for record in log] == [0, 1, 2, 3, 4], run_id
        assert [record.attempt for record in log] == [0, 1, 2, 2, 2], "one winner, attempt 2"
        row = await store.get_run("t", run_id)
        assert row is not None and (row.status, row.attempt) == ("completed", 2)


async def test_migrations_run_at_once_from_several_processes(tmp_path: Path) -> None:
    db, go = tmp_path / "fresh.db", tmp_path / "go"
    processes = [start(db, go, "migrate") for _ in range(4)]
    await race(processes, go)
    with sqlite3.connect(db) as conn:
        versions = conn.execute("SELECT version FROM psych_schema_version").fetchall()
        tables = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    conn.close()
    assert versions == [(version,) for version in range(1, SCHEMA_VERSION + 1)]
    assert {
        "psych_runs",
        "psych_records",
        "psych_inbox",
        "psych_specs",
        "psych_schema_version",
    } <= tables
    async with SQLiteStore(db) as store:
        await store.migrate()  # again: nothing to do
        await admit(store, "run-1")
        assert len(await store.read("run-1")) == 1


async def test_processes_signalling_one_run_get_numbers_in_commit_order(
    store: SQLiteStore, tmp_path: Path
) -> None:
    await admit(store, "run-1")
    go = tmp_path / "go"
    names = [f"p{n}" for n in range(3)]
    processes = [start(Path(store.path), go, "signal", name, "run-1") for name in names]
    won = [dict(line.split("=") for line in lines) for lines in await race(processes, go)]
    shared = [f"shared-{i}" for i in range(20)]
    assert sorted(key for keys in won for key in keys if key.startswith("shared-")) == sorted(
        shared
    ), "each shared key got in exactly once"
    for name, keys in zip(names, won, strict=True):
        assert {f"{name}-{i}" for i in range(20)} <= keys.keys()
    numbers = {key: int(number) for keys in won for key, number in keys.items()}
    assert sorted(numbers.values()) == list(range(1, 81)), "numbered 1..80, no gap, no repeat"
    entries = await store.signals("run-1")
    assert [(entry.number, entry.key) for entry in entries] == sorted(
        (number, key) for key, number in numbers.items()
    )
    row = await store.get_run("t", "run-1")
    assert row is not None and row.inbox_last == 80


async def test_a_version_1_file_migrates_forward(tmp_path: Path) -> None:
    # A file as psych-store-sqlite 0.1.0 left it: schema version 1, a run that is running on
    # its third attempt and one that is waiting after two.
    db = tmp_path / "v1.db"
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(
            "CREATE TABLE psych_schema_version "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for statement in MIGRATIONS[0].statements:
            conn.execute(statement)
        conn.execute("INSERT INTO psych_schema_version VALUES (1, 'runs, records, specs', 'then')")
        for run_id, status, attempt, owner in (
            ("running", "running", 3, "worker-1"),
            ("waiting", "waiting", 2, None),
        ):
            conn.execute(
                "INSERT INTO psych_runs (run_id, tenant, agent, spec_version, status, attempt, "
                "lease_owner, next_seq, created_at, updated_at) "
                "VALUES (?, 't', 'a', 'sha256:s', ?, ?, ?, 1, 0, 0)",
                (run_id, status, attempt, owner),
            )
    async with SQLiteStore(db) as store:
        await store.migrate()
        running = await store.get_run("t", "running")
        waiting = await store.get_run("t", "waiting")
        assert running is not None and waiting is not None
        # No run gets more tries than version 1 gave it; a waiting run starts afresh.
        assert (running.claims, running.inbox_last) == (3, 0)
        assert (waiting.claims, waiting.inbox_last) == (0, 0)
        assert await store.signal("t", "waiting", Resume(), "wake") == 1
        claim = await store.claim("worker-2", LEASE)
        assert claim is not None and (claim.run_id, claim.attempt) == ("waiting", 3)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        versions = conn.execute("SELECT version FROM psych_schema_version").fetchall()
    assert versions == [(version,) for version in range(1, SCHEMA_VERSION + 1)]


async def test_migrate_again_keeps_the_data(store: SQLiteStore) -> None:
    await admit(store, "run-1")
    await store.migrate()
    assert len(await store.read("run-1")) == 1


async def test_a_schema_newer_than_the_package_is_refused(store: SQLiteStore) -> None:
    with sqlite3.connect(store.path) as conn:
        conn.execute(
            "INSERT INTO psych_schema_version VALUES (?, 'from the future', 'now')",
            (SCHEMA_VERSION + 1,),
        )
    conn.close()
    with pytest.raises(StoreError, match="upgrade psych-store-sqlite"):
        await store.migrate()


async def test_a_file_without_the_schema_says_to_migrate(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "empty.db") as store:
        with pytest.raises(StoreError, match=r"store\.migrate\(\)"):
            await store.get_run("t", "run-1")


# -- the schema version, read without changing anything -------------------------------------


def files(folder: Path) -> dict[str, int]:
    """The files in `folder`, and their sizes."""
    return {path.name: path.stat().st_size for path in folder.iterdir()}


def tables(db: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [name for (name,) in found.fetchall()]


async def test_asking_a_never_migrated_file_its_version_creates_nothing(tmp_path: Path) -> None:
    missing, empty, used = tmp_path / "missing.db", tmp_path / "empty.db", tmp_path / "used.db"
    empty.touch()
    async with SQLiteStore(used) as store:  # a store that was used, but never migrated
        with pytest.raises(StoreError, match=r"store\.migrate\(\)"):
            await store.get_run("t", "run-1")
    for db in (missing, empty, used):
        async with SQLiteStore(db) as store:
            found = await store.schema_version()
        assert found == SchemaVersion(applied=0, known=SCHEMA_VERSION), db.name
        assert found.state == "behind"
    assert files(tmp_path) == {"empty.db": 0, "used.db": used.stat().st_size}
    assert tables(used) == []


async def test_a_migrated_file_is_current_and_read_while_a_write_holds_the_lock(
    store: SQLiteStore,
) -> None:
    with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another process writing, or migrating
        async with asyncio.timeout(2):  # the read lane does not wait for it
            found = await store.schema_version()
        holder.execute("ROLLBACK")
    assert found == SchemaVersion(applied=SCHEMA_VERSION, known=SCHEMA_VERSION)
    assert found.state == "current"


async def test_a_file_a_newer_release_migrated_is_ahead(store: SQLiteStore) -> None:
    with contextlib.closing(sqlite3.connect(store.path)) as conn, conn:
        conn.execute(
            "INSERT INTO psych_schema_version VALUES (?, 'from the future', 'now')",
            (SCHEMA_VERSION + 1,),
        )
    found = await store.schema_version()
    assert found == SchemaVersion(applied=SCHEMA_VERSION + 1, known=SCHEMA_VERSION)
    assert found.state == "ahead"


async def test_the_settings_are_in_force(store: SQLiteStore) -> None:
    assert await store.pragmas() == {
        "journal_mode": "wal",
        "synchronous": 2,
        "busy_timeout": 5000,
        "foreign_keys": 1,
    }
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",), "kept in the file"
    conn.close()


async def test_data_outlives_the_store(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    async with SQLiteStore(db) as first:
        await first.migrate()
        await admit(first, "run-1")
        await first.put_spec("sha256:s", "{}")
    async with SQLiteStore(db) as second:
        claim = await second.claim("worker-1", LEASE)
        assert claim is not None and claim.run_id == "run-1"
        assert await second.get_spec("sha256:s") == "{}"


async def test_a_spec_version_is_read_once_and_written_once(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"

    async def forget() -> None:
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DELETE FROM psych_specs")

    async with SQLiteStore(db) as store:
        await store.migrate()
        await check_read_once_and_written_once(store, forget, lambda: SQLiteStore(db))


async def test_a_lock_held_past_the_busy_timeout_is_unavailable(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    async with SQLiteStore(db, busy_timeout=0.3) as store:
        await store.migrate()
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="busy timeout"):
            await admit(store, "run-1")
        waited = time.monotonic() - started
        ticker.cancel()
        assert waited >= 0.25, "the write waited for the lock"
        assert ticks >= 10, "the event loop kept running while the write waited"
        assert len(await store.read("run-1")) == 0, "reads do not wait for the writer"
        holder.execute("ROLLBACK")
        holder.close()
        await admit(store, "run-1")
        assert len(await store.read("run-1")) == 1


async def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "not.db"
    db.write_bytes(b"this is not a database, " * 200)
    async with SQLiteStore(db) as store:
        with pytest.raises(StoreError, match="not a database") as refused:
            await store.migrate()
        assert not isinstance(refused.value, StoreUnavailable)


async def test_a_folder_that_does_not_exist_is_unavailable(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "missing" / "psych.db") as store:
        with pytest.raises(StoreUnavailable):
            await store.migrate()


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "psych.db")
    await store.migrate()
    await store.close()
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.get_run("t", "run-1")


def test_in_memory_databases_are_refused() -> None:
    for path in (":memory:", ""):
        with pytest.raises(ValueError, match="MemoryStore"):
            SQLiteStore(path)


async def test_a_record_is_kept_as_json_text(store: SQLiteStore) -> None:
    await admit(store, "run-1")
    claim = await store.claim("worker-1", LEASE)
    assert claim is not None
    record = Record(
        run_id="run-1",
        seq=2,
        attempt=1,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id="2.0", result="ok ✓"),
    )
    await store.append("run-1", 1, Batch((record,), "b-2", RunIndex(status="running")))
    with sqlite3.connect(store.path) as conn:
        rows = conn.execute(
            "SELECT seq, attempt, batch_id, body FROM psych_records WHERE run_id = ? ORDER BY seq",
            ("run-1",),
        ).fetchall()
    conn.close()
    assert [(seq, attempt, batch) for seq, attempt, batch, _ in rows] == [
        (0, 0, None),
        (1, 1, None),
        (2, 1, "b-2"),
    ]
    assert rows[2][3] == record.model_dump_json()
    page = await store.list_runs("t", RunQuery())
    assert [row.next_seq for row in page.items] == [3]
    # An inbox entry likewise: its JSON, with its number and key beside it.
    await store.signal("t", "run-1", Resume(payload={"ok": "✓"}), "k")
    [entry] = await store.signals("run-1")
    with contextlib.closing(sqlite3.connect(store.path)) as conn:
        stored = conn.execute("SELECT run_id, number, key, body FROM psych_inbox").fetchall()
    assert stored == [("run-1", 1, "k", entry.model_dump_json())]


def _store_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name.startswith("psych-sqlite")}


async def _ended(threads: set[threading.Thread]) -> bool:
    def join_all() -> None:
        for thread in threads:
            thread.join(5)

    await asyncio.to_thread(join_all)
    return not any(thread.is_alive() for thread in threads)


async def test_close_ends_the_store_threads(tmp_path: Path) -> None:
    before = _store_threads()
    store = SQLiteStore(tmp_path / "psych.db")
    await store.migrate()
    await store.get_spec("sha256:s")
    mine = _store_threads() - before
    assert len(mine) == 2, "one thread writes, one reads"
    await store.close()
    assert await _ended(mine)


async def test_a_store_dropped_without_close_still_ends_its_threads(tmp_path: Path) -> None:
    before = _store_threads()
    store = SQLiteStore(tmp_path / "psych.db")
    await store.migrate()
    await store.get_spec("sha256:s")
    mine = _store_threads() - before
    del store
    gc.collect()
    assert await _ended(mine)


# -- group commit: writes queued together share one transaction, each in its own savepoint --


type _Job = tuple[Callable[..., object], tuple[object, ...]]


def _lane(db: Path) -> Lane:
    def opener() -> sqlite3.Connection:
        conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY)")
        return conn

    return Lane("psych-sqlite-test", opener, str(db), 5.0)


def _insert_and_count(conn: sqlite3.Connection, db: Path, n: int) -> int:
    """Insert row n; return how many rows another connection sees committed."""
    conn.execute("INSERT INTO t (n) VALUES (?)", (n,))
    with contextlib.closing(sqlite3.connect(db)) as other:
        return int(other.execute("SELECT COUNT(*) FROM t").fetchone()[0])


def _insert_and_refuse(conn: sqlite3.Connection, n: int) -> None:
    conn.execute("INSERT INTO t (n) VALUES (?)", (n,))
    raise ValueError(f"job {n} refuses")


def _insert_and_lose_the_transaction(conn: sqlite3.Connection, n: int) -> None:
    # What SQLite does on an I/O error or a full disk: it rolls the whole transaction back.
    conn.execute("INSERT INTO t (n) VALUES (?)", (n,))
    conn.execute("ROLLBACK")
    raise sqlite3.OperationalError("disk I/O error")


async def _queued_behind_a_blocked_job(lane: Lane, jobs: Sequence[_Job]) -> list[object]:
    """Hold the lane's thread until every job is queued, then let them all run."""
    release = threading.Event()
    blocker = lane.run(lambda conn: release.wait(10))
    futures = [lane.transact(work, *args) for work, args in jobs]
    release.set()
    await blocker
    return list(await asyncio.gather(*futures, return_exceptions=True))


async def test_writes_queued_together_share_one_commit(tmp_path: Path) -> None:
    db = tmp_path / "lane.db"
    lane = _lane(db)
    try:
        jobs = [(_insert_and_count, (db, n)) for n in range(5)]
        seen = await _queued_behind_a_blocked_job(lane, jobs)
        assert seen == [0] * 5, "none was committed before the others: one commit for all"
        assert await _queued_behind_a_blocked_job(lane, [(_insert_and_count, (db, 9))]) == [5]
    finally:
        await lane.close()


async def test_a_refused_write_in_a_group_is_undone_alone(tmp_path: Path) -> None:
    db = tmp_path / "lane.db"
    lane = _lane(db)
    try:
        jobs: list[_Job] = [
            (_insert_and_count, (db, 1)),
            (_insert_and_refuse, (2,)),
            (_insert_and_count, (db, 3)),
        ]
        first, refused, third = await _queued_behind_a_blocked_job(lane, jobs)
        assert (first, third) == (0, 0)
        assert isinstance(refused, ValueError)
        rows = await lane.run(lambda conn: conn.execute("SELECT n FROM t ORDER BY n").fetchall())
        assert rows == [(1,), (3,)]
    finally:
        await lane.close()


async def test_a_group_whose_transaction_is_lost_fails_whole(tmp_path: Path) -> None:
    db = tmp_path / "lane.db"
    lane = _lane(db)
    try:
        jobs: list[_Job] = [
            (_insert_and_count, (db, 1)),
            (_insert_and_lose_the_transaction, (2,)),
            (_insert_and_count, (db, 3)),
        ]
        outcomes = await _queued_behind_a_blocked_job(lane, jobs)
        assert all(isinstance(outcome, StoreError) for outcome in outcomes), outcomes
        assert all("disk I/O error" in str(outcome) for outcome in outcomes)
        assert await lane.run(lambda conn: conn.execute("SELECT n FROM t").fetchall()) == []
    finally:
        await lane.close()


async def test_many_writes_at_once_all_land(store: SQLiteStore) -> None:
    run_ids = [f"run-{i:02}" for i in range(20)]
    claims = []
    for run_id in run_ids:
        await admit(store, run_id)
        claim = await store.claim("worker-1", LEASE, run_id=run_id)
        assert claim is not None
        claims.append(claim)

    def finished(run_id: str, seq: int, attempt: int) -> Batch:
        body = ToolCallFinished(call_id="2.0", result=run_id)
        record = Record(
            run_id=run_id, seq=seq, attempt=attempt, at=dt.datetime.now(dt.UTC), body=body
        )
        return Batch((record,), f"b-{run_id}", RunIndex(status="running"))

    stale = finished(run_ids[0], 2, 7)
    outcomes = await asyncio.gather(
        *(store.append(c.run_id, c.attempt, finished(c.run_id, 2, c.attempt)) for c in claims),
        *(store.signal("t", run_id, Resume(), "k") for run_id in run_ids),
        store.append(run_ids[0], 7, stale),
        store.signal("t", run_ids[1], Resume(), "k"),
        return_exceptions=True,
    )
    *landed, refused_append, refused_signal = outcomes
    assert isinstance(refused_append, LeaseLost)
    assert isinstance(refused_signal, DuplicateSignal)
    assert not any(isinstance(outcome, BaseException) for outcome in landed), landed
    for run_id in run_ids:
        assert [record.seq for record in await store.read(run_id)] == [0, 1, 2]
        assert [entry.number for entry in await store.signals(run_id)] == [1]

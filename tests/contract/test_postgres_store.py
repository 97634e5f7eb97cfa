"""PostgresStore passes the store contract suite on a real PostgreSQL server, each test in a
fresh schema; then what is its own: migrations from several processes, LISTEN/NOTIFY wake-ups,
one round trip per append, connection loss, settings and errors."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from psych_adapter_kit import READ_PIECE
from psych_core import (
    Batch,
    ChildEnded,
    NewRun,
    Notify,
    Record,
    Resume,
    RunAdmitted,
    RunIndex,
    SchemaVersion,
    Scope,
    Store,
    StoreError,
    StoreUnavailable,
    ToolCallFinished,
)
from psych_runtime.testing.store_contract import StoreContract
from psych_store_postgres import SCHEMA_VERSION, PostgresStore
from psych_store_postgres._schema import advisory_key
from tests._pg_proxy import proxy_to
from tests._postgres import (
    connect,
    drop_schema,
    fresh_schema,
    new_schema,
    store_behind_proxy,
    test_dsn,
)
from tests._spec_once import check_read_once_and_written_once

pytestmark = pytest.mark.contract


class TestPostgresStore(StoreContract):
    async def create_store(self) -> PostgresStore:
        (await connect()).terminate()  # fails the test at once, saying how to start the server
        store = PostgresStore(test_dsn(), schema=new_schema(), max_size=4)
        await store.migrate()
        return store

    async def close_store(self, store: Store) -> None:
        assert isinstance(store, PostgresStore)
        await store.close()
        await drop_schema(store.schema)


# -- what is PostgreSQL's own ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
LEASE = dt.timedelta(seconds=60)
RUNNING = RunIndex(status="running")


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


@pytest.fixture
async def store(schema: str) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(test_dsn(), schema=schema, max_size=4) as store:
        await store.migrate()
        yield store


async def admit(store: Store, run_id: str | None = None, tenant: str = "t") -> str:
    run_id = run_id or f"run-{uuid.uuid4().hex}"
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
    return run_id


def step(run_id: str, seq: int, attempt: int, text: str = "ok") -> Record:
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id=f"{seq}.0", result=text),
    )


async def claimed(store: Store) -> tuple[str, int]:
    """A fresh run, claimed: (run id, attempt)."""
    run_id = await admit(store)
    claim = await store.claim("worker-1", LEASE, run_id=run_id)
    assert claim is not None
    return run_id, claim.attempt


# -- migrations ------------------------------------------------------------------------------


async def test_migrations_run_at_once_from_several_processes(schema: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    command = [sys.executable, "-m", "tests.contract._postgres_process", test_dsn(), schema]

    def race() -> list[str]:
        processes = [
            subprocess.Popen(
                [*command, str(go)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n", process.communicate(timeout=30)
        go.write_text("go")
        outputs = []
        for process in processes:
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            outputs.append(out)
        return outputs

    assert await asyncio.to_thread(race) == ["migrated\n"] * 4
    conn = await connect()
    try:
        versions = await conn.fetch(f"SELECT version FROM {schema}.schema_version")
        tables = {
            row[0]
            for row in await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema
            )
        }
    finally:
        await conn.close()
    assert [row[0] for row in versions] == [SCHEMA_VERSION]
    assert tables == {"runs", "records", "inbox", "specs", "schema_version"}
    async with PostgresStore(test_dsn(), schema=schema) as store:
        await store.migrate()  # again: nothing to do
        run_id = await admit(store)
        assert len(await store.read(run_id)) == 1


async def test_migrate_again_keeps_the_data(store: PostgresStore) -> None:
    run_id = await admit(store)
    await store.migrate()
    assert len(await store.read(run_id)) == 1


async def test_a_schema_newer_than_the_package_is_refused(store: PostgresStore) -> None:
    conn = await connect()
    try:
        await conn.execute(
            f"INSERT INTO {store.schema}.schema_version (version, name) VALUES ($1, 'future')",
            SCHEMA_VERSION + 1,
        )
    finally:
        await conn.close()
    with pytest.raises(StoreError, match="upgrade psych-store-postgres"):
        await store.migrate()


async def test_a_schema_without_the_tables_says_to_migrate(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema) as store:
        with pytest.raises(StoreError, match=r"store\.migrate\(\)") as refused:
            await store.get_run("t", "run-1")
        assert not isinstance(refused.value, StoreUnavailable)


# -- the schema version, read without changing anything -------------------------------------


async def _schema_and_tables(schema: str) -> tuple[bool, list[str]]:
    """Whether `schema` exists, and the tables in it."""
    conn = await connect()
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema)
        rows = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 "
            "ORDER BY table_name",
            schema,
        )
        return bool(exists), [row["table_name"] for row in rows]
    finally:
        await conn.close()


async def test_asking_a_never_migrated_schema_its_version_creates_nothing(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema) as store:
        found = await store.schema_version()
        assert found == SchemaVersion(applied=0, known=SCHEMA_VERSION)
        assert found.state == "behind"
        assert await _schema_and_tables(schema) == (False, [])

        conn = await connect()  # a schema an operator made beforehand, still empty
        try:
            await conn.execute(f"CREATE SCHEMA {schema}")
        finally:
            await conn.close()
        assert await store.schema_version() == SchemaVersion(applied=0, known=SCHEMA_VERSION)
        assert await _schema_and_tables(schema) == (True, [])


async def test_a_migrated_schema_is_current_and_read_while_a_migration_holds_the_lock(
    store: PostgresStore,
) -> None:
    holder = await connect()
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", advisory_key(store.schema))
        async with asyncio.timeout(5):  # the migration lock is not taken
            found = await store.schema_version()
    finally:
        await holder.close()
    assert found == SchemaVersion(applied=SCHEMA_VERSION, known=SCHEMA_VERSION)
    assert found.state == "current"


async def test_a_schema_a_newer_release_migrated_is_ahead(store: PostgresStore) -> None:
    conn = await connect()
    try:
        await conn.execute(
            f"INSERT INTO {store.schema}.schema_version (version, name) VALUES ($1, 'future')",
            SCHEMA_VERSION + 1,
        )
    finally:
        await conn.close()
    found = await store.schema_version()
    assert found == SchemaVersion(applied=SCHEMA_VERSION + 1, known=SCHEMA_VERSION)
    assert found.state == "ahead"


# -- one round trip per append, and what a claim costs ------------------------------------


async def test_an_append_is_one_round_trip(schema: str) -> None:
    async with store_behind_proxy(schema, min_size=1, max_size=1) as (proxy, store):
        run_id, attempt = await claimed(store)
        seq = 2
        # Warm: each statement is prepared once per connection (one-record batches have a
        # statement of their own).
        for size in (1, 2, 1, 2):
            records = tuple(step(run_id, seq + i, attempt) for i in range(size))
            await store.append(run_id, attempt, Batch(records, f"b{seq}", RUNNING))
            seq += size
        proxy.sent.clear()
        for index in range(20):
            size = 1 + index % 3
            records = tuple(step(run_id, seq + i, attempt) for i in range(size))
            await store.append(run_id, attempt, Batch(records, f"b{seq}", RUNNING))
            seq += size
        # One Bind/Execute/Sync each: no BEGIN or COMMIT, no prepare, no reset on release.
        assert (proxy.sent["S"], proxy.sent["Q"], proxy.sent["H"]) == (20, 0, 0)
        assert proxy.round_trips == 20
        assert len(await store.read(run_id)) == seq

        # A claim of any run: one statement, which finds a run or finds none.
        await admit(store)
        assert await store.claim("warm", LEASE) is not None
        await admit(store)
        proxy.sent.clear()
        assert await store.claim("worker-2", LEASE) is not None
        assert (proxy.sent["S"], proxy.sent["Q"], proxy.round_trips) == (1, 0, 1), proxy.sent
        proxy.sent.clear()
        assert await store.claim("worker-2", LEASE) is None
        assert (proxy.sent["S"], proxy.sent["Q"], proxy.round_trips) == (1, 0, 1), proxy.sent
        # The claim of one given run: BEGIN, pick, start, COMMIT.
        given = await admit(store)
        proxy.sent.clear()
        assert await store.claim("worker-2", LEASE, run_id=given) is not None
        assert proxy.round_trips == 4, proxy.sent


# -- a lost answer, a cut connection -----------------------------------------------------------


async def test_an_append_whose_answer_was_lost_is_sent_again_and_written_once(
    schema: str,
) -> None:
    async with store_behind_proxy(schema, max_size=2) as (proxy, store):
        parent = await admit(store)
        parent_claim = await store.claim("w", LEASE, run_id=parent)
        assert parent_claim is not None
        await store.append(
            parent,
            1,
            Batch((step(parent, 2, 1),), "p2", RunIndex(status="waiting", waiting="children")),
        )
        run_id, attempt = await claimed(store)
        notice = Notify(
            run_id=parent,
            key=f"child:{run_id}",
            signal=ChildEnded(child_run_id=run_id, call_id="2.0", status="completed"),
        )
        batch = Batch(
            (step(run_id, 2, attempt), step(run_id, 3, attempt)),
            "b2",
            RunIndex(status="completed"),
            notify=(notice,),
        )
        proxy.cut_next_answer()
        result = await store.append(run_id, attempt, batch)
        assert proxy.answer_cut == 1, "the answer to the append was lost"
        assert result.inbox_last == 0
        log = await store.read(run_id)
        assert [record.seq for record in log] == [0, 1, 2, 3]
        assert log[2:] == list(batch.records)
        assert [entry.key for entry in await store.signals(parent)] == [notice.key]
        row = await store.get_run("t", run_id)
        assert row is not None and (row.status, row.next_seq) == ("completed", 4)


async def test_a_claim_cut_before_its_commit_is_taken_again(schema: str) -> None:
    async with store_behind_proxy(schema, max_size=2) as (proxy, store):
        run_id = await admit(store)
        proxy.cut_next_answer()  # the pick's answer: the transaction is rolled back
        claim = await store.claim("worker-1", LEASE, run_id=run_id)
        assert proxy.answer_cut == 1
        assert claim is not None and (claim.run_id, claim.attempt) == (run_id, 1)
        log = await store.read(run_id)
        assert [(record.seq, record.attempt) for record in log] == [(0, 0), (1, 1)]


async def test_calls_ride_through_every_connection_being_cut(schema: str) -> None:
    async with store_behind_proxy(schema, max_size=3) as (proxy, store):
        run_id, attempt = await claimed(store)
        for seq in range(2, 12):
            proxy.cut_all()
            await store.append(
                run_id, attempt, Batch((step(run_id, seq, attempt),), f"b{seq}", RUNNING)
            )
            await store.renew(run_id, attempt, LEASE)
        assert [record.seq for record in await store.read(run_id)] == list(range(12))


async def test_a_server_that_does_not_answer_is_unavailable(schema: str) -> None:
    async with proxy_to(test_dsn()) as proxy:
        dsn = proxy.dsn
    # The proxy is gone: its port refuses connections.
    async with PostgresStore(dsn, schema=schema, retry_for=0.5) as store:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"127\.0\.0\.1:\d+/psych_test") as failed:
            await store.get_run("t", "run-1")
        assert 0.4 <= time.monotonic() - started < 5
        assert "check that the server is up" in str(failed.value)
        await store.wait(None, -1, timeout=0.2)  # waiting never raises: it polls


# -- LISTEN/NOTIFY -----------------------------------------------------------------------------


async def test_an_idle_worker_is_woken_within_milliseconds(store: PostgresStore) -> None:
    async with PostgresStore(test_dsn(), schema=store.schema) as handler:
        delays = []
        for _ in range(10):
            waiting = asyncio.create_task(store.wait(None, -1, timeout=30))
            await asyncio.sleep(0.1)
            assert not waiting.done(), "no work yet"
            await admit(handler)
            admitted = time.monotonic()
            await asyncio.wait_for(waiting, timeout=5)
            delays.append(time.monotonic() - admitted)
            claim = await store.claim("worker-1", LEASE)
            assert claim is not None
    delays.sort()
    assert delays[len(delays) // 2] < 0.05, delays
    assert delays[-1] < 0.5, delays


async def test_a_live_reader_is_woken_by_the_append(store: PostgresStore) -> None:
    run_id, attempt = await claimed(store)
    async with PostgresStore(test_dsn(), schema=store.schema) as worker:
        delays = []
        for seq in range(2, 7):
            waiting = asyncio.create_task(store.wait(run_id, seq - 1, timeout=30))
            await asyncio.sleep(0.1)
            assert not waiting.done()
            await worker.append(
                run_id, attempt, Batch((step(run_id, seq, attempt),), f"b{seq}", RUNNING)
            )
            appended = time.monotonic()
            await asyncio.wait_for(waiting, timeout=5)
            delays.append(time.monotonic() - appended)
    delays.sort()
    assert delays[len(delays) // 2] < 0.05, delays


async def test_notifications_only_when_work_appears_or_a_reader_watches(
    store: PostgresStore,
) -> None:
    heard: list[tuple[str, str]] = []
    conn = await connect()
    try:
        for channel in ("work", "records"):
            await conn.add_listener(
                f"{store.schema}.{channel}",
                lambda _c, _pid, channel, payload: heard.append((channel.split(".")[1], payload)),
            )

        async def settle() -> list[tuple[str, str]]:
            await asyncio.sleep(0.2)
            got = list(heard)
            heard.clear()
            return got

        run_id = await admit(store)
        assert await settle() == [("work", "")], "admission"
        claim = await store.claim("w", LEASE)
        assert claim is not None
        for seq in range(2, 6):
            await store.append(run_id, 1, Batch((step(run_id, seq, 1),), f"b{seq}", RUNNING))
        await store.renew(run_id, 1, LEASE)
        assert await settle() == [], "appends, claims and renewals of an unwatched run are silent"
        await store.wait(run_id, 0, timeout=0.01)  # a reader watches the run from now on
        await store.append(run_id, 1, Batch((step(run_id, 6, 1),), "b6", RUNNING))
        assert await settle() == [("records", run_id)]
        waiting = RunIndex(status="waiting", waiting="approval")
        await store.append(run_id, 1, Batch((step(run_id, 7, 1),), "b7", waiting))
        assert await settle() == [("records", run_id)], "suspending is no new work"
        await store.signal("t", run_id, Resume(), "r1")
        assert await settle() == [("work", "")], "a signal woke the run"
        again = await store.claim("w", LEASE)
        assert again is not None
        await store.release(run_id, again.attempt)
        assert ("work", "") in await settle(), "released: claimable again"
    finally:
        await conn.close()


async def test_waiters_are_woken_after_the_listener_reconnects(schema: str) -> None:
    name = f"psych-test-{uuid.uuid4().hex[:8]}"
    async with (
        PostgresStore(test_dsn(), schema=schema, application_name=name) as store,
        PostgresStore(test_dsn(), schema=schema) as handler,
    ):
        await store.migrate()
        await store.wait(None, -1, timeout=0.01)  # the listener is up
        conn = await connect()
        try:
            killed = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = $1",
                f"{name} listen",
            )
        finally:
            await conn.close()
        assert killed == 1
        await asyncio.sleep(0.5)  # it reconnects with backoff from 50 ms
        waiting = asyncio.create_task(store.wait(None, -1, timeout=30))
        await asyncio.sleep(0.1)
        await admit(handler)
        admitted = time.monotonic()
        await asyncio.wait_for(waiting, timeout=5)
        assert time.monotonic() - admitted < 0.5


async def test_a_wait_for_work_returns_when_a_lease_expires(store: PostgresStore) -> None:
    run_id = await admit(store)
    assert await store.claim("w", dt.timedelta(seconds=0.5), run_id=run_id) is not None
    started = time.monotonic()
    await store.wait(None, -1, timeout=30)  # no notification: the expiry is known in advance
    assert 0.3 <= time.monotonic() - started < 3
    again = await store.claim("w2", LEASE)
    assert again is not None and again.attempt == 2


# -- storage and settings ----------------------------------------------------------------------


async def test_a_record_is_kept_as_its_json_bytes(store: PostgresStore) -> None:
    run_id, attempt = await claimed(store)
    record = step(run_id, 2, attempt, "ok ✓")
    await store.append(run_id, attempt, Batch((record, step(run_id, 3, attempt)), "b-2", RUNNING))
    conn = await connect()
    try:
        rows = await conn.fetch(
            f"SELECT seq, attempt, batch_id, body, convert_from(body, 'UTF8')::jsonb AS doc "
            f"FROM {store.schema}.records WHERE run_id = $1 ORDER BY seq",
            run_id,
        )
    finally:
        await conn.close()
    assert [(row["seq"], row["attempt"], row["batch_id"]) for row in rows] == [
        (0, 0, None),
        (1, 1, None),
        (2, 1, "b-2"),
        (3, 1, None),
    ]
    assert rows[2]["body"] == record.model_dump_json().encode()


async def test_a_spec_version_is_read_once_and_written_once(store: PostgresStore) -> None:
    async def forget() -> None:
        conn = await connect()
        try:
            await conn.execute(f"DELETE FROM {store.schema}.specs")
        finally:
            await conn.close()

    def fresh() -> PostgresStore:
        return PostgresStore(test_dsn(), schema=store.schema)

    await check_read_once_and_written_once(store, forget, fresh)


async def test_times_are_the_databases(store: PostgresStore) -> None:
    run_id = await admit(store)
    conn = await connect()
    try:
        before = await conn.fetchval("SELECT statement_timestamp()")
        claim = await store.claim("w", LEASE, run_id=run_id)
        after = await conn.fetchval("SELECT statement_timestamp()")
    finally:
        await conn.close()
    assert claim is not None
    assert before <= claim.record.at <= after
    assert claim.lease_expires_at == claim.record.at + LEASE


async def test_bad_arguments_are_refused_before_any_io() -> None:
    for schema in ("Psych", "1psych", "psych; drop table x", "a" * 49, ""):
        with pytest.raises(ValueError, match="schema"):
            PostgresStore(test_dsn(), schema=schema)
    with pytest.raises(ValueError, match="min_size"):
        PostgresStore(test_dsn(), min_size=5, max_size=2)
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none")
    naive = dt.datetime(2030, 1, 1)
    with pytest.raises(ValueError, match="timezone"):
        await store.release("run-1", 1, naive)
    with pytest.raises(ValueError, match="timezone"):
        await store.due(naive)
    with pytest.raises(ValueError, match="ttl"):
        await store.claim("w", dt.timedelta(0))
    await store.close()


async def test_a_closed_store_refuses_calls(schema: str) -> None:
    store = PostgresStore(test_dsn(), schema=schema)
    await store.migrate()
    await store.close()
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.get_run("t", "run-1")


async def test_connections_carry_the_application_name(store: PostgresStore) -> None:
    await store.get_run("t", "run-1")
    await store.wait(None, -1, timeout=0.01)
    conn = await connect()
    try:
        names = {
            row[0]
            for row in await conn.fetch(
                "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()"
            )
        }
    finally:
        await conn.close()
    assert {"psych-store", "psych-store listen"} <= names


async def test_connections_read_replies_in_pieces(store: PostgresStore) -> None:
    # asyncio reads 256 KiB a recv, which glibc maps and unmaps for every short reply; the
    # store's connections read at most READ_PIECE (below the mmap threshold).
    async def read_size(conn: Any, _again: bool) -> object:
        return getattr(conn._con._transport, "max_size", None)

    assert await store._connections.run("read size", read_size, resend=True) == READ_PIECE
    listener = await store._connections.connect()
    try:
        assert getattr(getattr(listener, "_transport", None), "max_size", None) == READ_PIECE
    finally:
        await listener.close()
    # A reply over many pieces arrives whole: a record of four pieces, read back.
    run_id, attempt = await claimed(store)
    big = step(run_id, 2, attempt, text="x" * (4 * READ_PIECE))
    await store.append(run_id, attempt, Batch((big,), "big", RUNNING))
    assert await store.read(run_id, after_seq=1) == [big]


# -- permissions: the README's grants are enough ------------------------------------------------


def readme_grants() -> str:
    """The ```sql block of the package README's "Permissions" paragraph."""
    text = (ROOT / "packages" / "psych-store-postgres" / "README.md").read_text()
    after = text.split("**Permissions.**", 1)[1]
    return after.split("```sql\n", 1)[1].split("```", 1)[0]


async def test_the_documented_grants_are_enough_for_workers(store: PostgresStore) -> None:
    role = f"psych_worker_{uuid.uuid4().hex[:8]}"
    grants = (
        readme_grants()
        .replace("psych_worker", role)
        .replace("SCHEMA psych ", f"SCHEMA {store.schema} ")
        .replace("'change-me'", "'worker-password'")
    )
    assert f"GRANT USAGE ON SCHEMA {store.schema} TO {role}" in grants
    admin = await connect()
    try:
        await admin.execute(grants)
        parts = urlsplit(test_dsn())
        dsn = urlunsplit(
            parts._replace(netloc=f"{role}:worker-password@{parts.hostname}:{parts.port or 5432}")
        )
        async with PostgresStore(dsn, schema=store.schema) as worker:
            await worker.migrate()  # at the latest version: only read
            run_id = await admit(worker)
            claim = await worker.claim("w", LEASE)
            assert claim is not None and claim.run_id == run_id
            await worker.wait(run_id, 1, timeout=0.01)  # marks the run watched
            await worker.append(run_id, 1, Batch((step(run_id, 2, 1),), "b2", RUNNING))
            await worker.renew(run_id, 1, LEASE)
            await worker.signal("t", run_id, Resume(), "k")
            await worker.put_spec("sha256:s", "{}")
            assert await worker.get_spec("sha256:s") == "{}"
            await worker.release(run_id, 1)
            await worker.wait(None, -1, timeout=0.01)
            assert [r.seq for r in await worker.read(run_id)] == [0, 1, 2]
            assert await worker.delete_run("t", run_id)
        with pytest.raises(StoreError, match="privileges"):
            async with PostgresStore(dsn, schema=new_schema()) as fresh:
                await fresh.migrate()  # a new schema needs CREATE on the database
    finally:
        await admin.execute(
            f"REVOKE ALL ON ALL TABLES IN SCHEMA {store.schema} FROM {role}; "
            f"REVOKE ALL ON SCHEMA {store.schema} FROM {role}; DROP ROLE {role}"
        )
        await admin.close()


async def test_appends_update_the_run_row_in_place(schema: str) -> None:
    # No index covers a column an append changes, so each append's update of the run row is
    # a HOT update: no new index entries, no bloat.
    async with PostgresStore(test_dsn(), schema=schema, min_size=1, max_size=1) as store:
        await store.migrate()
        run_id, attempt = await claimed(store)
        for seq in range(2, 202):
            await store.append(
                run_id, attempt, Batch((step(run_id, seq, attempt),), f"b{seq}", RUNNING)
            )
        conn = await connect()
        try:
            deadline = time.monotonic() + 10
            while True:
                # A backend reports its counts at most once a second, at a transaction's end.
                await asyncio.sleep(1.1)
                await store.get_run("t", run_id)
                row = await conn.fetchrow(
                    "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                    "WHERE schemaname = $1 AND relname = 'runs'",
                    schema,
                )
                assert row is not None
                if row["n_tup_upd"] >= 201 or time.monotonic() > deadline:
                    break
        finally:
            await conn.close()
    assert row["n_tup_upd"] == 201, "the claim and 200 appends"
    assert row["n_tup_hot_upd"] >= 200, dict(row)


async def test_the_listener_can_take_its_own_address(store: PostgresStore) -> None:
    # Behind a pooler without sessions, LISTEN goes to a direct address (`listen_dsn`).
    async with (
        proxy_to(test_dsn()) as proxy,
        PostgresStore(test_dsn(), schema=store.schema, listen_dsn=proxy.dsn) as other,
    ):
        await other.wait(None, -1, timeout=0.01)
        listened = sum(proxy.sent.values())
        assert listened > 0, "the listener connected through the listen address"
        waiting = asyncio.create_task(other.wait(None, -1, timeout=30))
        await asyncio.sleep(0.1)
        await admit(store)
        await asyncio.wait_for(waiting, timeout=5)
        await other.get_run("t", "run-1")
        assert sum(proxy.sent.values()) == listened, "the pool did not"

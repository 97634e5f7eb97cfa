"""MySQLStore passes the store contract suite, each test in a fresh database of the server
PSYCH_TEST_MYSQL_DSN names; then what is its own: migrations from several processes under
GET_LOCK, round trips per call, answers lost on the wire (the writes' or the COMMIT's), a
transaction its client abandoned, deadlocks and lock waits retried, the settings in force, and
server errors translated. (`test_mysql_atomicity.py` kills clients mid-append and mid-claim.)"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import sys
import time
import urllib.parse
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from psych_adapter_kit import READ_PIECE
from psych_core import (
    Batch,
    NewRun,
    Notify,
    Record,
    RunAdmitted,
    RunIndex,
    SchemaVersion,
    Scope,
    Store,
    StoreError,
    StoreLimits,
    StoreUnavailable,
    ToolCallFinished,
    UserInput,
)
from psych_runtime.testing.store_contract import StoreContract
from psych_store_mysql import DEFAULT_LIMITS, SCHEMA_VERSION, MySQLStore, _append
from psych_store_mysql._schema import lock_name
from tests._eventually import eventually
from tests._mysql_databases import (
    admin,
    base_database,
    create_database,
    drop_database,
    execute,
    url_for,
)
from tests._spec_once import check_read_once_and_written_once
from tests.contract._mysql_proxy import Proxy

pytestmark = pytest.mark.contract

PROCESS = Path(__file__).with_name("_mysql_process.py")
LEASE = dt.timedelta(seconds=60)
TENANT = "t"


class TestMySQLStore(StoreContract):
    async def create_store(self) -> MySQLStore:
        store = MySQLStore(url_for(await create_database()))
        await store.migrate()
        return store

    async def close_store(self, store: Store) -> None:
        assert isinstance(store, MySQLStore)
        await store.close()
        await drop_database(store.database)


# -- what is MySQL's own -------------------------------------------------------------------


@pytest.fixture
async def database() -> AsyncIterator[str]:
    name = await create_database()
    try:
        yield name
    finally:
        await drop_database(name)


@pytest.fixture
async def store(database: str) -> AsyncIterator[MySQLStore]:
    async with MySQLStore(url_for(database)) as store:
        await store.migrate()
        yield store


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    parts = urllib.parse.urlsplit(url_for("x"))
    proxy = Proxy(parts.hostname or "127.0.0.1", parts.port or 3306)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


def via(proxy: Proxy, database: str) -> str:
    """The URL of `database` through the proxy."""
    parts = urllib.parse.urlsplit(url_for(database))
    netloc = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{proxy.port}"))


async def admit(store: Store, run_id: str, tenant: str = TENANT) -> None:
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


async def test_a_spec_version_is_read_once_and_written_once(
    store: MySQLStore, database: str
) -> None:
    async def forget() -> None:
        await execute(f"DELETE FROM `{database}`.psych_specs")

    await check_read_once_and_written_once(store, forget, lambda: MySQLStore(url_for(database)))


def record(run_id: str, seq: int, attempt: int, result: str = "ok") -> Record:
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id=f"{seq}.0", result=result),
    )


def one(run_id: str, seq: int, attempt: int, batch_id: str, **index: object) -> Batch:
    status = index.pop("status", "running")
    return Batch((record(run_id, seq, attempt),), batch_id, RunIndex(status=status))  # type: ignore[arg-type]


async def test_connections_read_replies_in_pieces(store: MySQLStore) -> None:
    # asyncio reads 256 KiB a recv, which glibc maps and unmaps for every short reply; the
    # store's connections read at most READ_PIECE (below the mmap threshold).
    async def read_size(connection: Any, _again: bool) -> object:
        return getattr(connection._raw._writer.transport, "max_size", None)

    assert await store._pool.run(read_size, what="read size", resend=True) == READ_PIECE
    # A reply over many pieces arrives whole: a record of four pieces, read back.
    await admit(store, "run-1")
    assert await store.claim("worker-1", LEASE) is not None
    big = record("run-1", 2, 1, result="x" * (4 * READ_PIECE))
    await store.append("run-1", 1, Batch((big,), "big", RunIndex(status="running")))
    assert await store.read("run-1", after_seq=1) == [big]


async def rows(database: str, sql: str) -> list[tuple[object, ...]]:
    return await execute(sql.replace("{db}", f"`{database}`"))


# -- migrations ----------------------------------------------------------------------------


async def test_migrations_from_several_processes_take_turns_under_get_lock(
    database: str, tmp_path: Path
) -> None:
    url = url_for(database)
    go = tmp_path / "go"
    lock = f"psych.migrate.{database}"
    # Hold the migration lock first, so that every process is inside migrate(), waiting on
    # GET_LOCK, at the same moment; then let them all go at once.
    holder = await _lock_holder(lock)
    try:
        processes = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(PROCESS),
                url,
                str(go),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for _ in range(3)
        ]
        for process in processes:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line == b"ready\n", await process.communicate()
        await asyncio.to_thread(go.write_text, "")
        waiting = 0
        for _ in range(200):
            waiting = await _sessions_waiting_for(lock)
            if waiting == len(processes):
                break
            await asyncio.sleep(0.05)
        assert waiting == len(processes), "every process waits on the migration lock at once"
    finally:
        holder.close()  # ending the session releases the lock: they race for it
    for process in processes:
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        assert out.endswith(b"migrated\n"), out
    versions = await rows(database, "SELECT version FROM {db}.psych_schema_version")
    assert versions == [(SCHEMA_VERSION,)]
    tables = await rows(
        database,
        f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{database}'",
    )
    assert {name for (name,) in tables} == {
        "psych_runs",
        "psych_records",
        "psych_inbox",
        "psych_specs",
        "psych_schema_version",
    }
    async with MySQLStore(url) as store:
        await store.migrate()  # again: nothing to do
        await admit(store, "run-1")
        assert len(await store.read("run-1")) == 1


async def _lock_holder(name: str) -> Any:
    conn = await admin()
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT GET_LOCK(%s, 5)", (name,))
        assert (await cursor.fetchone()) == (1,)
    return conn


async def _sessions_waiting_for(name: str) -> int:
    found = await execute(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
        f"WHERE INFO LIKE 'SELECT GET_LOCK(''{name}''%'"
    )
    return int(str(found[0][0]))


async def test_migrate_again_keeps_the_data(store: MySQLStore) -> None:
    await admit(store, "run-1")
    await store.migrate()
    assert len(await store.read("run-1")) == 1


async def test_a_schema_newer_than_the_package_is_refused(store: MySQLStore, database: str) -> None:
    await rows(
        database,
        "INSERT INTO {db}.psych_schema_version VALUES "
        f"({SCHEMA_VERSION + 1}, 'from the future', UTC_TIMESTAMP(6))",
    )
    with pytest.raises(StoreError, match="upgrade psych-store-mysql"):
        await store.migrate()


async def test_asking_a_never_migrated_database_its_version_creates_nothing(
    database: str,
) -> None:
    async with MySQLStore(url_for(database)) as store:
        found = await store.schema_version()
    assert found == SchemaVersion(applied=0, known=SCHEMA_VERSION)
    assert found.state == "behind"
    assert await rows(database, "SHOW TABLES FROM {db}") == []


async def test_a_migrated_database_is_current_and_read_while_a_migration_holds_the_lock(
    store: MySQLStore, database: str
) -> None:
    holder = await _lock_holder(lock_name(database))
    try:
        async with asyncio.timeout(5):  # GET_LOCK is not asked for
            found = await store.schema_version()
    finally:
        holder.close()
    assert found == SchemaVersion(applied=SCHEMA_VERSION, known=SCHEMA_VERSION)
    assert found.state == "current"


async def test_a_database_a_newer_release_migrated_is_ahead(
    store: MySQLStore, database: str
) -> None:
    await rows(
        database,
        "INSERT INTO {db}.psych_schema_version VALUES "
        f"({SCHEMA_VERSION + 1}, 'from the future', UTC_TIMESTAMP(6))",
    )
    found = await store.schema_version()
    assert found == SchemaVersion(applied=SCHEMA_VERSION + 1, known=SCHEMA_VERSION)
    assert found.state == "ahead"


async def test_a_database_without_the_schema_says_to_migrate(database: str) -> None:
    async with MySQLStore(url_for(database)) as store:
        with pytest.raises(StoreError, match=r"store\.migrate\(\)") as refused:
            await store.get_run(TENANT, "run-1")
        assert not isinstance(refused.value, StoreUnavailable)


async def test_a_database_that_does_not_exist_says_how_to_create_it() -> None:
    async with MySQLStore(url_for(f"{base_database()}_no_such_database")) as store:
        with pytest.raises(StoreError, match="CREATE DATABASE"):
            await store.migrate()


# -- round trips ---------------------------------------------------------------------------


async def test_round_trips_per_call(database: str, proxy: Proxy) -> None:
    # A transaction that writes more than one statement costs one round trip more than its
    # statements need: its COMMIT goes alone, once the client has checked every answer. But
    # on MariaDB an append without notices, whose one statement commits it only when its
    # fence holds (`_append.block`).
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        mariadb = (await store.server()).mariadb
        await admit(store, "run-1")
        before = proxy.commands
        claim = await store.claim("worker-1", LEASE)
        costs: dict[str, int] = {"first claim, which brings record 0": proxy.commands - before}
        assert claim is not None and claim.log is not None
        assert [*claim.log, claim.record] == await store.read("run-1")

        async def cost(name: str, call: object) -> None:
            before = proxy.commands
            await call  # type: ignore[misc]
            costs[name] = proxy.commands - before

        await cost("append", store.append("run-1", 1, one("run-1", 2, 1, "b2")))
        three = Batch(
            tuple(record("run-1", seq, 1) for seq in (3, 4, 5)), "b3", RunIndex(status="running")
        )
        await cost("append of three records", store.append("run-1", 1, three))
        await cost("re-sent append", store.append("run-1", 1, three))
        await cost("renew", store.renew("run-1", 1, LEASE))
        await cost("signal", store.signal(TENANT, "run-1", UserInput(text="hi"), "k"))
        await cost("release", store.release("run-1", 1))
        await cost("claim", store.claim("worker-1", LEASE))
        await admit(store, "run-2")
        await cost("create_run", admit(store, "run-3"))
        await cost("read", store.read("run-1"))
        await cost("delete_run", store.delete_run(TENANT, "run-3"))
    assert costs == {
        "first claim, which brings record 0": 3,  # its read rides on the attempt's writes
        "append": 1 if mariadb else 2,  # MariaDB's block; else the writes, then COMMIT
        "append of three records": 1 if mariadb else 2,
        # The batch is refused (rolled back in the block, or with the read that follows),
        # then a read recognises it.
        "re-sent append": 2,
        "renew": 1,  # one write: all or nothing by itself
        "signal": 2,
        "release": 1,
        "claim": 3,  # take the run (FOR UPDATE SKIP LOCKED), write the attempt, COMMIT
        "create_run": 2,
        "read": 1,
        "delete_run": 2,
    }


@pytest.mark.parametrize("lost", ["writes", "commit", "text"])
async def test_an_append_whose_answer_is_lost_is_sent_again_and_written_once(
    database: str, proxy: Proxy, lost: str
) -> None:
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        # MariaDB appends in one statement that commits (`_append.block`); elsewhere the
        # writes go first and their COMMIT after.
        committing = "BEGIN NOT ATOMIC" if (await store.server()).mariadb else "COMMIT"
        await admit(store, "run-1")
        assert await store.claim("worker-1", LEASE) is not None
        batch = one("run-1", 2, 1, "b2")
        if lost == "writes":  # the first answer never comes back (on MariaDB: committed)
            proxy.lose_answers(1)
        elif lost == "commit":  # the server commits, for a client that is gone
            proxy.cut(committing)
        else:  # cut part-way through the append's text: nothing of it runs
            proxy.cut("BEGIN NOT ATOMIC" if committing != "COMMIT" else "START", at=20)
        result = await store.append("run-1", 1, batch)
        assert proxy.lost + len(proxy.interruptions) == 1
        assert result.inbox_last == 0
        log = await store.read("run-1")
        assert [r.seq for r in log] == [0, 1, 2]
        assert log[2] == batch.records[0]
        row = await store.get_run(TENANT, "run-1")
        assert row is not None and row.next_seq == 3


async def test_a_claim_whose_answer_is_lost_is_unavailable_and_its_lease_expires(
    database: str, proxy: Proxy
) -> None:
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        await admit(store, "run-1")
        proxy.cut("COMMIT")  # the claim's last round trip: the server commits it, unanswered
        with pytest.raises(StoreUnavailable, match="may or may not have been applied"):
            await store.claim("worker-1", dt.timedelta(seconds=0.3))
        assert [i.command for i in proxy.interruptions] == ["COMMIT"]
        await asyncio.sleep(0.5)
        again = await store.claim("worker-2", LEASE)
        assert again is not None
        assert again.run_id == "run-1"
        assert again.attempt == 2, "the lost claim took attempt 1, and its lease expired"


async def test_a_transaction_its_client_abandoned_is_ended_by_the_server(
    database: str, proxy: Proxy
) -> None:
    # A network cut after a claim's writes, before its COMMIT: the server's session holds the
    # run row's lock and hears nothing more. It ends once idle in its transaction longer than
    # any call may take (the store's timeout), and the row is free again. (A claim: on MariaDB
    # an append holds no transaction across round trips, `_append.block`.)
    async with (
        MySQLStore(url_for(database)) as store,
        MySQLStore(via(proxy, database), timeout=1.0) as cut_off,
    ):
        await store.migrate()
        await admit(store, "run-1")
        assert await cut_off.get_run(TENANT, "run-1") is not None  # connected (and its COMMIT)
        proxy.freeze("COMMIT")
        with pytest.raises(StoreUnavailable, match="may or may not have been applied"):
            await cut_off.claim("worker-1", LEASE)
        [session] = proxy.sessions
        open_transactions = (
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX "
            f"WHERE trx_mysql_thread_id = {session}"
        )
        assert await rows(database, open_transactions) == [(1,)], "it holds the run row"
        await store.signal(TENANT, "run-1", UserInput(text="after"), "after")  # waits for it
        assert await rows(database, open_transactions) == [(0,)]
        row = await store.get_run(TENANT, "run-1")
    assert row is not None
    assert row.attempt == 0, "the abandoned claim was rolled back"
    assert row.inbox_last == 1, "the signal waited for the row, then landed"


async def test_a_create_run_whose_answer_is_lost_is_sent_again_and_admits_once(
    database: str, proxy: Proxy
) -> None:
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        proxy.lose_answers(1)
        await admit(store, "run-1")  # (run-1, True): the second try recognises the first
        assert proxy.lost == 1
        assert len(await store.read("run-1")) == 1


async def test_connections_the_server_closed_are_replaced_before_use(
    store: MySQLStore, database: str
) -> None:
    # What a server restart (or wait_timeout) does to a pool: every idle connection is gone.
    await admit(store, "run-1")
    sessions = await rows(
        database, f"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{database}'"
    )
    assert sessions, "the store holds a connection"
    for (session,) in sessions:
        await rows(database, f"KILL CONNECTION {session}")
    await asyncio.sleep(0.2)
    # A claim is not safe to send twice, so it must not meet a dead connection at all.
    claim = await store.claim("worker-1", LEASE)
    assert claim is not None
    assert claim.run_id == "run-1"


async def test_a_wait_cancelled_while_it_asks_keeps_its_connection(
    store: MySQLStore, database: str
) -> None:
    # A connection whose answer was never read cannot be lent again: cut off mid-ask, the
    # store's poll would cost the pool a connection and the next call a new one. It lets the
    # ask finish instead (here: once a table lock it waits for is gone), and its waiter stops
    # at once.
    sessions_sql = f"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{database}'"
    waiting_sql = f"{sessions_sql} AND STATE LIKE 'Waiting for table%lock'"
    await store.wait(None, -1, 0.0)
    before = await rows(database, sessions_sql)
    assert before, "the store holds a connection"
    holder = await admin()
    try:
        async with holder.cursor() as cursor:
            await cursor.execute(f"LOCK TABLES `{database}`.psych_runs WRITE")
        waiter = asyncio.create_task(store.wait(None, -1, 30.0))

        async def asking() -> bool:
            return bool(await rows(database, waiting_sql))

        await eventually(asking, "the store's ask waiting on the table lock")
        waiter.cancel()
        async with asyncio.timeout(1):
            with pytest.raises(asyncio.CancelledError):
                await waiter
        async with holder.cursor() as cursor:
            await cursor.execute("UNLOCK TABLES")
    finally:
        holder.close()
    pool = store._pool

    async def idle() -> bool:
        return len(pool._free) == pool.open_connections

    await eventually(idle, "the ask left behind getting its answer")
    await store.wait(None, -1, 0.0)
    after = await rows(database, sessions_sql)
    assert sorted(after) == sorted(before), "the cancelled ask's connection was not kept"


# -- contention ----------------------------------------------------------------------------


async def test_an_append_chosen_as_a_deadlock_victim_is_retried(
    database: str, proxy: Proxy
) -> None:
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        for run_id in ("run-a", "run-b"):
            await admit(store, run_id)
            assert await store.claim("worker-1", LEASE, run_id=run_id) is not None
        await rows(database, "CREATE TABLE {db}.ballast (n INT) ENGINE=InnoDB")
        rival = await admin()
        try:
            async with rival.cursor() as cursor:
                await cursor.execute(f"USE `{database}`")
                await cursor.execute("START TRANSACTION")
                await cursor.execute(
                    "SELECT run_id FROM psych_runs WHERE run_id = 'run-b' FOR UPDATE"
                )
                # Much undo to its name: InnoDB rolls back the lighter transaction, the append.
                await cursor.execute(
                    "INSERT INTO ballast SELECT 1 FROM information_schema.COLUMNS a, "
                    "information_schema.COLUMNS b LIMIT 20000"
                )
                batch = Batch(
                    (record("run-a", 2, 1),),
                    "a2",
                    RunIndex(status="running"),
                    notify=(Notify("run-b", "from-a", UserInput(text="hello")),),
                )
                before = proxy.commands
                # The append locks run-a, then waits for run-b (its notice)...
                appending = asyncio.create_task(store.append("run-a", 1, batch))
                await asyncio.sleep(0.3)
                # ... and the rival now waits for run-a: a cycle, which InnoDB breaks at once.
                await cursor.execute(
                    "UPDATE psych_runs SET updated_at = updated_at WHERE run_id = 'run-a'"
                )
                await cursor.execute("COMMIT")
        finally:
            rival.close()
        await asyncio.wait_for(appending, timeout=10)
        assert proxy.commands - before >= 2, "the append was rolled back, then sent again"
        assert [r.seq for r in await store.read("run-a")] == [0, 1, 2]
        assert [e.key for e in await store.signals("run-b")] == ["from-a"]


async def test_a_lock_wait_timeout_is_retried(database: str) -> None:
    async with MySQLStore(url_for(database), lock_wait_timeout=1, retry_for=10) as store:
        await store.migrate()
        await admit(store, "run-1")
        assert await store.claim("worker-1", LEASE) is not None
        holder = await admin()
        try:
            async with holder.cursor() as cursor:
                await cursor.execute(f"USE `{database}`")
                await cursor.execute("START TRANSACTION")
                await cursor.execute(
                    "SELECT run_id FROM psych_runs WHERE run_id = 'run-1' FOR UPDATE"
                )
                started = time.monotonic()
                appending = asyncio.create_task(store.append("run-1", 1, one("run-1", 2, 1, "b")))
                await asyncio.sleep(1.6)  # past one lock wait timeout
                assert not appending.done()
                await cursor.execute("COMMIT")
        finally:
            holder.close()
        await asyncio.wait_for(appending, timeout=10)
        assert time.monotonic() - started >= 1.5
        assert [r.seq for r in await store.read("run-1")] == [0, 1, 2]


async def test_a_call_past_its_timeout_is_unavailable_and_says_whether_it_was_sent(
    database: str,
) -> None:
    async with MySQLStore(url_for(database), max_connections=1, timeout=0.5) as store:
        await store.migrate()
        await admit(store, "run-1")
        assert await store.claim("worker-1", LEASE) is not None
        batch = one("run-1", 2, 1, "b")
        holder = await admin()
        try:
            async with holder.cursor() as cursor:
                await cursor.execute(f"USE `{database}`")
                await cursor.execute("START TRANSACTION")
                await cursor.execute(
                    "SELECT run_id FROM psych_runs WHERE run_id = 'run-1' FOR UPDATE"
                )
                # The append waits for the row lock on the store's one connection, past its
                # timeout: it was sent, and may or may not be applied.
                with pytest.raises(StoreUnavailable, match="may or may not have been applied"):
                    await store.append("run-1", 1, batch)
                await cursor.execute("ROLLBACK")
        finally:
            holder.close()
        # A call that waits past its timeout for the store's one connection sent nothing. The
        # connection is held here, not by another call: one with the same timeout would let go
        # of it a moment before this call's time is up, and a fast server answers in that gap.
        slots = store._pool._slots
        await slots.acquire()
        try:
            with pytest.raises(StoreUnavailable, match="nothing was sent"):
                await store.get_run(TENANT, "run-1")
        finally:
            slots.release()
        # The server may still have run the abandoned batch once the lock was free: sending it
        # again is how a worker finds out, and it is written once either way.
        await store.append("run-1", 1, batch)
        assert await store.read("run-1", after_seq=1) == list(batch.records)


# -- settings, limits, errors --------------------------------------------------------------


async def test_the_session_settings_are_in_force(store: MySQLStore) -> None:
    settings = await store.session_settings()
    assert settings["time_zone"] == "+00:00"
    assert settings["isolation"] == "READ-COMMITTED"
    assert settings["autocommit"] == 1
    assert settings["innodb_lock_wait_timeout"] == 10
    assert "STRICT_TRANS_TABLES" in str(settings["sql_mode"])
    assert "NO_BACKSLASH_ESCAPES" not in str(settings["sql_mode"])
    assert settings["character_set_connection"] == "utf8mb4"


async def test_records_are_kept_as_json_text(store: MySQLStore, database: str) -> None:
    await admit(store, "run-1")
    assert await store.claim("worker-1", LEASE) is not None
    kept = record("run-1", 2, 1, "quotes ' \" \\ and NUL \0 and 🌍")
    await store.append("run-1", 1, Batch((kept,), "b-2", RunIndex(status="running")))
    found = await rows(
        database,
        "SELECT seq, attempt, batch_id, body FROM {db}.psych_records "
        "WHERE run_id = 'run-1' ORDER BY seq",
    )
    assert [(seq, attempt, batch) for seq, attempt, batch, _ in found] == [
        (0, 0, None),
        (1, 1, None),
        (2, 1, b"b-2"),
    ]
    assert found[2][3] == kept.model_dump_json()
    assert (await store.read("run-1"))[2] == kept


async def test_limits_beyond_the_servers_packet_are_refused_on_connect(database: str) -> None:
    huge = StoreLimits(
        max_record_bytes=64 * 1024 * 1024,
        max_append_records=1000,
        max_append_bytes=64 * 1024 * 1024,
    )
    async with MySQLStore(url_for(database), limits=huge) as store:
        with pytest.raises(StoreError, match="max_allowed_packet") as refused:
            await store.migrate()
        assert "smaller limits" in str(refused.value)


def test_the_default_limits_fit_the_default_packets() -> None:
    from psych_store_mysql._literals import packet_bytes_needed

    needed = packet_bytes_needed(DEFAULT_LIMITS.max_append_bytes, DEFAULT_LIMITS.max_append_records)
    assert needed <= 16 * 1024 * 1024, "MariaDB's default max_allowed_packet"


async def test_an_unreachable_server_is_unavailable_after_retries() -> None:
    # A port where something accepts connections and hangs up at once, counting them.
    tries = 0

    async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal tries
        tries += 1
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with MySQLStore(f"mysql://root@127.0.0.1:{port}/psych", retry_for=0.5) as store:
            with pytest.raises(StoreUnavailable, match="could not be reached") as refused:
                await store.get_run(TENANT, "run-1")
    finally:
        server.close()
        await server.wait_closed()
    assert tries >= 3, "it retried with backoff before giving up"
    assert f"127.0.0.1:{port}/psych" in str(refused.value)
    with pytest.raises(StoreUnavailable, match="could not be reached"):
        async with MySQLStore(f"mysql://root@127.0.0.1:{port}/psych", retry_for=0.1) as store:
            await store.get_run(TENANT, "run-1")  # nothing listens now: refused


async def test_wrong_credentials_are_a_store_error_that_says_so(database: str) -> None:
    parts = urllib.parse.urlsplit(url_for(database))
    url = urllib.parse.urlunsplit(
        parts._replace(netloc=f"psych_nobody:wrong@{parts.hostname}:{parts.port or 3306}")
    )
    async with MySQLStore(url) as store:
        with pytest.raises(StoreError, match="access denied") as refused:
            await store.migrate()
        assert "wrong" not in str(refused.value), "the password is never shown"


async def test_ids_longer_than_the_schema_keeps_are_refused_before_sending(
    store: MySQLStore,
) -> None:
    with pytest.raises(StoreError, match="255 bytes"):
        await admit(store, "r" * 256)
    assert await store.get_run(TENANT, "r" * 255) is None


async def test_a_closed_store_refuses_calls(database: str) -> None:
    store = MySQLStore(url_for(database))
    await store.migrate()
    await store.close()
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.get_run(TENANT, "run-1")


async def test_a_store_dropped_without_close_closes_its_connections(database: str) -> None:
    store = MySQLStore(url_for(database), max_connections=3)
    await store.migrate()
    await asyncio.gather(*(store.get_run(TENANT, f"run-{i}") for i in range(3)))
    assert store.open_connections == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del store
        gc.collect()
    await asyncio.sleep(0.05)


def test_urls_are_parsed_and_the_password_is_never_shown() -> None:
    store = MySQLStore("mysql://psych:s%40cret@db.internal:3307/runs")
    assert repr(store) == "MySQLStore(mysql://psych@db.internal:3307/runs)"
    assert store.database == "runs"
    socket = MySQLStore("mariadb://psych@localhost/runs?unix_socket=/run/mysqld/mysqld.sock")
    assert repr(socket) == "MySQLStore(mysql://psych@/run/mysqld/mysqld.sock/runs)"
    for bad, problem in (
        ("postgresql://x/db", "needs a mysql://"),
        ("mysql://host", "must name one database"),
        ("mysql://host/db?charset=latin1", "unknown option"),
    ):
        with pytest.raises(ValueError, match=problem):
            MySQLStore(bad)


def test_a_batch_with_notices_is_never_written_as_a_block() -> None:
    # A notice's delivery is checked by the client before the COMMIT (`_inbox`): a batch with
    # notices keeps the two round trips, and the block refuses to carry one.
    notice = Notify("run-2", "k", UserInput(text="hi"))
    noticed = Batch((record("run-1", 2, 1),), "b2", RunIndex(status="running"), notify=(notice,))
    with pytest.raises(ValueError, match="has notices"):
        _append.block("run-1", 1, noticed, ('{"x": 1}',))


def test_a_block_writes_its_records_in_one_insert_only_when_the_update_matched() -> None:
    batch = Batch((record("run-1", 2, 1), record("run-1", 3, 1)), "b2", RunIndex("running"))
    sql = _append.block("run-1", 1, batch, ('{"a": 1}', '{"b": 2}'))
    inside = sql[sql.index("IF matched = 1 THEN") : sql.index("ELSE ROLLBACK")]
    assert sql.count("INSERT INTO psych_records") == 1 and "@psych_ok" not in sql
    assert "VALUES ('run-1', 2, 1, 'b2', '{\"a\": 1}'), ('run-1', 3, 1, NULL, " in inside
    assert inside.rstrip().endswith("COMMIT;")

"""MySQLStore's `append_many` (group commit) beyond the contract: a group is one transaction of
three round trips (every run row's ``UPDATE``, one ``INSERT`` of every record, one
``COMMIT``), split only where a packet must be; and a group whose statements fail part-way, or
whose answers are lost, writes each batch once and gives each append the outcome `append`
would give it alone."""

from __future__ import annotations

import asyncio
import datetime as dt
import urllib.parse
from collections.abc import AsyncIterator

import pytest

from psych_core import (
    Append,
    AppendResult,
    Batch,
    Conflict,
    Notify,
    Record,
    RunIndex,
    StoreError,
    ToolCallFinished,
    UserInput,
)
from psych_store_mysql import DEFAULT_LIMITS, MySQLStore
from psych_store_mysql._group import chunks, insert, members, text
from tests._mysql_databases import admin, create_database, drop_database, execute, url_for
from tests.contract._mysql_proxy import Proxy
from tests.contract.test_mysql_store import admit, via

pytestmark = pytest.mark.contract

LEASE = dt.timedelta(seconds=60)
TENANT = "t"


@pytest.fixture
async def database() -> AsyncIterator[str]:
    name = await create_database()
    try:
        yield name
    finally:
        await drop_database(name)


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    parts = urllib.parse.urlsplit(url_for("x"))
    proxy = Proxy(parts.hostname or "127.0.0.1", parts.port or 3306)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


def record(run_id: str, seq: int, attempt: int = 1, result: str = "ok") -> Record:
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id=f"{seq}.0", result=result),
    )


def append_of(
    run_id: str, seq: int = 2, *, result: str = "ok", notify: tuple[Notify, ...] = ()
) -> Append:
    """One record at `seq` from attempt 1 (the first claim's)."""
    batch = Batch(
        (record(run_id, seq, result=result),),
        f"{run_id}.{seq}",
        RunIndex(status="running"),
        notify=notify,
    )
    return Append(run_id, 1, batch)


async def claimed(store: MySQLStore, *runs: str) -> None:
    """Admit each run and claim it: attempt 1 holds it, its next seq is 2."""
    for run_id in runs:
        await admit(store, run_id)
        assert await store.claim("worker-1", LEASE, run_id=run_id) is not None


async def assert_written_once(store: MySQLStore, group: list[Append]) -> None:
    """Each batch of `group` is in its run's log once, and the run row moved past it."""
    for one in group:
        log = await store.read(one.run_id)
        assert [r.seq for r in log] == [0, 1, 2], one.run_id
        assert log[2:] == list(one.batch.records), one.run_id
        row = await store.get_run(TENANT, one.run_id)
        assert row is not None and row.next_seq == 3, one.run_id


async def assert_untouched(store: MySQLStore, *runs: str) -> None:
    for run_id in runs:
        assert [r.seq for r in await store.read(run_id)] == [0, 1], run_id
        row = await store.get_run(TENANT, run_id)
        assert row is not None and row.next_seq == 2, run_id


async def commits(store: MySQLStore) -> int:
    """``Com_commit`` of the session of a store with one connection: the COMMITs it sent."""
    answer = await store._pool.run(
        lambda conn, _: conn.one("SHOW SESSION STATUS LIKE 'Com_commit'"),
        what="count commits",
        resend=True,
    )
    return int(answer.rows[0][1])


# -- one transaction -----------------------------------------------------------------------


async def test_a_group_is_one_commit_in_three_round_trips(database: str, proxy: Proxy) -> None:
    runs = [f"run-{i}" for i in range(8)]
    async with MySQLStore(via(proxy, database), max_connections=1) as store:
        await store.migrate()
        await claimed(store, *runs)
        group = [append_of(run_id) for run_id in reversed(runs)]
        before, sent = await commits(store), proxy.commands
        assert await store.append_many(group) == [AppendResult(0)] * len(group)
        assert proxy.commands - sent == 3, "every run row's UPDATE, every record, one COMMIT"
        assert await commits(store) - before == 1
        await assert_written_once(store, group)


async def test_round_trips_of_groups_the_single_path_helps(database: str, proxy: Proxy) -> None:
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        mariadb = (await store.server()).mariadb
        await claimed(store, "run-a", "run-b", "run-c", "run-d", "run-e", "run-f", "run-g")
        costs: dict[str, int] = {}

        async def cost(name: str, group: list[Append]) -> list[AppendResult | Exception]:
            before = proxy.commands
            outcomes: list[AppendResult | Exception] = list(await store.append_many(group))
            costs[name] = proxy.commands - before
            return outcomes

        assert await cost("one", [append_of("run-a")]) == [AppendResult(0)]
        notice = (Notify("run-a", "from-b", UserInput(text="hi")),)
        noticed = [append_of("run-b", notify=notice), append_of("run-c"), append_of("run-d")]
        assert await cost("a notice among three", noticed) == [AppendResult(0)] * 3
        assert await cost("re-sent three", noticed) == [AppendResult(0)] * 3
        refused = await cost("one refused of two", [append_of("run-e"), append_of("run-b", 1)])
        assert refused[0] == AppendResult(0) and isinstance(refused[1], Conflict)
    assert costs == {
        "one": 1 if mariadb else 2,  # the single path: a group of one is an append
        "a notice among three": 3 + 2,  # two together, the one with the notice alone
        "re-sent three": 2 + 3 * 2,  # matched nothing: rolled back, each recognised alone
        "one refused of two": 3 + 2,  # run-e commits; run-b is judged alone
    }


async def test_a_group_writes_nothing_visible_before_its_commit(database: str) -> None:
    runs = ["run-a", "run-b", "run-c"]
    async with MySQLStore(url_for(database)) as store:
        await store.migrate()
        await claimed(store, *runs)
        group = [append_of(run_id) for run_id in runs]
        holder = await admin()
        try:
            async with holder.cursor() as cursor:
                await cursor.execute(f"USE `{database}`")
                await cursor.execute("START TRANSACTION")
                # The last run of the group's order: its UPDATE waits, after the others wrote.
                await cursor.execute(
                    "SELECT run_id FROM psych_runs WHERE run_id = 'run-c' FOR UPDATE"
                )
                appending = asyncio.create_task(store.append_many(group))
                await asyncio.sleep(0.5)
                assert not appending.done()
                written = await execute(
                    f"SELECT COUNT(*) FROM `{database}`.psych_records WHERE seq = 2"
                )
                assert written == [(0,)], "run-a's and run-b's writes wait for the commit"
                await cursor.execute("COMMIT")
        finally:
            holder.close()
        assert await asyncio.wait_for(appending, 10) == [AppendResult(0)] * 3
        await assert_written_once(store, group)


async def test_a_group_larger_than_a_packet_is_split(database: str, proxy: Proxy) -> None:
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        packet = (await store.server()).max_allowed_packet
        size = 3 * 1024 * 1024
        runs = [f"run-{i:02}" for i in range(packet // size + 1)]
        await claimed(store, *runs)
        group = [append_of(run_id, result="a" * size) for run_id in runs]
        assert len(chunks(members(group, store.limits), packet)) == 2
        before = proxy.commands
        assert await store.append_many(group) == [AppendResult(0)] * len(group)
        assert proxy.commands - before == 6, "two transactions, each three round trips"
        await assert_written_once(store, group)


def test_a_group_updates_in_run_id_order_and_inserts_only_what_matched() -> None:
    notice = (Notify("x", "k", UserInput(text="hi")),)
    empty = Append("run-d", 1, Batch((), "empty", RunIndex("running")))
    group = [append_of("run-c"), append_of("run-a", notify=notice), append_of("run-b"), empty]
    found = members(group, DEFAULT_LIMITS)
    assert [(m.position, m.one.run_id) for m in found] == [(2, "run-b"), (0, "run-c")]
    sql = text(found)
    assert sql.startswith("START TRANSACTION;\nUPDATE psych_runs SET status")
    assert sql.count("UPDATE psych_runs") == 2 and "psych_records" not in sql
    assert sql.index("'run-b'") < sql.index("'run-c'")
    both, rows = insert(found, [0, 4])
    assert rows == 2 and both.startswith("INSERT INTO psych_records (run_id, seq, attempt, ")
    assert both.index("'run-b', 2, 1, 'run-b.2'") < both.index("'run-c', 2, 1, 'run-c.2'")
    only_c, rows = insert(found, [None, 4])
    assert rows == 1 and "'run-b'" not in only_c and "'run-c', 2, 1, 'run-c.2'" in only_c
    assert len(chunks(found, 1 << 20)) == 1
    assert [len(c) for c in chunks(found, found[0].size + 1100)] == [1, 1]


# -- a text that fails, answers that are lost ----------------------------------------------


async def test_a_text_that_fails_part_way_writes_each_batch_once(database: str) -> None:
    async with MySQLStore(url_for(database)) as store:
        await store.migrate()
        await claimed(store, "run-a", "run-b", "run-c", "run-d")
        # run-b's record fails on the server, after run-a's writes and before run-c's.
        await execute(
            f"CREATE TRIGGER `{database}`.boom BEFORE INSERT ON `{database}`.psych_records "
            "FOR EACH ROW IF NEW.body LIKE '%boom%' THEN "
            "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; END IF"
        )
        group = [
            append_of("run-a"),
            append_of("run-b", result="boom"),
            append_of("run-c"),
            append_of("run-d", 1),  # seq 1 is taken
        ]
        outcomes = await store.append_many(group)
        assert outcomes[0] == AppendResult(0)
        assert isinstance(outcomes[1], StoreError), outcomes[1]
        assert "boom" in str(outcomes[1])
        assert outcomes[2] == AppendResult(0)
        assert isinstance(outcomes[3], Conflict), outcomes[3]
        await assert_written_once(store, [group[0], group[2]])
        await assert_untouched(store, "run-b", "run-d")


async def test_a_text_that_waits_too_long_for_a_lock_is_sent_again_alone(database: str) -> None:
    group = [append_of(run_id) for run_id in ("run-a", "run-b", "run-c")]
    async with MySQLStore(url_for(database), lock_wait_timeout=1, retry_for=10) as store:
        await store.migrate()
        await claimed(store, "run-a", "run-b", "run-c")
        holder = await admin()
        try:
            async with holder.cursor() as cursor:
                await cursor.execute(f"USE `{database}`")
                await cursor.execute("START TRANSACTION")
                await cursor.execute(
                    "SELECT run_id FROM psych_runs WHERE run_id = 'run-b' FOR UPDATE"
                )
                appending = asyncio.create_task(store.append_many(group))
                await asyncio.sleep(1.6)  # past one lock wait timeout, in the group's text
                await cursor.execute("COMMIT")
        finally:
            holder.close()
        assert await asyncio.wait_for(appending, 10) == [AppendResult(0)] * 3
        await assert_written_once(store, group)


@pytest.mark.parametrize("lost", ["updates", "records", "commit"])
async def test_a_group_whose_answer_is_lost_writes_each_batch_once(
    database: str, proxy: Proxy, lost: str
) -> None:
    runs = ["run-a", "run-b", "run-c"]
    async with MySQLStore(via(proxy, database)) as store:
        await store.migrate()
        await claimed(store, *runs, "run-d")
        group = [append_of(run_id) for run_id in runs] + [append_of("run-d", 5)]
        if lost == "updates":  # the server makes the writes, never committed: rolled back
            proxy.lose_answers(1)
        elif lost == "records":  # the updates checked out; the INSERT's answer goes missing
            proxy.cut("INSERT INTO psych_records")
        else:  # the server commits, for a client that is gone
            proxy.cut("COMMIT")
        outcomes = await store.append_many(group)
        assert proxy.lost + len(proxy.interruptions) == 1
        assert outcomes[:3] == [AppendResult(0)] * 3
        assert isinstance(outcomes[3], Conflict), outcomes[3]
        await assert_written_once(store, group[:3])
        await assert_untouched(store, "run-d")


async def test_each_outcome_carries_its_own_inbox_in_any_order(database: str) -> None:
    async with MySQLStore(url_for(database)) as store:
        await store.migrate()
        await claimed(store, "run-a", "run-b", "run-c")
        for key in ("one", "two"):
            await store.signal(TENANT, "run-a", UserInput(text=key), key)
        await store.signal(TENANT, "run-c", UserInput(text="three"), "three")
        group = [append_of("run-c"), append_of("run-b"), append_of("run-a")]
        assert await store.append_many(group) == [AppendResult(1), AppendResult(0), AppendResult(2)]

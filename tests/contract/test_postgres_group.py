"""PostgresStore's group commit: `append_many` writes its runs' batches in one statement, one
round trip and one transaction, takes their rows in one order, and when that statement fails
or its answer is lost, every batch still ends as `append` would end it, written once."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Sequence

import asyncpg
import pytest

from psych_core import (
    Append,
    AppendResult,
    Batch,
    Conflict,
    RunIndex,
    Store,
)
from psych_store_postgres import PostgresStore
from tests._postgres import connect, fresh_schema, store_behind_proxy, test_dsn
from tests.contract.test_postgres_store import LEASE, RUNNING, admit, claimed, step

pytestmark = pytest.mark.contract


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


@pytest.fixture
async def store(schema: str) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(test_dsn(), schema=schema, max_size=4) as store:
        await store.migrate()
        yield store


async def next_append(store: Store, run_id: str, attempt: int, count: int = 1) -> Append:
    """`count` records at the run's next seq, in a batch named after its first seq."""
    row = await store.get_run("t", run_id)
    assert row is not None
    records = tuple(step(run_id, row.next_seq + i, attempt) for i in range(count))
    return Append(run_id, attempt, Batch(records, f"b{row.next_seq}", RUNNING))


async def group_of(store: Store, sizes: Sequence[int]) -> list[Append]:
    """Fresh claimed runs, one append each, of the given sizes."""
    group = []
    for size in sizes:
        run_id, attempt = await claimed(store)
        group.append(await next_append(store, run_id, attempt, size))
    return group


async def writers(schema: str, group: Sequence[Append]) -> list[tuple[str, int, int]]:
    """(run, seq, transaction id) of each record the group's batches carry, as stored."""
    conn = await connect()
    try:
        rows = await conn.fetch(
            f"SELECT run_id, seq, xmin::text::bigint AS tx FROM {schema}.records "
            "WHERE run_id = ANY($1::text[]) AND seq >= 2 ORDER BY run_id, seq",
            [one.run_id for one in group],
        )
    finally:
        await conn.close()
    return [(row["run_id"], row["seq"], row["tx"]) for row in rows]


async def assert_written_once(store: Store, group: Sequence[Append]) -> None:
    for one in group:
        assert (await store.read(one.run_id))[2:] == list(one.batch.records), one.run_id
        row = await store.get_run("t", one.run_id)
        assert row is not None
        assert row.next_seq == 2 + len(one.batch.records)


# -- one transaction, one round trip -----------------------------------------------------------


async def test_a_group_is_one_transaction(store: PostgresStore) -> None:
    group = await group_of(store, (1, 3, 2, 1))
    assert await store.append_many(group) == [AppendResult(0)] * 4
    await assert_written_once(store, group)
    written = await writers(store.schema, group)
    assert len(written) == 7
    assert len({tx for _, _, tx in written}) == 1, "every record of the group in one commit"

    apart = await group_of(store, (1, 1))
    for one in apart:
        await store.append(one.run_id, one.attempt, one.batch)
    assert len({tx for _, _, tx in await writers(store.schema, apart)}) == 2


async def test_a_group_is_one_round_trip(schema: str) -> None:
    async with store_behind_proxy(schema, min_size=1, max_size=1) as (proxy, store):
        # Warm: the group statement is prepared once per connection.
        assert await store.append_many(await group_of(store, (1, 2))) == [AppendResult(0)] * 2
        group = await group_of(store, (1, 2, 1, 3, 1, 1, 2, 1))
        proxy.sent.clear()
        assert await store.append_many(group) == [AppendResult(0)] * 8
        assert (proxy.sent["S"], proxy.sent["Q"], proxy.sent["H"]) == (1, 0, 0)
        await assert_written_once(store, group)


async def test_a_group_notifies_only_the_runs_a_reader_watches(store: PostgresStore) -> None:
    group = await group_of(store, (1, 1, 2))
    watched = group[1].run_id
    heard: list[str] = []
    conn = await connect()
    try:
        await conn.add_listener(
            f"{store.schema}.records", lambda _c, _pid, _channel, payload: heard.append(payload)
        )
        await store.wait(watched, 1, timeout=0.01)  # a reader watches this run from now on
        assert await store.append_many(group) == [AppendResult(0)] * 3
        await asyncio.sleep(0.2)
    finally:
        await conn.close()
    assert heard == [watched]


# -- lock order --------------------------------------------------------------------------------


async def test_a_group_takes_its_rows_in_run_id_order(store: PostgresStore) -> None:
    # Given its runs last to first, the group still locks the first, then waits for the
    # second (held here), and has not touched the third: every group takes rows in one order,
    # so two groups that share runs never deadlock.
    prefix = f"run-{uuid.uuid4().hex[:12]}"
    run_ids = [await admit(store, f"{prefix}-{n}") for n in (1, 2, 3)]
    group = []
    for run_id in reversed(run_ids):
        claim = await store.claim("worker-1", LEASE, run_id=run_id)
        assert claim is not None
        group.append(await next_append(store, run_id, claim.attempt))
    table = f"{store.schema}.runs"
    holder, probe = await connect(), await connect()
    try:
        holding = holder.transaction()
        await holding.start()
        await holder.execute(
            f"SELECT 1 FROM {table} WHERE run_id = $1 FOR NO KEY UPDATE", run_ids[1]
        )
        pending = asyncio.create_task(store.append_many(group))
        for _ in range(500):
            waiting = await probe.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%unnest%' AND datname = current_database()"
            )
            if waiting:
                break
            await asyncio.sleep(0.01)
        assert waiting == 1, "the group waits for the row held here"
        take = f"SELECT 1 FROM {table} WHERE run_id = $1 FOR NO KEY UPDATE NOWAIT"
        with pytest.raises(asyncpg.LockNotAvailableError):
            await probe.fetchval(take, run_ids[0])
        assert await probe.fetchval(take, run_ids[2]) == 1, "the third is not taken yet"
        await holding.rollback()
        assert await asyncio.wait_for(pending, timeout=10) == [AppendResult(0)] * 3
    finally:
        await holder.close()
        await probe.close()
    await assert_written_once(store, group)
    assert len({tx for _, _, tx in await writers(store.schema, group)}) == 1


async def test_groups_sharing_runs_in_opposite_orders_each_land_once(
    store: PostgresStore,
) -> None:
    claims = [await claimed(store) for _ in range(6)]
    mine = [await next_append(store, run_id, attempt) for run_id, attempt in claims]
    theirs = [
        Append(
            one.run_id,
            one.attempt,
            Batch((step(one.run_id, 2, one.attempt, "theirs"),), "theirs", RUNNING),
        )
        for one in reversed(mine)
    ]
    first, second = await asyncio.gather(store.append_many(mine), store.append_many(theirs))
    for position, one in enumerate(mine):
        outcomes = [first[position], second[len(mine) - 1 - position]]
        assert sorted(type(outcome).__name__ for outcome in outcomes) == [
            "AppendResult",
            "Conflict",
        ], (one.run_id, outcomes)
        log = await store.read(one.run_id)
        assert len(log) == 3
        landed = (
            mine[position]
            if isinstance(outcomes[0], AppendResult)
            else theirs[len(mine) - 1 - position]
        )
        assert log[2:] == list(landed.batch.records)


# -- a group statement that fails, or whose answer is lost ---------------------------------------


async def test_a_failed_group_statement_ends_each_append_as_append_would(
    store: PostgresStore,
) -> None:
    # A record already at a run's next seq (a log the run row does not account for) makes the
    # group statement fail on the records' key: nothing of it is written, and each batch goes
    # through `append`, which writes the others and refuses that one.
    group = await group_of(store, (1, 2, 1, 3))
    spoiled = group[2]
    conn = await connect()
    try:
        await conn.execute(
            f"INSERT INTO {store.schema}.records (run_id, seq, attempt, batch_id, body) "
            "VALUES ($1, 2, 1, 'planted', '\\x7b7d'::bytea)",
            spoiled.run_id,
        )
    finally:
        await conn.close()
    outcomes = await store.append_many(group)
    assert isinstance(outcomes[2], Conflict), outcomes[2]
    assert (outcomes[2].run_id, outcomes[2].seq) == (spoiled.run_id, 2)
    assert [outcomes[i] for i in (0, 1, 3)] == [AppendResult(0)] * 3
    good = [group[i] for i in (0, 1, 3)]
    await assert_written_once(store, good)
    written = await writers(store.schema, good)
    assert len(written) == 6
    assert len({tx for _, _, tx in written}) == 3, "written one append at a time"
    row = await store.get_run("t", spoiled.run_id)
    assert row is not None and row.next_seq == 2
    planted = await writers(store.schema, [spoiled])
    assert [(run_id, seq) for run_id, seq, _ in planted] == [(spoiled.run_id, 2)]


async def test_a_group_whose_answer_was_lost_is_written_once(schema: str) -> None:
    async with store_behind_proxy(schema, max_size=2) as (proxy, store):
        group = await group_of(store, (2, 1, 3))
        proxy.cut_next_answer()
        assert await store.append_many(group) == [AppendResult(0)] * 3
        assert proxy.answer_cut == 1, "the answer to the group statement was lost"
        await assert_written_once(store, group)
        written = await writers(schema, group)
        assert len(written) == 6
        assert len({tx for _, _, tx in written}) == 1, "the first send committed it all"


# -- what is checked before anything is written -------------------------------------------------


async def test_a_naive_due_at_refuses_the_group_before_writing(store: PostgresStore) -> None:
    group = await group_of(store, (1, 1))
    later = RunIndex(status="waiting", waiting="external", due_at=dt.datetime(2030, 1, 1))
    naive = Append(group[1].run_id, 1, Batch(group[1].batch.records, "b2", later))
    with pytest.raises(ValueError, match="timezone"):
        await store.append_many([group[0], naive])
    for one in group:
        assert len(await store.read(one.run_id)) == 2

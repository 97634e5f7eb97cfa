"""PostgresStore lends the connection an operation left clean to the next one without going
through asyncpg's pool; these tests hold it to what the pool promised: nobody waits for a
connection the store holds, a connection the server cut is never lent again, a transaction
is never inherited, and closing the store leaves no session on the server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from psych_core import Batch
from psych_store_postgres import PostgresStore
from psych_store_postgres import _connections as _connections_module
from psych_store_postgres._connections import Connection, Connections
from tests._eventually import eventually
from tests._postgres import connect, fresh_schema, test_dsn
from tests.contract.test_postgres_store import RUNNING, admit, claimed, step

pytestmark = pytest.mark.contract


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


def _connections(store: PostgresStore) -> Connections:
    return store._connections


async def _sessions(application_name: str) -> list[int]:
    """The server's sessions of that application name (their pids)."""
    conn = await connect()
    try:
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", application_name
        )
    finally:
        await conn.close()
    return [row["pid"] for row in rows]


@pytest.fixture
def given_back(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many connections went back to the pool, counted by the reset the pool calls for
    each (one element, kept up to date)."""
    count = [0]

    async def counted(_conn: asyncpg.Connection) -> None:
        count[0] += 1

    monkeypatch.setattr(_connections_module, "_keep_session", counted)
    return count


async def test_consecutive_appends_do_not_go_back_to_the_pool(
    schema: str, given_back: list[int]
) -> None:
    async with PostgresStore(test_dsn(), schema=schema, max_size=4) as store:
        await store.migrate()
        run_id, attempt = await claimed(store)
        before = given_back[0]
        for seq in range(2, 12):
            batch = Batch((step(run_id, seq, attempt),), f"b{seq}", RUNNING)
            await store.append(run_id, attempt, batch)
        assert given_back[0] == before, "appends one after another went back to the pool"
        records = await store.read(run_id)
        assert [record.seq for record in records][-10:] == list(range(2, 12))


async def test_callers_waiting_on_a_pool_of_one_are_all_served(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema, min_size=1, max_size=1) as store:
        await store.migrate()
        run_ids = [await admit(store) for _ in range(3)]
        # Forty reads at once through one connection: each that finishes while another
        # waits on the pool hands the connection over instead of keeping it.
        rows = await asyncio.wait_for(
            asyncio.gather(*(store.get_run("t", run_ids[i % 3]) for i in range(40))), 30
        )
        assert [row.run_id for row in rows if row is not None] == [
            run_ids[i % 3] for i in range(40)
        ]


async def test_a_held_connection_the_server_cut_is_not_lent_again(schema: str) -> None:
    name = f"held-{uuid.uuid4().hex[:8]}"
    async with PostgresStore(
        test_dsn(), schema=schema, max_size=2, application_name=name, retry_for=5
    ) as store:
        await store.migrate()
        run_id = await admit(store)
        held = await _sessions(name)
        assert held, "the store kept no session"
        conn = await connect()
        try:
            for pid in held:
                await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await conn.close()
        row = await store.get_run("t", run_id)
        assert row is not None and row.run_id == run_id
        assert not set(held) & set(await _sessions(name)), "a cut session is still in use"


async def test_a_transaction_left_open_is_never_inherited(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema, max_size=1) as store:
        await store.migrate()
        connections = _connections(store)

        async def leave_open(conn: Connection, _again: bool) -> int:
            await conn.execute("BEGIN")
            return int(await conn.fetchval("SELECT txid_current()"))

        await connections.run("a transaction left open", leave_open, resend=False)

        async def in_transaction(conn: Connection, _again: bool) -> bool:
            return bool(conn.is_in_transaction())

        assert not await connections.run("the next call", in_transaction, resend=False)


async def test_closing_the_store_ends_every_session(schema: str) -> None:
    name = f"held-{uuid.uuid4().hex[:8]}"
    store = PostgresStore(test_dsn(), schema=schema, max_size=4, application_name=name)
    await store.migrate()
    await asyncio.gather(*(admit(store) for _ in range(8)))
    assert await _sessions(name)
    await asyncio.wait_for(store.close(), 5)
    for _ in range(50):
        if not await _sessions(name):
            break
        await asyncio.sleep(0.1)
    assert await _sessions(name) == []


async def test_connections_idle_for_a_while_go_back_to_the_pool(
    schema: str, given_back: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_connections_module, "HELD_FOR", 0.2)
    async with PostgresStore(test_dsn(), schema=schema, max_size=4) as store:
        await store.migrate()
        run_id = await admit(store)
        await asyncio.gather(*(store.get_run("t", run_id) for _ in range(8)))
        held = len(_connections(store)._held)
        assert held >= 1
        before = given_back[0]
        for _ in range(50):
            await asyncio.sleep(0.1)
            if not _connections(store)._held:
                break
        assert _connections(store)._held == []
        assert given_back[0] - before == held, "the idle connections did not go back to the pool"
        assert await store.get_run("t", run_id) is not None  # and the store goes on


async def _one_value(sql: str, *arguments: object) -> object:
    conn = await connect()
    try:
        return await conn.fetchval(sql, *arguments)
    finally:
        await conn.close()


async def test_a_wait_cancelled_while_it_asks_lets_the_ask_finish(schema: str) -> None:
    # Cut off mid-statement, asyncpg would ask the server to cancel it on a new connection;
    # the store lets the statement run on instead (here: until a row lock it waits for is
    # free), and its waiter stops at once.
    async with PostgresStore(test_dsn(), schema=schema, max_size=4) as store:
        await store.migrate()
        run_id = await admit(store)

        async def asking() -> bool:
            waiting = await _one_value(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%watched_until%' AND query LIKE $1",
                f"%{schema}.runs%",
            )
            return bool(waiting)

        async def watched() -> bool:
            sql = f"SELECT watched_until IS NOT NULL FROM {schema}.runs WHERE run_id = $1"
            return bool(await _one_value(sql, run_id))

        holder = await connect()
        try:
            locked = holder.transaction()
            await locked.start()
            await holder.execute(
                f"SELECT 1 FROM {schema}.runs WHERE run_id = $1 FOR UPDATE", run_id
            )
            waiter = asyncio.create_task(store.wait(run_id, 0, 30.0))
            await eventually(asking, "the store's statement waiting on the row lock")
            waiter.cancel()
            async with asyncio.timeout(1):
                with pytest.raises(asyncio.CancelledError):
                    await waiter
            await locked.rollback()
        finally:
            await holder.close()
        # The statement the waiter left ran to its end: the run is marked watched (a
        # statement cut off would have left it unmarked).
        await eventually(watched, "the store's statement finishing")
        assert await store.read(run_id), "the store goes on serving after the dropped ask"

"""PostgresStore's claim of any run: one statement, whose `AttemptStarted` record the server
writes byte for byte as `record_json` writes it, and whose lost answer is recognised by the
claim's token when it is sent again, so no run is left leased to a claim nobody heard."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import AsyncIterator

import pytest

from bench._agent import StepModel, admit_runs, step
from psych_core import Record
from psych_core.ports import record_json, started_record
from psych_runtime import Runtime, Worker
from psych_store_postgres import PostgresStore
from psych_store_postgres._leases import started_tail
from psych_store_postgres._sql import started_body
from tests._postgres import connect, fresh_schema, store_behind_proxy, test_dsn
from tests.contract.test_postgres_store import LEASE, admit

pytestmark = pytest.mark.contract

UTC = dt.UTC


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


def _names(count: int) -> list[str]:
    """Run ids and worker names that test JSON's escapes: quotes, backslashes, every control
    character, non-ASCII letters, characters outside the BMP, the separators JavaScript
    escapes and a slash; then random strings over all of them (PostgreSQL's text holds no
    NUL)."""
    fixed = ["run-1", 'a"b', "a\\b", "a/b", "é", "日本", "\U0001f600", "\u2028\u2029", "\x7f"]
    fixed += [f"c{chr(code)}c" for code in range(1, 32)]
    alphabet = "".join(fixed) + "abcXYZ019-_:. "
    chance = random.Random(19)
    drawn = ["".join(chance.choices(alphabet, k=chance.randint(1, 40))) for _ in range(count)]
    return fixed + drawn


def _times(count: int) -> list[dt.datetime]:
    """Times with no microseconds, with trailing zeros in them, and random ones."""
    base = dt.datetime(2026, 12, 6, 7, 0, 0, tzinfo=UTC)
    fixed = [base.replace(microsecond=us) for us in (0, 1, 10, 100_000, 120_000, 999_999)]
    fixed += [
        dt.datetime(2000, 1, 1, tzinfo=UTC),
        dt.datetime(2099, 12, 31, 23, 59, 59, tzinfo=UTC),
    ]
    chance = random.Random(6)
    span = int(dt.timedelta(days=365 * 80).total_seconds() * 1_000_000)
    start = dt.datetime(2000, 1, 1, tzinfo=UTC)
    drawn = [start + dt.timedelta(microseconds=chance.randrange(span)) for _ in range(count)]
    return fixed + drawn


async def test_the_server_writes_a_started_record_as_record_json_does() -> None:
    names, times = _names(300), _times(300)
    chance = random.Random(12)
    cases = [
        (
            names[index % len(names)],
            chance.choice([0, 1, 7, 2**31, 2**62]),
            chance.choice([1, 2, 9, 2**31 - 1]),
            times[index % len(times)],
            names[(index * 7 + 3) % len(names)],
        )
        for index in range(max(len(names), len(times)))
    ]
    statement = f"""
        SELECT {started_body("r", "s", "a", "t", "w")}
        FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::timestamptz[], $5::bytea[])
            WITH ORDINALITY AS x(r, s, a, t, w, ord)
        ORDER BY ord
    """
    conn = await connect()
    try:
        written = await conn.fetch(
            statement,
            [case[0] for case in cases],
            [case[1] for case in cases],
            [case[2] for case in cases],
            [case[3] for case in cases],
            [started_tail(case[4]) for case in cases],
        )
    finally:
        await conn.close()
    assert len(written) == len(cases)
    for (run_id, seq, attempt, at, worker), (body,) in zip(cases, written, strict=True):
        expected = record_json(started_record(run_id, seq, attempt, at, worker))
        assert body == expected, (run_id, seq, attempt, at, worker)


async def test_a_claim_is_recorded_as_its_claim_says(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema, max_size=2) as store:
        await store.migrate()
        admitted = [await admit(store) for _ in range(5)]
        claims = []
        for worker in ["w-1", 'w"2\\', "wörker 3", "w\n4", "w-5"]:
            claim = await store.claim(worker, LEASE)
            assert claim is not None
            claims.append(claim)
        assert [claim.run_id for claim in claims] == admitted, "oldest first"
        conn = await connect()
        try:
            for claim in claims:
                body = await conn.fetchval(
                    f"SELECT body FROM {schema}.records WHERE run_id = $1 AND seq = 1",
                    claim.run_id,
                )
                assert body == record_json(claim.record)
                row = await store.get_run("t", claim.run_id)
                assert row is not None
                assert (row.status, row.attempt, row.next_seq) == ("running", 1, 2)
                assert row.lease_owner == claim.record.body.worker_id  # type: ignore[union-attr]
                assert row.lease_expires_at == claim.lease_expires_at
                assert claim.lease_expires_at == claim.record.at + LEASE
                assert (await store.read(claim.run_id))[1] == claim.record
        finally:
            await conn.close()


async def test_a_claim_whose_answer_was_lost_returns_the_run_it_took(schema: str) -> None:
    async with store_behind_proxy(schema, max_size=2) as (proxy, store):
        assert await store.claim("warm", LEASE, run_id=await admit(store)) is not None
        await admit(store)
        assert await store.claim("warm", LEASE) is not None  # the claim's statement prepared
        first, second = await admit(store), await admit(store)
        proxy.cut_next_answer()  # the server claimed `first`; the worker never hears it
        claim = await store.claim("worker-1", LEASE)
        assert proxy.answer_cut == 1, "the claim's answer was lost"
        assert claim is not None and (claim.run_id, claim.attempt) == (first, 1)
        log = await store.read(first)
        assert [(record.seq, record.attempt) for record in log] == [(0, 0), (1, 1)]
        assert log[1] == claim.record
        row = await store.get_run("t", first)
        assert row is not None and (row.attempt, row.lease_owner) == (1, "worker-1")
        # The second run was not taken by the claim sent again.
        after = await store.claim("worker-1", LEASE)
        assert after is not None and (after.run_id, after.attempt) == (second, 1)


async def test_a_claim_cut_before_it_was_sent_takes_a_run_once(schema: str) -> None:
    async with store_behind_proxy(schema, max_size=2) as (proxy, store):
        run_id = await admit(store)
        assert await store.claim("warm", LEASE) is not None
        later = await admit(store)
        proxy.cut_all()
        claim = await store.claim("worker-1", LEASE)
        assert claim is not None and (claim.run_id, claim.attempt) == (later, 1)
        log: list[Record] = await store.read(later)
        assert [(record.seq, record.attempt) for record in log] == [(0, 0), (1, 1)]
        assert await store.claim("worker-1", LEASE) is None
        row = await store.get_run("t", run_id)
        assert row is not None and row.lease_owner == "warm"


async def test_a_first_claim_brings_record_0_and_a_later_one_nothing(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema, max_size=2) as store:
        await store.migrate()
        run_id = await admit(store)
        first = await store.claim("w-1", LEASE)
        assert first is not None and first.log is not None
        assert [*first.log, first.record] == await store.read(run_id)
        await store.release(run_id, first.attempt)
        again = await store.claim("w-2", LEASE)
        assert again is not None and again.run_id == run_id
        assert again.log is None, "a later attempt's log is longer: the attempt reads it"


async def test_a_worker_does_not_read_the_log_of_a_run_it_claims_first(schema: str) -> None:
    # Per run of 2 tool calls: its claim and its 5 appends (3 model turns, 2 results); no
    # read of its log, which came with the claim. One claim more finds nothing left.
    async with store_behind_proxy(schema, min_size=1, max_size=1) as (proxy, store):
        runtime = Runtime(model=StepModel(2), tools=[step])
        await admit_runs(store, 2, 2)
        await Worker(store, runtime, poll_interval=0.01).run_until_idle()  # statements prepared
        await admit_runs(store, 3, 2)
        proxy.sent.clear()
        await Worker(store, runtime, poll_interval=0.01).run_until_idle()
        assert proxy.round_trips == 3 * (1 + 5) + 1, proxy.sent

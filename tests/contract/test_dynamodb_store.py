"""DynamoDBStore passes the store contract suite against moto's DynamoDB server, each test on
a table of its own; then what is its own: the transaction limits, migrations (two processes
at once), the table's shape, clocks, and errors translated."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from psych_core import (
    Batch,
    Claim,
    Conflict,
    InboxPending,
    LeaseLost,
    NewRun,
    Notify,
    Record,
    Resume,
    RunAdmitted,
    RunIndex,
    RunQuery,
    SchemaVersion,
    Scope,
    Store,
    StoreError,
    StoreLimits,
    StoreUnavailable,
    ToolCallFinished,
)
from psych_runtime.testing.store_contract import StoreContract
from psych_store_dynamodb import DEFAULT_LIMITS, SCHEMA_VERSION, DynamoDBStore
from psych_store_dynamodb._layout import SPEC_SK, shard_of, spec_pk
from tests._spec_once import VERSION as SPEC_VERSION
from tests._spec_once import check_read_once_and_written_once

pytestmark = pytest.mark.contract

ENDPOINT = os.environ.get("PSYCH_TEST_DYNAMODB_ENDPOINT", "http://127.0.0.1:4566")
REGION = "us-east-1"
START = "scripts/services/moto.sh start"
PROCESS = Path(__file__).with_name("_dynamodb_process.py")
LEASE = dt.timedelta(seconds=60)
RUNNING = RunIndex(status="running")


def _session() -> Any:  # an aioboto3.Session: aioboto3 ships no types
    import aioboto3  # type: ignore[import-untyped]

    return aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


SESSION = _session()


def new_table() -> str:
    return f"psych-test-{uuid.uuid4().hex}"


def open_store(table: str | None = None, **options: object) -> DynamoDBStore:
    return DynamoDBStore(
        table or new_table(),
        endpoint_url=ENDPOINT,
        region_name=REGION,
        session=SESSION,
        retries=1,
        **options,  # type: ignore[arg-type]
    )


async def migrated(store: DynamoDBStore) -> DynamoDBStore:
    try:
        await store.migrate()
    except StoreUnavailable as exc:
        await store.close()
        pytest.fail(
            f"moto's DynamoDB server does not answer at {ENDPOINT} ({exc}); start it with "
            f"`{START}` (or scripts/dev-services.sh start) and export the "
            "PSYCH_TEST_DYNAMODB_ENDPOINT it prints"
        )
    return store


async def drop(store: DynamoDBStore) -> None:
    async with SESSION.client("dynamodb", endpoint_url=ENDPOINT, region_name=REGION) as client:
        await client.delete_table(TableName=store.table)
    await store.close()


class TestDynamoDBStore(StoreContract):
    async def create_store(self) -> DynamoDBStore:
        return await migrated(open_store())

    async def close_store(self, store: Store) -> None:
        assert isinstance(store, DynamoDBStore)
        await drop(store)


# -- what is DynamoDB's own ----------------------------------------------------------------


@pytest.fixture
async def store() -> AsyncIterator[DynamoDBStore]:
    opened = await migrated(open_store())
    try:
        yield opened
    finally:
        await drop(opened)


@asynccontextmanager
async def raw_client() -> AsyncIterator[Any]:
    async with SESSION.client("dynamodb", endpoint_url=ENDPOINT, region_name=REGION) as client:
        yield client


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def admission(run_id: str | None = None, tenant: str = "t") -> tuple[NewRun, Record]:
    run_id = run_id or f"run-{uuid.uuid4().hex}"
    first = Record(
        run_id=run_id,
        seq=0,
        attempt=0,
        at=utc_now(),
        body=RunAdmitted(
            agent="a", spec_version="sha256:s", input="hi", scope=Scope(tenant=tenant)
        ),
    )
    return NewRun(run_id=run_id, tenant=tenant, agent="a", spec_version="sha256:s"), first


async def admit(store: Store, run_id: str | None = None, tenant: str = "t") -> str:
    run, first = admission(run_id, tenant)
    assert await store.create_run(run, first) == (run.run_id, True)
    return run.run_id


async def admit_and_claim(store: Store, ttl: dt.timedelta = LEASE) -> Claim:
    run_id = await admit(store)
    claim = await store.claim("worker-1", ttl, run_id=run_id)
    assert claim is not None
    return claim


def entry(run_id: str, seq: int, attempt: int, payload: str = "x") -> Record:
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=utc_now(),
        body=ToolCallFinished(call_id=f"{seq}.0", result=payload),
    )


def sized(run_id: str, seq: int, attempt: int, size: int) -> Record:
    base = len(entry(run_id, seq, attempt, "").model_dump_json().encode())
    record = entry(run_id, seq, attempt, "a" * (size - base))
    assert len(record.model_dump_json().encode()) == size
    return record


def batch(records: list[Record], index: RunIndex = RUNNING, **options: Any) -> Batch:
    return Batch(tuple(records), f"batch-{uuid.uuid4().hex}", index, **options)


# -- limits: one append is one transaction -------------------------------------------------


def test_the_declared_limits_fit_one_transaction_and_one_item() -> None:
    limits = DEFAULT_LIMITS
    assert open_store().limits == limits
    assert 1 + limits.max_append_records <= 100, "the run row and every record in one transaction"
    assert limits.max_append_bytes + 100 * 4096 <= 4_000_000, "4 MB per transaction"
    assert limits.max_record_bytes + 4096 <= 400_000, "400 KB per item, keys included"
    # Room is left for notices: 11 runs notified (3 items each) beside a full batch.
    assert 1 + limits.max_append_records + 11 * 3 <= 100


@pytest.mark.parametrize(
    "limits",
    [
        StoreLimits(max_record_bytes=400_000, max_append_records=64, max_append_bytes=3_000_000),
        StoreLimits(max_record_bytes=1024, max_append_records=100, max_append_bytes=3_000_000),
        StoreLimits(max_record_bytes=1024, max_append_records=64, max_append_bytes=4_000_000),
    ],
)
def test_limits_dynamodb_cannot_keep_are_refused(limits: StoreLimits) -> None:
    with pytest.raises(ValueError, match="DynamoDBStore cannot keep"):
        open_store(limits=limits)


@pytest.mark.parametrize("ceiling", [0.0, -1.0])
def test_a_wait_that_would_never_pause_is_refused(ceiling: float) -> None:
    with pytest.raises(ValueError, match="poll_ceiling must be positive"):
        open_store(poll_ceiling=ceiling)


async def test_a_record_at_the_limit_with_the_longest_ids_fits_in_one_item(
    store: DynamoDBStore,
) -> None:
    run_id = "r" * (512 - 4) + "🌍"  # 512 UTF-8 bytes: the longest run id the store keeps
    assert len(run_id.encode()) == 512
    await admit(store, run_id)
    claim = await store.claim("w", LEASE, run_id=run_id)
    assert claim is not None
    record = sized(run_id, 2, 1, store.limits.max_record_bytes)
    long_batch = Batch((record,), "b" * 512, RUNNING)
    await store.append(run_id, 1, long_batch)
    assert await store.read(run_id, after_seq=1) == [record]
    with pytest.raises(StoreError, match="longer than 512 bytes"):
        await store.create_run(*admission(run_id + "x"))


async def test_notices_count_toward_the_hundred_items_of_a_transaction(
    store: DynamoDBStore,
) -> None:
    # A full batch (64 records) and notices to 11 waiting runs: 1 + 64 + 11 * 3 = 98 items.
    parents = []
    for _ in range(12):
        parent = await admit_and_claim(store)
        await store.append(
            parent.run_id,
            1,
            batch([entry(parent.run_id, 2, 1)], RunIndex(status="waiting", waiting="children")),
        )
        parents.append(parent.run_id)
    claim = await admit_and_claim(store)
    records = [entry(claim.run_id, 2 + i, 1) for i in range(64)]

    def notices(count: int) -> tuple[Notify, ...]:
        return tuple(
            Notify(run_id=parent, key=f"child:{claim.run_id}", signal=Resume(payload=i))
            for i, parent in enumerate(parents[:count])
        )

    with pytest.raises(StoreError, match="101 DynamoDB transaction items") as refused:
        await store.append(claim.run_id, 1, batch(records, notify=notices(12)))
    assert not isinstance(refused.value, StoreUnavailable)
    assert len(await store.read(claim.run_id)) == 2, "nothing written"
    for parent_id in parents:
        assert await store.signals(parent_id) == []
    await store.append(claim.run_id, 1, batch(records, notify=notices(11)))
    assert len(await store.read(claim.run_id)) == 66
    for i, parent_id in enumerate(parents[:11]):
        assert [e.signal for e in await store.signals(parent_id)] == [Resume(payload=i)]
    woken = {row.run_id for row in await store.due(utc_now(), limit=50)}
    assert woken == set(parents[:11])


async def test_a_batch_cannot_notify_its_own_run(store: DynamoDBStore) -> None:
    claim = await admit_and_claim(store)
    own = Notify(run_id=claim.run_id, key="k", signal=Resume())
    with pytest.raises(StoreError, match="cannot notify its own run"):
        await store.append(claim.run_id, 1, batch([entry(claim.run_id, 2, 1)], notify=(own,)))
    assert len(await store.read(claim.run_id)) == 2


# -- appends from more than one process ----------------------------------------------------


async def test_another_process_re_sending_a_batch_writes_it_once(store: DynamoDBStore) -> None:
    claim = await admit_and_claim(store)
    sent = batch([entry(claim.run_id, 2, 1), entry(claim.run_id, 3, 1)])
    await store.append(claim.run_id, 1, sent)
    async with open_store(store.table) as other:  # knows nothing of the run yet
        assert (await other.append(claim.run_id, 1, sent)).inbox_last == 0
        with pytest.raises(Conflict):
            await other.append(claim.run_id, 1, batch([entry(claim.run_id, 3, 1, "other")]))
    assert await store.read(claim.run_id, after_seq=1) == list(sent.records)


async def test_an_append_learns_of_signals_another_process_sent(store: DynamoDBStore) -> None:
    claim = await admit_and_claim(store)
    async with open_store(store.table) as other:
        await other.signal("t", claim.run_id, Resume(payload=1), "one")
        await other.signal("t", claim.run_id, Resume(payload=2), "two")
    result = await store.append(claim.run_id, 1, batch([entry(claim.run_id, 2, 1)]))
    assert result.inbox_last == 2, "the count this process had was stale; the write said so"
    suspend = batch([entry(claim.run_id, 3, 1)], RunIndex(status="waiting", waiting="external"))
    with pytest.raises(InboxPending):
        await store.append(claim.run_id, 1, suspend)


# -- clocks: leases use the caller's, safety never does ------------------------------------


async def test_a_claimer_whose_clock_runs_ahead_takes_the_lease_and_the_holder_is_fenced(
    store: DynamoDBStore,
) -> None:
    holder = await admit_and_claim(store, ttl=dt.timedelta(seconds=30))
    row = await store.get_run("t", holder.run_id)
    assert row is not None
    ahead_by = dt.timedelta(seconds=20)  # less than the lease: the lease still holds
    async with open_store(store.table, clock=lambda: utc_now() + ahead_by) as skewed:
        assert await skewed.claim("skewed", LEASE, run_id=holder.run_id) is None
    far_ahead = dt.timedelta(seconds=45)  # more than the lease: it looks expired
    async with open_store(store.table, clock=lambda: utc_now() + far_ahead) as skewed:
        taken = await skewed.claim("skewed", LEASE, run_id=holder.run_id)
        assert taken is not None
        assert taken.attempt == 2
    # The holder's own clock says its lease is good for 30 s more; the fence refuses it.
    with pytest.raises(LeaseLost):
        await store.append(holder.run_id, 1, batch([entry(holder.run_id, 3, 1)]))
    with pytest.raises(LeaseLost):
        await store.renew(holder.run_id, 1, LEASE)
    log = await store.read(holder.run_id)
    assert [(r.seq, r.attempt) for r in log] == [(0, 0), (1, 1), (2, 2)]


# -- the table: what is kept where ---------------------------------------------------------


async def test_the_items_are_laid_out_as_the_readme_says(store: DynamoDBStore) -> None:
    run, first = admission(tenant="t")
    run = replace(run, idempotency_key="order-1", request_hash="h")
    await store.create_run(run, first)
    claim = await store.claim("worker-1", LEASE, run_id=run.run_id)
    assert claim is not None
    two = batch([entry(run.run_id, 2, 1), entry(run.run_id, 3, 1)])
    await store.append(run.run_id, 1, two)
    await store.signal("t", run.run_id, Resume(payload="p"), "resume-1")
    await store.put_spec("sha256:s", "{}")
    async with raw_client() as client:
        reply = await client.query(
            TableName=store.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"RUN#{run.run_id}"}},
            ConsistentRead=True,
        )
        items = {item["sk"]["S"]: item for item in reply["Items"]}
        assert sorted(items) == sorted(
            [
                "#RUN",
                *(f"LOG#{seq:020d}" for seq in range(4)),
                f"INBOX#{1:020d}",
                "KEY#" + hashlib.sha256(b"resume-1").hexdigest(),
            ]
        )
        assert items[f"LOG#{2:020d}"]["body"]["S"] == two.records[0].model_dump_json()
        assert items[f"LOG#{2:020d}"]["batch_id"]["S"] == two.batch_id
        assert "batch_id" not in items[f"LOG#{3:020d}"], "only a batch's first record"
        assert items[f"LOG#{3:020d}"]["attempt"]["N"] == "1"
        row = items["#RUN"]
        assert (row["status"]["S"], row["next_seq"]["N"], row["inbox_last"]["N"]) == (
            "running",
            "4",
            "1",
        )
        assert row["lease_owner"]["S"] == "worker-1"
        assert row["claim_at"]["S"].startswith(row["runnable_at"]["S"] + "|")
        assert "wake_at" not in row, "only waiting runs are in the due index"
        spec = await client.get_item(
            TableName=store.table, Key={"pk": {"S": "SPEC#sha256:s"}, "sk": {"S": "#SPEC"}}
        )
        assert spec["Item"]["spec"]["S"] == "{}"
        schema = await client.get_item(
            TableName=store.table, Key={"pk": {"S": "#SCHEMA"}, "sk": {"S": "#SCHEMA"}}
        )
        assert schema["Item"]["version"]["N"] == str(SCHEMA_VERSION)
        assert schema["Item"]["claim_shards"]["N"] == "4"


async def _index_ids(store: DynamoDBStore, index: str) -> set[str]:
    found: set[str] = set()
    async with raw_client() as client:
        for shard in range(4):
            reply = await client.query(
                TableName=store.table,
                IndexName=index,
                KeyConditionExpression="#s = :s",
                ExpressionAttributeNames={"#s": "shard"},
                ExpressionAttributeValues={":s": {"S": str(shard)}},
            )
            found |= {item["pk"]["S"].removeprefix("RUN#") for item in reply["Items"]}
    return found


async def test_the_claim_and_due_indexes_are_sparse(store: DynamoDBStore) -> None:
    queued = await admit(store)
    running = await admit_and_claim(store)
    ended = await admit_and_claim(store)
    await store.append(ended.run_id, 1, batch([entry(ended.run_id, 2, 1)], RunIndex("completed")))
    person = await admit_and_claim(store)
    await store.append(
        person.run_id, 1, batch([entry(person.run_id, 2, 1)], RunIndex("waiting", "approval"))
    )
    timed = await admit_and_claim(store)
    due_at = utc_now() + dt.timedelta(hours=1)
    await store.append(
        timed.run_id,
        1,
        batch([entry(timed.run_id, 2, 1)], RunIndex("waiting", "external", due_at)),
    )
    claimable = await _index_ids(store, "claimable")
    assert claimable == {queued, running.run_id, timed.run_id}
    assert await _index_ids(store, "due") == {timed.run_id}
    await store.signal("t", person.run_id, Resume(), "wake")
    assert await _index_ids(store, "due") == {timed.run_id, person.run_id}


async def test_runs_spread_over_the_shards_and_are_claimed_oldest_first(
    store: DynamoDBStore,
) -> None:
    run_ids = [await admit(store) for _ in range(16)]
    shards = {shard_of(run_id, 4) for run_id in run_ids}
    assert len(shards) > 1, "16 runs on one shard of four: the hash does not spread"
    claims = [await store.claim("w", LEASE) for _ in run_ids]
    assert [claim.run_id for claim in claims if claim] == run_ids
    assert await store.claim("w", LEASE) is None


# -- migrations ----------------------------------------------------------------------------


async def test_migrations_run_at_once_from_two_processes(tmp_path: Path) -> None:
    table, go = new_table(), tmp_path / "go"

    def race() -> list[str]:
        processes = [
            subprocess.Popen(
                [sys.executable, str(PROCESS), ENDPOINT, table, str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
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

    assert await asyncio.to_thread(race) == ["migrated\n", "migrated\n"]
    store = open_store(table)
    try:
        await store.migrate()  # again: nothing to do
        async with raw_client() as client:
            described = (await client.describe_table(TableName=table))["Table"]
            indexes = {index["IndexName"] for index in described["GlobalSecondaryIndexes"]}
            assert indexes == {"claimable", "due", "by_tenant", "by_parent"}
            schema = await client.get_item(
                TableName=table, Key={"pk": {"S": "#SCHEMA"}, "sk": {"S": "#SCHEMA"}}
            )
        steps = schema["Item"]["steps"]["L"]
        assert [step["M"]["version"]["N"] for step in steps] == ["1"], "recorded once"
        await admit(store)
    finally:
        await drop(store)


async def test_migrate_again_keeps_the_data(store: DynamoDBStore) -> None:
    run_id = await admit(store)
    await store.migrate()
    assert len(await store.read(run_id)) == 1


async def test_a_missing_index_is_added_by_migrate() -> None:
    store = open_store()
    async with raw_client() as client:
        await client.create_table(
            TableName=store.table,
            AttributeDefinitions=[
                {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
    try:
        await store.migrate()
        parent = await admit(store)
        run, first = admission()
        await store.create_run(replace(run, parent_run_id=parent), first)
        page = await store.list_runs("t", RunQuery(parent_run_id=parent))
        assert [row.run_id for row in page.items] == [run.run_id]
    finally:
        await drop(store)


async def test_a_table_of_another_shape_is_refused() -> None:
    store = open_store()
    async with raw_client() as client:
        await client.create_table(
            TableName=store.table,
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
    try:
        with pytest.raises(StoreError, match="not keyed as this store needs"):
            await store.migrate()
    finally:
        await drop(store)


async def test_a_schema_newer_than_the_package_is_refused(store: DynamoDBStore) -> None:
    async with raw_client() as client:
        await client.update_item(
            TableName=store.table,
            Key={"pk": {"S": "#SCHEMA"}, "sk": {"S": "#SCHEMA"}},
            UpdateExpression="SET version = :v",
            ExpressionAttributeValues={":v": {"N": str(SCHEMA_VERSION + 1)}},
        )
    with pytest.raises(StoreError, match="upgrade psych-store-dynamodb"):
        await store.migrate()


async def test_asking_a_missing_table_its_version_creates_nothing() -> None:
    async with open_store() as store:
        found = await store.schema_version()
        assert found == SchemaVersion(applied=0, known=SCHEMA_VERSION)
        assert found.state == "behind"
        async with raw_client() as client:
            tables = await client.list_tables()
        assert store.table not in tables["TableNames"]


async def test_a_migrated_table_is_current(store: DynamoDBStore) -> None:
    found = await store.schema_version()
    assert found == SchemaVersion(applied=SCHEMA_VERSION, known=SCHEMA_VERSION)
    assert found.state == "current"


async def test_a_table_a_newer_release_migrated_is_ahead(store: DynamoDBStore) -> None:
    async with raw_client() as client:
        await client.update_item(
            TableName=store.table,
            Key={"pk": {"S": "#SCHEMA"}, "sk": {"S": "#SCHEMA"}},
            UpdateExpression="SET version = :v",
            ExpressionAttributeValues={":v": {"N": str(SCHEMA_VERSION + 1)}},
        )
    found = await store.schema_version()  # said, not refused as migrate() refuses it
    assert found == SchemaVersion(applied=SCHEMA_VERSION + 1, known=SCHEMA_VERSION)
    assert found.state == "ahead"


async def test_every_process_must_use_the_tables_shard_count(store: DynamoDBStore) -> None:
    async with open_store(store.table, claim_shards=2) as other:
        with pytest.raises(StoreError, match="claim_shards=4"):
            await other.migrate()


# -- errors --------------------------------------------------------------------------------


async def test_a_table_that_does_not_exist_says_to_migrate() -> None:
    async with open_store() as store:
        with pytest.raises(StoreError, match=r"store\.migrate\(\)") as missing:
            await store.get_run("t", "run-1")
        assert not isinstance(missing.value, StoreUnavailable)


async def test_an_endpoint_that_does_not_answer_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe closes
    store = DynamoDBStore(
        new_table(),
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name=REGION,
        session=SESSION,
        retries=0,
        connect_timeout=1,
    )
    async with store:
        with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
            await store.get_run("t", "run-1")


@asynccontextmanager
async def throttling_proxy(throttles: int) -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTP server on loopback in front of moto (fault injection): it answers the first
    `throttles` requests as DynamoDB does when a table is over its capacity, and forwards the
    rest. Yields its URL and the log of what it did with each request."""
    log: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        if len(log) < throttles:
            log.append("throttled")
            return web.json_response(
                {
                    "__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                    "message": "Rate of requests exceeds the allowed throughput.",
                },
                status=400,
                content_type="application/x-amz-json-1.0",
            )
        log.append("forwarded")
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        async with forward.post(ENDPOINT + request.path, data=body, headers=headers) as reply:
            return web.Response(
                body=await reply.read(),
                status=reply.status,
                content_type=reply.content_type,
            )

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    async with aiohttp.ClientSession() as forward:
        try:
            yield f"http://127.0.0.1:{port}", log
        finally:
            await runner.cleanup()


async def test_throttling_is_retried_with_backoff(store: DynamoDBStore) -> None:
    await store.put_spec("sha256:s", "{}")
    async with (
        throttling_proxy(2) as (url, log),
        DynamoDBStore(
            store.table, endpoint_url=url, region_name=REGION, session=SESSION, retries=3
        ) as throttled,
    ):
        assert await throttled.get_spec("sha256:s") == "{}"
    assert log == ["throttled", "throttled", "forwarded"]


async def test_throttling_past_the_retries_is_unavailable(store: DynamoDBStore) -> None:
    async with (
        throttling_proxy(100) as (url, log),
        DynamoDBStore(
            store.table, endpoint_url=url, region_name=REGION, session=SESSION, retries=1
        ) as throttled,
    ):
        with pytest.raises(StoreUnavailable, match="throttled GetItem") as refused:
            await throttled.get_run("t", "run-1")
    assert log == ["throttled", "throttled"], "one try and one retry"
    assert "capacity" in str(refused.value)


async def test_a_spec_version_is_read_once_and_written_once(store: DynamoDBStore) -> None:
    async def forget() -> None:
        async with raw_client() as client:
            key = {"pk": {"S": spec_pk(SPEC_VERSION)}, "sk": {"S": SPEC_SK}}
            await client.delete_item(TableName=store.table, Key=key)

    await check_read_once_and_written_once(store, forget, lambda: open_store(store.table))


async def test_a_closed_store_refuses_calls(store: DynamoDBStore) -> None:
    other = open_store(store.table)
    await other.get_spec("sha256:s")
    await other.close()
    await other.close()
    with pytest.raises(StoreError, match="closed"):
        await other.get_spec("sha256:s")


async def test_a_deletion_that_stopped_half_way_is_swept(store: DynamoDBStore) -> None:
    claim = await admit_and_claim(store)
    await store.append(claim.run_id, 1, batch([entry(claim.run_id, 2, 1)]))
    await store.signal("t", claim.run_id, Resume(), "k")
    async with raw_client() as client:  # as if delete_run stopped after its first step
        await client.delete_item(
            TableName=store.table, Key={"pk": {"S": f"RUN#{claim.run_id}"}, "sk": {"S": "#RUN"}}
        )
    again, first = admission(claim.run_id)
    assert await store.create_run(again, first) == (claim.run_id, True)
    assert await store.read(claim.run_id) == [first]
    assert await store.signals(claim.run_id) == []
    assert await store.signal("t", claim.run_id, Resume(), "k") == 1, "its keys went too"

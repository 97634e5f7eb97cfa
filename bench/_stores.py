"""Stores and raw floors for the benchmarks, by name."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from psych_runtime import MemoryStore
from psych_runtime.ports import AppendResult, Batch, Store

RECORD = json.dumps(
    {
        "run_id": "01JBENCHBENCHBENCHBENCHBEN",
        "seq": 3,
        "attempt": 1,
        "at": "2026-11-29T09:00:00Z",
        "body": {"type": "tool_call_finished", "call_id": "2.0", "result": {"index": 1, "done": 1}},
    }
)


def bench_url(store: str, name: str, workdir: Path) -> str:
    """A fresh store URL for one measure named `name` (a file, a schema, a table...)."""
    if store == "memory":
        return "memory:"
    if store == "sqlite":
        return f"sqlite:///{workdir / name}.sqlite"
    if store == "postgres":
        return _postgres_bench_url(name)
    if store == "mysql":
        return mysql_bench_url(name)
    if store == "dynamodb":
        return _dynamodb_bench_url(name)
    raise ValueError(f"no benchmark URL for store {store!r}: add a branch to bench_url")


async def discard(url: str) -> None:
    """Remove what a measure left on a server (a temporary folder holds the files)."""
    if url.startswith(("postgresql://", "postgres://")):
        await drop_postgres_schema(url)
    if url.startswith("mysql://"):
        await asyncio.to_thread(drop_mysql_database, url)
    if url.startswith("dynamodb://"):
        await _drop_dynamodb_table(url)


def open_bench_store(url: str) -> Store:
    """``memory:``, ``sqlite:///path`` or ``dynamodb://HOST:PORT/TABLE?region=R``."""
    if url == "memory:":
        return MemoryStore()
    if url.startswith("sqlite:///"):
        from psych_store_sqlite import SQLiteStore

        return SQLiteStore(url.removeprefix("sqlite://"))
    if url.startswith("dynamodb://"):
        from psych_store_dynamodb import DynamoDBStore

        # The table is created by migrate(); worker processes given the same URL share it.
        table, region, endpoint = _dynamodb_url(url)
        return DynamoDBStore(
            table, region_name=region, endpoint_url=endpoint, session=_dynamodb_session(endpoint)
        )
    if url.startswith(("postgresql://", "postgres://")):
        from psych_store_postgres import PostgresStore

        # The schema is the URL's `schema` query item; the rest is the DSN.
        dsn, schema = _postgres_url(url)
        return PostgresStore(dsn, schema=schema)
    if url.startswith("mysql://"):
        from psych_store_mysql import MySQLStore

        # The URL's database is created when missing; worker processes given it share it.
        _create_mysql_database(url)
        return MySQLStore(url)
    raise ValueError(f"no benchmark store for {url!r}")


@contextlib.asynccontextmanager
async def fresh_store(url: str) -> AsyncIterator[Store]:
    """The store at `url`, migrated, closed on the way out."""
    store = open_bench_store(url)
    try:
        await store.migrate()
        yield store
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


def count_appends(
    store: Store,
    stamps: list[float],
    batches: list[Batch] | None = None,
    *,
    cpu: list[float] | None = None,
    idle_s: float = 0.0,
) -> None:
    """From now on, note when each `store.append` returns in `stamps` (and its batch in
    `batches`): a benchmark's durable steps are its appends, whatever each one holds.

    Args:
        cpu: a one-element list that the CPU seconds spent in each append are added to.
        idle_s: an idle wait after each append (0: none), counted in `cpu`: the process
            sleeps, as it does waiting on a round trip (blocking is harmless for a run driven
            alone, and precise where the event loop's timers round a wait up to a
            millisecond).
    """
    original = store.append

    async def counted(run_id: str, attempt: int, batch: Batch) -> AppendResult:
        started = time.process_time()
        try:
            result = await original(run_id, attempt, batch)
            stamps.append(time.perf_counter())
            if batches is not None:
                batches.append(batch)
            if idle_s:
                time.sleep(idle_s)  # noqa: ASYNC251 (the process must sleep, see above)
            return result
        finally:
            if cpu is not None:
                cpu[0] += time.process_time() - started

    store.append = counted  # type: ignore[method-assign]


def floor_ms(url: str, steps: int, workdir: Path) -> float:
    """The raw floor: one INSERT and COMMIT per durable step, same durability settings."""
    if url == "memory:":
        log: list[str] = []
        started = time.perf_counter()
        for _ in range(steps):
            log.append(RECORD)
        return (time.perf_counter() - started) * 1000 / steps
    if url.startswith("sqlite:///"):
        path = workdir / "floor.sqlite"
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS floor (run_id TEXT, seq INTEGER, body TEXT, "
            "PRIMARY KEY (run_id, seq))"
        )
        started = time.perf_counter()
        for seq in range(steps):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO floor VALUES (?, ?, ?)", ("r", seq, RECORD))
            connection.execute("COMMIT")
        elapsed = time.perf_counter() - started
        connection.close()
        return elapsed * 1000 / steps
    if url.startswith("dynamodb://"):
        # No commit to pay for: DynamoDB makes each write durable before it answers. The floor
        # is one PutItem of one record per step, on the same client stack as the store.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, _dynamodb_floor_ms(url, steps)).result()
    if url.startswith(("postgresql://", "postgres://")):
        # One autocommit INSERT per step (one round trip, one commit) into a table like the
        # store's records, on the same driver, server and durability settings as the store.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, _postgres_floor_ms(url, steps)).result()
    if url.startswith("mysql://"):
        # One autocommit INSERT per step (one round trip, one commit) into a table like the
        # store's records, on the same driver and server (whose flush settings decide what a
        # commit costs) as the store.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, _mysql_floor_ms(url, steps)).result()
    raise ValueError(f"no floor for {url!r}")


def floor_runs_per_s(url: str, runs: int, steps: int, connections: int) -> float | None:
    """The raw floor's runs per second with `connections` runs in flight: a run is `steps`
    INSERT and COMMIT (PutItem on DynamoDB) in turn, as a benchmark run has durable steps, each
    connection (stream) takes the next run when it is done with one, until `runs` are done.
    None for the memory store, which has no connections."""
    if url == "memory:":
        return None
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite://"))
        return _sqlite_floor_runs_per_s(path, runs, steps, connections)
    if url.startswith("dynamodb://"):
        fleet = _dynamodb_floor_runs_per_s(url, runs, steps, connections)
    elif url.startswith(("postgresql://", "postgres://")):
        fleet = _postgres_floor_runs_per_s(url, runs, steps, connections)
    elif url.startswith("mysql://"):
        fleet = _mysql_floor_runs_per_s(url, runs, steps, connections)
    else:
        raise ValueError(f"no floor for {url!r}")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, fleet).result()


def _sqlite_floor_runs_per_s(path: Path, runs: int, steps: int, connections: int) -> float:
    """`connections` threads, each with its own connection to one file. SQLite lets one write
    transaction at a time through; the threads queue for it on a lock in this process, as the
    SQLite store's writers do, rather than in SQLite's busy handler, whose sleeps between
    retries would leave the file idle (about a quarter of the rate, measured)."""
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute(
        "CREATE TABLE IF NOT EXISTS floor (run_id TEXT, seq INTEGER, body TEXT, "
        "PRIMARY KEY (run_id, seq))"
    )
    setup.close()
    pending = iter(range(runs))
    taking, writing = threading.Lock(), threading.Lock()

    def next_run() -> int | None:
        with taking:
            return next(pending, None)

    def drive(connection: sqlite3.Connection) -> None:
        while (run := next_run()) is not None:
            for seq in range(steps):
                with writing:
                    connection.execute("BEGIN IMMEDIATE")
                    connection.execute(
                        "INSERT INTO floor VALUES (?, ?, ?)", (f"r{run}", seq, RECORD)
                    )
                    connection.execute("COMMIT")

    opened = []
    for _ in range(connections):
        connection = sqlite3.connect(
            path, isolation_level=None, timeout=600, check_same_thread=False
        )
        connection.execute("PRAGMA synchronous=FULL")
        opened.append(connection)
    try:
        with concurrent.futures.ThreadPoolExecutor(connections) as pool:
            started = time.perf_counter()
            for done in [pool.submit(drive, connection) for connection in opened]:
                done.result()
            elapsed = time.perf_counter() - started
    finally:
        for connection in opened:
            connection.close()
    return runs / elapsed


async def _fleet(
    runs: int, steps: int, connections: int, insert: Callable[[int, int, int], Awaitable[object]]
) -> float:
    """Runs per second for `connections` streams driving `runs` runs of `steps` inserts, where
    `insert(stream, run, seq)` is one durable write on the stream's own connection."""
    pending = iter(range(runs))

    async def drive(stream: int) -> None:
        for run in pending:
            for seq in range(steps):
                await insert(stream, run, seq)

    started = time.perf_counter()
    await asyncio.gather(*(drive(stream) for stream in range(connections)))
    return runs / (time.perf_counter() - started)


def _dynamodb_url(url: str) -> tuple[str, str | None, str | None]:
    """``dynamodb://HOST:PORT/TABLE?region=R`` (an endpoint over http, such as moto's) or
    ``dynamodb:///TABLE?region=R`` (AWS): (table, region, endpoint)."""
    parts = urlsplit(url)
    region = dict(parse_qsl(parts.query)).get("region")
    return parts.path.lstrip("/"), region, f"http://{parts.netloc}" if parts.netloc else None


def _dynamodb_bench_url(name: str) -> str:
    """A fresh table on PSYCH_TEST_DYNAMODB_ENDPOINT (moto's server by default)."""
    endpoint = os.environ.get("PSYCH_TEST_DYNAMODB_ENDPOINT", "http://127.0.0.1:4566")
    host = urlsplit(endpoint).netloc
    return f"dynamodb://{host}/psych-bench-{name}-{uuid.uuid4().hex[:8]}?region=us-east-1"


def _dynamodb_session(endpoint: str | None) -> Any:
    """An aioboto3 session; against a local endpoint (moto), test credentials unless the
    environment has some."""
    import aioboto3  # type: ignore[import-untyped]  # aioboto3 ships no type information

    if endpoint is not None and "AWS_ACCESS_KEY_ID" not in os.environ:
        return aioboto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    return aioboto3.Session()


async def _drop_dynamodb_table(url: str) -> None:
    table, region, endpoint = _dynamodb_url(url)
    async with _dynamodb_session(endpoint).client(
        "dynamodb", region_name=region, endpoint_url=endpoint
    ) as client:
        with contextlib.suppress(client.exceptions.ResourceNotFoundException):
            await client.delete_table(TableName=table)


@contextlib.asynccontextmanager
async def _dynamodb_floor_table(
    url: str, suffix: str, connections: int = 10
) -> AsyncIterator[tuple[Any, str]]:
    """(client, table): a table of its own for a floor measure, deleted after it."""
    from aiobotocore.config import AioConfig

    table, region, endpoint = _dynamodb_url(url)
    table = f"{table}-{suffix}-{uuid.uuid4().hex[:12]}"
    async with _dynamodb_session(endpoint).client(
        "dynamodb",
        region_name=region,
        endpoint_url=endpoint,
        config=AioConfig(max_pool_connections=connections),
    ) as client:
        await client.create_table(
            TableName=table,
            AttributeDefinitions=[
                {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        await client.get_waiter("table_exists").wait(TableName=table)
        try:
            yield client, table
        finally:
            await client.delete_table(TableName=table)


def _log_item(run: str, seq: int) -> dict[str, Any]:
    return {"pk": {"S": f"RUN#{run}"}, "sk": {"S": f"LOG#{seq:020d}"}, "body": {"S": RECORD}}


async def _dynamodb_floor_ms(url: str, steps: int) -> float:
    async with _dynamodb_floor_table(url, "floor") as (client, table):
        started = time.perf_counter()
        for seq in range(steps):
            await client.put_item(TableName=table, Item=_log_item("r", seq))
        elapsed = time.perf_counter() - started
    return elapsed * 1000 / steps


async def _dynamodb_floor_runs_per_s(url: str, runs: int, steps: int, connections: int) -> float:
    async with _dynamodb_floor_table(url, "floor32", connections) as (client, table):

        async def put(stream: int, run: int, seq: int) -> object:
            return await client.put_item(TableName=table, Item=_log_item(f"r{run}", seq))

        return await _fleet(runs, steps, connections, put)


# -- PostgreSQL --------------------------------------------------------------------------------

POSTGRES_DSN = "postgresql://psych:psych@127.0.0.1:5432/psych_test"
"""The benchmark's server unless PSYCH_BENCH_POSTGRES_DSN or PSYCH_TEST_POSTGRES_DSN says."""


def _postgres_bench_url(name: str) -> str:
    import os

    dsn = (
        os.environ.get("PSYCH_BENCH_POSTGRES_DSN")
        or os.environ.get("PSYCH_TEST_POSTGRES_DSN")
        or POSTGRES_DSN
    )
    return f"{dsn}?schema=bench_{name}_{uuid.uuid4().hex[:10]}"


def _postgres_url(url: str) -> tuple[str, str]:
    """(DSN, schema) of ``postgresql://...?schema=NAME``."""
    from urllib.parse import urlencode, urlunsplit

    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    schema = options.pop("schema", "psych")
    return urlunsplit(parts._replace(query=urlencode(options))), schema


async def _postgres_floor_ms(url: str, steps: int) -> float:
    import asyncpg

    dsn, schema = _postgres_url(url)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await conn.execute(
            f"CREATE TABLE {schema}.floor (run_id text, seq bigint, body bytea, "
            "PRIMARY KEY (run_id, seq))"
        )
        body = RECORD.encode()
        insert = f"INSERT INTO {schema}.floor VALUES ($1, $2, $3)"
        await conn.execute(insert, "warm", 0, body)
        started = time.perf_counter()
        for seq in range(steps):
            await conn.execute(insert, "r", seq, body)
        elapsed = time.perf_counter() - started
    finally:
        await conn.close()
    return elapsed * 1000 / steps


async def _postgres_floor_runs_per_s(url: str, runs: int, steps: int, connections: int) -> float:
    import asyncpg

    dsn, schema = _postgres_url(url)
    opened = [await asyncpg.connect(dsn) for _ in range(connections)]
    try:
        await opened[0].execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await opened[0].execute(
            f"CREATE TABLE {schema}.floor32 (run_id text, seq bigint, body bytea, "
            "PRIMARY KEY (run_id, seq))"
        )
        body = RECORD.encode()
        sql = f"INSERT INTO {schema}.floor32 VALUES ($1, $2, $3)"
        for index, conn in enumerate(opened):
            await conn.execute(sql, f"warm{index}", 0, body)

        async def insert(stream: int, run: int, seq: int) -> object:
            return await opened[stream].execute(sql, f"r{run}", seq, body)

        return await _fleet(runs, steps, connections, insert)
    finally:
        for conn in opened:
            await conn.close()


async def drop_postgres_schema(url: str) -> None:
    """Remove the schema a benchmark measure made."""
    import asyncpg

    dsn, schema = _postgres_url(url)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


# -- MySQL / MariaDB ---------------------------------------------------------------------------

MYSQL_DSN = "mysql://root@127.0.0.1:3306/psych_test"
"""The benchmark's server unless PSYCH_BENCH_MYSQL_DSN or PSYCH_TEST_MYSQL_DSN says."""


def mysql_bench_url(name: str) -> str:
    """A URL for one measure: a fresh database named after it, beside the DSN's database."""
    import os
    from urllib.parse import urlunsplit

    dsn = (
        os.environ.get("PSYCH_BENCH_MYSQL_DSN")
        or os.environ.get("PSYCH_TEST_MYSQL_DSN")
        or MYSQL_DSN
    )
    parts = urlsplit(dsn)
    base = parts.path.lstrip("/") or "psych_test"
    return urlunsplit(parts._replace(path=f"/{base}_bench_{name}_{uuid.uuid4().hex[:8]}"))


def _mysql_connect_args(url: str) -> tuple[dict[str, object], str]:
    """(aiomysql/PyMySQL connect arguments without a database, the URL's database)."""
    from urllib.parse import unquote

    parts = urlsplit(url)
    args: dict[str, object] = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": unquote(parts.username or "root"),
        "password": unquote(parts.password or ""),
    }
    return args, unquote(parts.path.lstrip("/"))


def _mysql_admin(url: str, sql: str) -> None:
    import pymysql  # type: ignore[import-untyped]  # PyMySQL ships no type information

    args, _ = _mysql_connect_args(url)
    connection = pymysql.connect(**args, autocommit=True)
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
    finally:
        connection.close()


def _create_mysql_database(url: str) -> None:
    database = _mysql_connect_args(url)[1]
    _mysql_admin(
        url,
        f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    )


def drop_mysql_database(url: str) -> None:
    """Remove the database a benchmark measure made."""
    _mysql_admin(url, f"DROP DATABASE IF EXISTS `{_mysql_connect_args(url)[1]}`")


async def _mysql_floor_ms(url: str, steps: int) -> float:
    import aiomysql  # type: ignore[import-untyped]  # aiomysql ships no type information

    _create_mysql_database(url)
    args, database = _mysql_connect_args(url)
    conn = await aiomysql.connect(**args, db=database, charset="utf8mb4", autocommit=True)
    try:
        async with conn.cursor() as cursor:
            await cursor.execute(
                "CREATE TABLE IF NOT EXISTS floor (run_id VARBINARY(255) NOT NULL, "
                "seq BIGINT NOT NULL, body LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin "
                "NOT NULL, PRIMARY KEY (run_id, seq)) ENGINE=InnoDB"
            )
            insert = "INSERT INTO floor (run_id, seq, body) VALUES (%s, %s, %s)"
            await cursor.execute(insert, ("warm", 0, RECORD))
            started = time.perf_counter()
            for seq in range(steps):
                await cursor.execute(insert, ("r", seq, RECORD))
            elapsed = time.perf_counter() - started
    finally:
        conn.close()
    return elapsed * 1000 / steps


async def _mysql_floor_runs_per_s(url: str, runs: int, steps: int, connections: int) -> float:
    import aiomysql

    _create_mysql_database(url)
    args, database = _mysql_connect_args(url)
    opened = [
        await aiomysql.connect(**args, db=database, charset="utf8mb4", autocommit=True)
        for _ in range(connections)
    ]
    try:
        cursors = [await conn.cursor() for conn in opened]
        await cursors[0].execute(
            "CREATE TABLE IF NOT EXISTS floor32 (run_id VARBINARY(255) NOT NULL, "
            "seq BIGINT NOT NULL, body LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin "
            "NOT NULL, PRIMARY KEY (run_id, seq)) ENGINE=InnoDB"
        )
        sql = "INSERT INTO floor32 (run_id, seq, body) VALUES (%s, %s, %s)"
        for index, cursor in enumerate(cursors):
            await cursor.execute(sql, (f"warm{index}", 0, RECORD))

        async def insert(stream: int, run: int, seq: int) -> object:
            return await cursors[stream].execute(sql, (f"r{run}", seq, RECORD))

        return await _fleet(runs, steps, connections, insert)
    finally:
        for conn in opened:
            conn.close()

"""`psych doctor --store` on real stores, as a separate process: SQLite files in tmp_path and
a schema of its own on the PostgreSQL server PSYCH_TEST_POSTGRES_DSN names.

Each test also checks that the command only read: a file's bytes and a schema's version
table are as they were, and nothing was created.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import psych_store_postgres
import psych_store_sqlite
from psych_store_postgres import PostgresStore
from psych_store_sqlite import SQLiteStore
from psych_store_sqlite._schema import MIGRATIONS
from tests._postgres import connect, drop_schema, new_schema, test_dsn

pytestmark = pytest.mark.integration

UP_TO_DATE = {
    "applied": psych_store_sqlite.SCHEMA_VERSION,
    "known": psych_store_sqlite.SCHEMA_VERSION,
    "verdict": "up to date",
    "note": None,
}
SQLITE = f"psych-store-sqlite {importlib.metadata.version('psych-store-sqlite')}"


def doctor(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # No engine of the machine's own is asked: only the store matters here.
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/psych-doctor.sock"}
    env.pop("PSYCH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "psych_cli", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def doctor_json(*args: str) -> tuple[int, dict[str, Any]]:
    done = doctor("--json", *args)
    assert done.stderr == ""
    document: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, document


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file in `folder` and a digest of its bytes."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
    }


def migrated(db: Path) -> None:
    async def main() -> None:
        async with SQLiteStore(db) as store:
            await store.migrate()

    asyncio.run(main())


# -- SQLite ----------------------------------------------------------------------------------


def test_a_migrated_sqlite_store_answers_and_is_left_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    migrated(db)
    before = fingerprint(tmp_path)

    code, document = doctor_json("--store", f"sqlite:///{db}")
    assert code == 0
    assert (document["ok"], document["problems"]) == (True, [])
    store = document["store"]
    assert store["url"] == f"sqlite:///{db}"
    assert store["adapter"] == SQLITE
    assert (store["answers"], store["problem"]) == (True, None)
    assert isinstance(store["seconds"], float)
    assert store["schema"] == UP_TO_DATE

    done = doctor("--store", f"sqlite:///{db}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    section = lines[lines.index(f"Store  sqlite:///{db}") :]
    assert section[1] == f"  {'adapter':<36}{store['adapter']}"
    assert section[2].startswith(f"  {'answers':<36}yes: listed a page of runs in ")
    assert section[3] == f"  {'schema':<36}{psych_store_sqlite.SCHEMA_VERSION}: up to date"
    assert section[4] == (
        f"  {'adapter knows':<36}schema version {psych_store_sqlite.SCHEMA_VERSION} "
        "(its newest migration)"
    )
    assert lines[-1] == "Everything checked is fine."
    assert fingerprint(tmp_path) == before


def test_a_store_whose_schema_is_behind_is_a_problem_and_is_not_migrated(tmp_path: Path) -> None:
    # A file as psych-store-sqlite's first release left it: migration 1 only, in WAL mode.
    db = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(
            "CREATE TABLE psych_schema_version "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for statement in MIGRATIONS[0].statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO psych_schema_version VALUES (1, ?, 'then')", (MIGRATIONS[0].name,)
        )
    assert psych_store_sqlite.SCHEMA_VERSION > 1
    before = fingerprint(tmp_path)

    code, document = doctor_json("--store", f"sqlite:///{db}")
    # The version says so: the listing is not asked (it would fail on a column migration 2
    # added, which a later migration might not).
    assert code == 1
    store = document["store"]
    assert store["answers"] is False
    assert store["schema"] == {
        "applied": 1,
        "known": psych_store_sqlite.SCHEMA_VERSION,
        "verdict": "behind: run the migration",
        "note": None,
    }
    assert store["problem"] == (
        f"its schema is at version 1; {SQLITE} knows version {psych_store_sqlite.SCHEMA_VERSION}"
    )
    assert "await store.migrate()" in store["hint"]
    assert document["problems"] == [f"the store at sqlite:///{db}: {store['problem']}"]
    done = doctor("--store", f"sqlite:///{db}")
    assert done.returncode == 1
    assert f"  {'schema':<36}1: behind: run the migration" in done.stdout.splitlines()
    assert "up to date" not in done.stdout
    # Read-only: still at version 1, byte for byte.
    assert fingerprint(tmp_path) == before
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT version FROM psych_schema_version").fetchall() == [(1,)]


def test_a_sqlite_database_without_the_psych_schema_is_a_problem(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    before = fingerprint(tmp_path)

    code, document = doctor_json("--store", f"sqlite:///{db}")
    assert code == 1
    store = document["store"]
    assert store["answers"] is False
    assert (store["schema"]["applied"], store["schema"]["verdict"]) == (
        0,
        "behind: run the migration",
    )
    assert store["problem"] == (
        "it holds no Psych schema: no migration was applied "
        f"({SQLITE} knows version {psych_store_sqlite.SCHEMA_VERSION})"
    )
    assert "await store.migrate()" in store["hint"]
    assert document["problems"] == [f"the store at sqlite:///{db}: {store['problem']}"]
    assert fingerprint(tmp_path) == before

    done = doctor("--store", f"sqlite:///{db}")
    assert done.returncode == 1
    assert done.stdout.splitlines()[-2:] == [
        "1 problem:",
        f"  the store at sqlite:///{db}: {store['problem']}",
    ]


def test_a_store_a_newer_adapter_migrated_is_a_problem_and_is_left_as_it_was(
    tmp_path: Path,
) -> None:
    db = tmp_path / "newer.db"
    migrated(db)
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO psych_schema_version VALUES (?, 'from the future', 'then')",
            (psych_store_sqlite.SCHEMA_VERSION + 1,),
        )
    before = fingerprint(tmp_path)

    code, document = doctor_json("--store", f"sqlite:///{db}")
    assert code == 1
    store = document["store"]
    assert (store["schema"]["applied"], store["schema"]["verdict"]) == (
        psych_store_sqlite.SCHEMA_VERSION + 1,
        "newer than this adapter",
    )
    assert store["problem"] == (
        f"its schema is at version {psych_store_sqlite.SCHEMA_VERSION + 1}; {SQLITE} knows "
        f"version {psych_store_sqlite.SCHEMA_VERSION}: a newer release migrated it"
    )
    assert store["hint"] == "upgrade psych-store-sqlite where this command and your app run"
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("kind", ["empty file", "not WAL", "not SQLite"])
def test_a_file_no_sqlite_store_made_is_refused_untouched(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "file.db"
    if kind == "empty file":
        db.touch()
    elif kind == "not WAL":
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute("CREATE TABLE psych_runs (n INTEGER)")
            conn.commit()
    else:
        db.write_text("not a database at all, but long enough to hold a header " * 4)
    before = fingerprint(tmp_path)

    code, document = doctor_json("--store", f"sqlite:///{db}")
    assert code == 1
    problem = document["store"]["problem"]
    if kind == "not WAL":
        assert problem.startswith(f"{db} is a SQLite database that is not in WAL mode")
    else:
        assert problem == f"{db} is not a SQLite database (SQLiteStore would write one into it)"
    assert fingerprint(tmp_path) == before


def test_a_missing_sqlite_file_is_reported_and_not_created(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    done = doctor("--store", f"sqlite:///{db}")
    assert done.returncode == 1
    assert f"there is no SQLite file at {db}" in done.stdout
    assert list(tmp_path.iterdir()) == []


# -- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    (await connect()).terminate()  # fails at once, saying how to start the server
    name = new_schema("doctor")
    try:
        yield name
    finally:
        await drop_schema(name)


async def _schema_state(name: str) -> tuple[bool, list[int]]:
    """Whether schema `name` exists, and the versions its version table lists."""
    conn = await connect()
    try:
        exists = await conn.fetchval(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", name
        )
        versions = []
        if exists:
            rows = await conn.fetch(f"SELECT version FROM {name}.schema_version ORDER BY version")
            versions = [row["version"] for row in rows]
        return bool(exists), versions
    finally:
        await conn.close()


def _url(schema: str) -> str:
    return f"{test_dsn()}?schema={schema}"


async def test_a_migrated_postgres_store_answers(schema: str) -> None:
    async with PostgresStore(test_dsn(), schema=schema) as store:
        await store.migrate()
    before = await _schema_state(schema)

    code, document = await asyncio.to_thread(doctor_json, "--store", _url(schema))
    assert code == 0, document["problems"]
    store_facts = document["store"]
    assert (store_facts["answers"], store_facts["problem"]) == (True, None)
    assert store_facts["adapter"].startswith("psych-store-postgres ")
    assert store_facts["schema"] == {
        "applied": psych_store_postgres.SCHEMA_VERSION,
        "known": psych_store_postgres.SCHEMA_VERSION,
        "verdict": "up to date",
        "note": None,
    }
    assert await _schema_state(schema) == before


async def test_a_postgres_schema_that_does_not_exist_is_a_problem_and_is_not_created(
    schema: str,
) -> None:
    code, document = await asyncio.to_thread(doctor_json, "--store", _url(schema))
    assert code == 1
    assert document["store"]["answers"] is False
    assert document["store"]["problem"].startswith("it holds no Psych schema")
    assert len(document["problems"]) == 1
    assert await _schema_state(schema) == (False, [])


async def test_the_password_of_a_postgres_url_is_never_printed(schema: str) -> None:
    password = "doctor-s3cret"
    dsn = test_dsn()
    scheme, rest = dsn.split("://", 1)
    host = rest.rsplit("@", 1)[-1]
    url = f"{scheme}://nobody:{password}@{host}?schema={schema}"
    done = await asyncio.to_thread(doctor, "--store", url, "--timeout", "5")
    assert done.returncode == 1  # no such user
    assert password not in done.stdout + done.stderr
    assert f"{scheme}://nobody:***@{host}" in done.stdout


def test_a_postgres_server_that_does_not_answer_is_given_up_on_at_the_timeout() -> None:
    # A port nothing listens on: every connection is refused, and the store keeps retrying.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://psych:psych@127.0.0.1:{port}/psych?schema=psych"
    started = time.monotonic()
    code, document = doctor_json("--store", url, "--timeout", "1")
    took = time.monotonic() - started
    assert code == 1
    store = document["store"]
    assert store["answers"] is False
    assert store["problem"] == "no answer within 1 s"
    assert store["url"] == f"postgresql://psych:***@127.0.0.1:{port}/psych?schema=psych"
    assert took < 20

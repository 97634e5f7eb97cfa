"""The schema, as numbered migrations, and the one function that applies them.

Migrations are append-only: a released step is never edited; a change is a new step. The
applied steps are rows of ``psych_schema_version``. `migrate` runs every missing step inside
one ``BEGIN IMMEDIATE`` transaction (SQLite's DDL is transactional), so two processes that
migrate at once take turns: the second finds the work done and changes nothing.
"""

from __future__ import annotations

import datetime as dt
import sqlite3

from psych_core.ports import Migration, migrations_after
from psych_store_sqlite._connection import write_transaction

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs, records, specs",
        (
            # n: creation order (listing pages, and the claim's tie-break). AUTOINCREMENT so a
            # number is never reused after a delete, which keeps listing cursors stable.
            # Times are integer microseconds since the epoch, UTC; runnable_at is NULL for a
            # run that is not claimable (waiting on a person, or ended).
            """
            CREATE TABLE psych_runs (
                n INTEGER PRIMARY KEY AUTOINCREMENT,
                run_id TEXT NOT NULL UNIQUE,
                tenant TEXT NOT NULL,
                agent TEXT NOT NULL,
                spec_version TEXT NOT NULL,
                status TEXT NOT NULL,
                waiting TEXT,
                parent_run_id TEXT,
                attempt INTEGER NOT NULL,
                lease_owner TEXT,
                lease_expires_at INTEGER,
                runnable_at INTEGER,
                next_seq INTEGER NOT NULL,
                inbox_last INTEGER NOT NULL DEFAULT 0,
                idempotency_key TEXT,
                request_hash TEXT,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )
            """,
            # A key lives as long as its run: it is a column of the run row.
            """
            CREATE UNIQUE INDEX psych_runs_idempotency
                ON psych_runs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL
            """,
            # The claim scans this in (runnable_at, n) order: n is the rowid, which every
            # index carries as its last column.
            """
            CREATE INDEX psych_runs_runnable
                ON psych_runs (runnable_at) WHERE runnable_at IS NOT NULL
            """,
            "CREATE INDEX psych_runs_tenant ON psych_runs (tenant, n)",
            """
            CREATE INDEX psych_runs_parent
                ON psych_runs (parent_run_id, n) WHERE parent_run_id IS NOT NULL
            """,
            # body: the record's JSON as Record.model_dump_json() writes it; the store never
            # reads inside it. batch_id is kept at the first seq of each batch only: it is how
            # a re-sent batch is recognised.
            """
            CREATE TABLE psych_records (
                run_id TEXT NOT NULL REFERENCES psych_runs (run_id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                attempt INTEGER NOT NULL,
                batch_id TEXT,
                body TEXT NOT NULL,
                PRIMARY KEY (run_id, seq)
            )
            """,
            """
            CREATE TABLE psych_specs (
                version TEXT PRIMARY KEY,
                spec_json TEXT NOT NULL
            )
            """,
        ),
    ),
    Migration(
        2,
        "inbox, claims since the last suspend",
        (
            # claims: what max_attempts limits, reset by a batch that suspends the run.
            "ALTER TABLE psych_runs ADD COLUMN claims INTEGER NOT NULL DEFAULT 0",
            # Version 1 limited attempts, not claims since a suspend. A run that is not waiting
            # keeps its attempt count, so no run gets more tries than it had before the upgrade;
            # a waiting run suspended last, so it has none since.
            "UPDATE psych_runs SET claims = attempt WHERE status <> 'waiting'",
            # body: the InboxEntry's JSON, never read by the store. Numbers are the run row's
            # inbox_last, incremented in the same transaction; a key is single-use per run.
            """
            CREATE TABLE psych_inbox (
                run_id TEXT NOT NULL REFERENCES psych_runs (run_id) ON DELETE CASCADE,
                number INTEGER NOT NULL,
                key TEXT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (run_id, number),
                UNIQUE (run_id, key)
            ) WITHOUT ROWID
            """,
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version

VERSION_TABLE = "psych_schema_version"
"""The table that lists the store's applied migrations."""


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Apply every missing migration in one transaction; return the schema version."""
    where = f"SQLite store {path}"
    return write_transaction(conn, apply, (MIGRATIONS, VERSION_TABLE, where))


def apply(
    conn: sqlite3.Connection, migrations: tuple[Migration, ...], table: str, where: str
) -> int:
    """Apply the steps of `migrations` that `table` (their version table, made if missing)
    does not list yet, inside the caller's transaction; return the latest version.

    The store's schema and the user memory's (`psych_store_sqlite._memory_schema`) each
    have their own steps and version table, so each can be migrated without the other.
    """
    conn.execute(
        f"""
        CREATE TABLE IF NOT EXISTS {table} (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """
    )
    row = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {table}").fetchone()
    pending = migrations_after(migrations, int(row[0]), where=where, package="psych-store-sqlite")
    applied_at = dt.datetime.now(dt.UTC).isoformat()
    for migration in pending:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            f"INSERT INTO {table} (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, applied_at),
        )
    return migrations[-1].version

"""The schema, as numbered migrations, and the function that applies them.

Migrations are append-only: a released step is never edited; a change is a new step. The applied
steps are rows of ``<schema>.schema_version``. `migrate` runs every missing step in ONE
transaction that first takes a transaction-scoped advisory lock named after the schema, so two
processes that migrate at once take turns: the second waits, then finds the work done. DDL is
transactional in PostgreSQL, so a step that fails leaves nothing half-made.
"""

from __future__ import annotations

import hashlib

from psych_core.ports import Migration, migrations_after
from psych_store_postgres._connections import Connection

# ``{s}`` in a statement is the store's schema.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs, records, inbox, specs",
        (
            # The run row: an index over the log, updated by the same statement as each append.
            # n: creation order (listing pages; the claim's tie-break). fillfactor leaves room
            # on each page so that an append's update of the row stays a HOT update: none of the
            # columns an append changes on a running run (next_seq, updated_at) is indexed.
            # runnable_at: the lease expiry while leased, '-infinity' for "at once", due_at for a
            # timed wait, NULL when waiting on a person or ended. watched_until: until when a
            # reader waits on the run's records (appends notify it until then).
            """
            CREATE TABLE {s}.runs (
                n bigint GENERATED ALWAYS AS IDENTITY,
                run_id text PRIMARY KEY,
                tenant text NOT NULL,
                agent text NOT NULL,
                spec_version text NOT NULL,
                status text NOT NULL,
                waiting text,
                parent_run_id text,
                attempt integer NOT NULL DEFAULT 0,
                claims integer NOT NULL DEFAULT 0,
                lease_owner text,
                lease_expires_at timestamptz,
                runnable_at timestamptz,
                next_seq bigint NOT NULL,
                inbox_last bigint NOT NULL DEFAULT 0,
                watched_until timestamptz,
                idempotency_key text,
                request_hash text,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL
            ) WITH (fillfactor = 70)
            """,
            # A key lives as long as its run: it is a column of the run row.
            """
            CREATE UNIQUE INDEX runs_idempotency
                ON {s}.runs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL
            """,
            # The claim: `runnable_at <= now()` in (runnable_at, n) order, FOR UPDATE SKIP LOCKED.
            """
            CREATE INDEX runs_runnable ON {s}.runs (runnable_at, n) WHERE runnable_at IS NOT NULL
            """,
            "CREATE INDEX runs_tenant ON {s}.runs (tenant, n)",
            "CREATE INDEX runs_tenant_status ON {s}.runs (tenant, status, n)",
            """
            CREATE INDEX runs_parent
                ON {s}.runs (parent_run_id, n) WHERE parent_run_id IS NOT NULL
            """,
            # body: the record's JSON (Record.model_dump_json) as bytes; the store never reads
            # inside it (read it in psql with convert_from(body, 'UTF8')::jsonb). batch_id is
            # kept at the first seq of each batch only: it is how a re-sent batch is recognised.
            # No foreign key to runs: every insert comes from a statement that has just updated
            # the run row, and a foreign key would cost a lookup and a lock per record.
            """
            CREATE TABLE {s}.records (
                run_id text NOT NULL,
                seq bigint NOT NULL,
                attempt integer NOT NULL,
                batch_id text,
                body bytea NOT NULL,
                PRIMARY KEY (run_id, seq)
            )
            """,
            # The inbox: entry `number` of a run, its key (unique for the run's life) and the
            # signal's JSON.
            """
            CREATE TABLE {s}.inbox (
                run_id text NOT NULL,
                number bigint NOT NULL,
                key text NOT NULL,
                body bytea NOT NULL,
                at timestamptz NOT NULL,
                PRIMARY KEY (run_id, number),
                CONSTRAINT inbox_key UNIQUE (run_id, key)
            )
            """,
            """
            CREATE TABLE {s}.specs (
                version text PRIMARY KEY,
                spec_json text NOT NULL
            )
            """,
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def advisory_key(schema: str) -> int:
    """The advisory lock that serialises `migrate` on one schema: a signed 64-bit number."""
    digest = hashlib.sha256(f"psych-store-postgres:migrate:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def current_version(conn: Connection, schema: str, table: str = "schema_version") -> int:
    """The schema's version: 0 when it has no version table yet."""
    found = await conn.fetchval("SELECT to_regclass($1)", f"{schema}.{table}")
    if found is None:
        return 0
    version = await conn.fetchval(f"SELECT coalesce(max(version), 0) FROM {schema}.{table}")
    return int(version)


async def migrate(conn: Connection, schema: str, where: str) -> int:
    """Apply every missing migration in one transaction; return the schema version.

    A schema already at the latest version is only read, so a role that may read and write
    the tables but not change them (no CREATE privilege) can call this at every start-up.
    `where` names the database and schema in errors (never the password).
    """
    return await apply(conn, schema, MIGRATIONS, "schema_version", f"Postgres store {where}")


async def apply(
    conn: Connection,
    schema: str,
    migrations: tuple[Migration, ...],
    table: str,
    where: str,
) -> int:
    """Apply the steps of `migrations` that `table` (their version table in `schema`) does
    not list yet, in one transaction under the schema's advisory lock (the store's and the
    memory's migrations take turns too: both may create the schema); return the latest
    version (`migrate`'s rules).

    The store's schema and the user memory's (`psych_store_postgres._memory_schema`) each
    have their own steps and version table, so each can be migrated without the other.
    """
    latest = migrations[-1].version
    if not _pending(migrations, await current_version(conn, schema, table), where):
        return latest
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", advisory_key(schema))
        # CREATE SCHEMA checks the database's CREATE privilege even when the schema exists:
        # an operator may have made it (and given it to this role) beforehand.
        if not await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema):
            await conn.execute(f"CREATE SCHEMA {schema}")
        await conn.execute(
            f"""
            CREATE TABLE IF NOT EXISTS {schema}.{table} (
                version integer PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT statement_timestamp()
            )
            """
        )
        for migration in _pending(migrations, await current_version(conn, schema, table), where):
            for statement in migration.statements:
                await conn.execute(statement.format(s=schema))
            await conn.execute(
                f"INSERT INTO {schema}.{table} (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
    return latest


def _pending(migrations: tuple[Migration, ...], version: int, where: str) -> tuple[Migration, ...]:
    return migrations_after(migrations, version, where=where, package="psych-store-postgres")

"""The schema, as numbered migrations; the function that applies them under ``GET_LOCK``; and
the checks a server must pass before the store uses it.

Migrations are append-only: a released step is never edited; a change is a new step. MySQL
and MariaDB commit each DDL statement on its own, so `migrate` serialises processes with a
named lock (``GET_LOCK``, held by the session and released by ``RELEASE_LOCK`` or when the
session ends), and every statement of a step is written so that running it again after a
crash half-way through changes nothing (``CREATE TABLE IF NOT EXISTS``). The applied steps
are rows of ``psych_schema_version``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from psych_core import StoreError, StoreLimits, StoreUnavailable
from psych_core.ports import Migration, migrations_after
from psych_store_mysql._driver import Connection, Settings
from psych_store_mysql._literals import packet_bytes_needed, text

_TABLE = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC"
_ID = "VARBINARY(255)"
_STATUS = "VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin"
_BODY = "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs, records, inbox, specs",
        (
            # The run row: an index over the log, updated in the same transaction as each
            # append. Ids are VARBINARY: compared byte for byte, no collation, no padding.
            # n: creation order (listing pages, and the claim's tie-break). Times are
            # DATETIME(6) in UTC; runnable_at is NULL for a run that is not claimable (waiting
            # on a person, or ended) and '1000-01-01' for "at once". An idempotency key is
            # kept as its SHA-256 (any length), unique per tenant, as long as its run.
            # next_seq, updated_at and inbox_last change on every append or signal: they are
            # in no index, so those updates touch the clustered row only.
            f"""
            CREATE TABLE IF NOT EXISTS psych_runs (
                run_id {_ID} NOT NULL,
                n BIGINT NOT NULL AUTO_INCREMENT,
                tenant {_ID} NOT NULL,
                agent {_ID} NOT NULL,
                spec_version {_ID} NOT NULL,
                status {_STATUS} NOT NULL,
                waiting {_STATUS} NULL,
                parent_run_id {_ID} NULL,
                attempt INT NOT NULL DEFAULT 0,
                claims INT NOT NULL DEFAULT 0,
                lease_owner {_ID} NULL,
                lease_expires_at DATETIME(6) NULL,
                runnable_at DATETIME(6) NULL,
                next_seq BIGINT NOT NULL,
                inbox_last BIGINT NOT NULL DEFAULT 0,
                idempotency_key_hash BINARY(32) NULL,
                request_hash {_ID} NULL,
                created_at DATETIME(6) NOT NULL,
                updated_at DATETIME(6) NOT NULL,
                PRIMARY KEY (run_id),
                UNIQUE KEY psych_runs_n (n),
                UNIQUE KEY psych_runs_idempotency (tenant, idempotency_key_hash),
                KEY psych_runs_runnable (runnable_at, n),
                KEY psych_runs_tenant (tenant, n),
                KEY psych_runs_parent (parent_run_id, n)
            ) {_TABLE}
            """,
            # body: the record's JSON as Record.model_dump_json() writes it; the store never
            # reads inside it. batch_id is kept at the first seq of each batch only: it is how
            # a re-sent batch is recognised.
            f"""
            CREATE TABLE IF NOT EXISTS psych_records (
                run_id {_ID} NOT NULL,
                seq BIGINT NOT NULL,
                attempt INT NOT NULL,
                batch_id {_ID} NULL,
                body {_BODY} NOT NULL,
                PRIMARY KEY (run_id, seq)
            ) {_TABLE}
            """,
            # Inbox entries, numbered per run in commit order; a key is single-use per run
            # (compared by its SHA-256, kept whole in signal_key). body: the signal's JSON.
            f"""
            CREATE TABLE IF NOT EXISTS psych_inbox (
                run_id {_ID} NOT NULL,
                number BIGINT NOT NULL,
                key_hash BINARY(32) NOT NULL,
                signal_key BLOB NOT NULL,
                body {_BODY} NOT NULL,
                created_at DATETIME(6) NOT NULL,
                PRIMARY KEY (run_id, number),
                UNIQUE KEY psych_inbox_key (run_id, key_hash)
            ) {_TABLE}
            """,
            f"""
            CREATE TABLE IF NOT EXISTS psych_specs (
                version {_ID} NOT NULL,
                spec_json {_BODY} NOT NULL,
                PRIMARY KEY (version)
            ) {_TABLE}
            """,
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version

VERSION_TABLE = "psych_schema_version"
"""The table that lists the database's applied migrations."""

_VERSION_TABLE = f"""
    CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
        version INT NOT NULL,
        name VARCHAR(255) NOT NULL,
        applied_at DATETIME(6) NOT NULL,
        PRIMARY KEY (version)
    ) {_TABLE}
"""

MIGRATION_LOCK_WAIT = 60
"""Seconds `migrate` waits for another process's migration before giving up."""


def lock_name(database: str) -> str:
    """The ``GET_LOCK`` name that serialises migrations of one database (at most 64
    characters, as MySQL requires; the lock is per server, so the database is in it)."""
    name = f"psych.migrate.{database}"
    if len(name) <= 64:
        return name
    return "psych.migrate." + hashlib.sha256(database.encode()).hexdigest()[:40]


async def migrate(conn: Connection, settings: Settings) -> int:
    """Apply every missing migration while holding the migration lock; return the version."""
    lock = text(lock_name(settings.database))
    got = (await conn.one(f"SELECT GET_LOCK({lock}, {MIGRATION_LOCK_WAIT})")).rows[0][0]
    if got != 1:
        raise StoreUnavailable(
            f"MySQL store {settings.where}: another session has held the migration lock "
            f"{lock} for {MIGRATION_LOCK_WAIT} s; wait for its migration to end (see "
            "SELECT * FROM information_schema.METADATA_LOCK_INFO or performance_schema."
            "metadata_locks), then call migrate() again"
        )
    try:
        return await _apply(conn, settings)
    finally:
        try:
            await conn.one(f"SELECT RELEASE_LOCK({lock})")
        except BaseException:
            conn.close()  # ending the session releases the lock
            raise


async def _apply(conn: Connection, settings: Settings) -> int:
    await conn.one(_VERSION_TABLE)
    current = int(
        (await conn.one("SELECT COALESCE(MAX(version), 0) FROM psych_schema_version")).rows[0][0]
    )
    where = f"MySQL store {settings.where}"
    pending = migrations_after(MIGRATIONS, current, where=where, package="psych-store-mysql")
    for migration in pending:
        for statement in migration.statements:
            await conn.one(statement)
        await conn.one(
            "INSERT INTO psych_schema_version (version, name, applied_at) VALUES "
            f"({migration.version}, {text(migration.name)}, UTC_TIMESTAMP(6))"
        )
    return LATEST_VERSION


@dataclass(frozen=True, slots=True)
class Server:
    """The server a `MySQLStore` talks to, as its first connection found it.

    Attributes:
        version: what ``VERSION()`` says, e.g. ``"10.11.19-MariaDB-0+deb12u1"``.
        mariadb: whether it is MariaDB (else MySQL).
        max_allowed_packet: the longest statement it accepts, in bytes.
    """

    version: str
    mariadb: bool
    max_allowed_packet: int


MARIADB_FLOOR = (10, 6)
MYSQL_FLOOR = (8, 0, 1)


async def inspect(conn: Connection, settings: Settings, limits: StoreLimits) -> Server:
    """Check that the server can run this store with these limits.

    MariaDB 10.6 or MySQL 8.0.1 at least (``SKIP LOCKED``); a ``max_allowed_packet`` that
    carries an append at the declared limits; no statement-based binary log (InnoDB refuses
    it under ``READ COMMITTED``).
    """
    row = (
        await conn.one("SELECT VERSION(), @@max_allowed_packet, @@log_bin, @@binlog_format")
    ).rows[0]
    version, packet, log_bin, binlog_format = str(row[0]), int(row[1]), int(row[2]), str(row[3])
    mariadb = "mariadb" in version.lower()
    numbers = tuple(int(part) for part in re.findall(r"\d+", version.split("-")[0])[:3])
    floor = MARIADB_FLOOR if mariadb else MYSQL_FLOOR
    if numbers < floor:
        name = "MariaDB" if mariadb else "MySQL"
        raise StoreError(
            f"MySQL store {settings.where}: the server is {name} {version}; psych-store-mysql "
            f"needs {name} {'.'.join(map(str, floor))} or newer (SELECT ... FOR UPDATE SKIP "
            "LOCKED)"
        )
    needed = packet_bytes_needed(limits.max_append_bytes, limits.max_append_records)
    if packet < needed:
        raise StoreError(
            f"MySQL store {settings.where}: the server's max_allowed_packet is {packet} bytes, "
            f"but an append at the store's limits (max_append_bytes={limits.max_append_bytes}, "
            f"max_append_records={limits.max_append_records}) needs {needed}. Raise it on the "
            f"server (SET GLOBAL max_allowed_packet = {needed}, and in its config file), or "
            "give MySQLStore smaller limits"
        )
    if log_bin and binlog_format.upper() == "STATEMENT":
        raise StoreError(
            f"MySQL store {settings.where}: the server writes a statement-based binary log "
            "(binlog_format=STATEMENT), which InnoDB refuses under READ COMMITTED; set "
            "binlog_format=ROW"
        )
    return Server(version, mariadb, packet)

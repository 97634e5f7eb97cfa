"""The user memory's schema: numbered migrations of its own, with their own version table.

Kept apart from the store's steps (`_schema.MIGRATIONS`, ``psych_schema_version``) so that a
memory can live in the store's file or in a file of its own, and each is migrated alone. The
same rules hold: append-only steps, all missing steps in one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import sqlite3

from psych_core.ports import Migration
from psych_store_sqlite._connection import write_transaction
from psych_store_sqlite._schema import apply

VERSION_TABLE = "psych_memory_schema_version"

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "user facts",
        (
            # n: the order facts were stored in (recall is newest first: n descending).
            # folded: the text case-folded in Python (`psych_core.ports.folded`), which a query
            # matches with instr(): SQLite's lower() folds ASCII only. A key lives as long as its
            # fact: it is a column of the fact's row. at: microseconds since the epoch, UTC.
            """
            CREATE TABLE psych_user_facts (
                n INTEGER PRIMARY KEY AUTOINCREMENT,
                tenant TEXT NOT NULL,
                user_id TEXT NOT NULL,
                fact_id TEXT NOT NULL,
                key TEXT NOT NULL,
                text TEXT NOT NULL,
                folded TEXT NOT NULL,
                run_id TEXT,
                at INTEGER NOT NULL,
                UNIQUE (tenant, user_id, key),
                UNIQUE (tenant, user_id, fact_id)
            )
            """,
            "CREATE INDEX psych_user_facts_recall ON psych_user_facts (tenant, user_id, n)",
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Apply every missing step in one transaction; return the memory schema's version."""
    where = f"SQLite user memory {path}"
    return write_transaction(conn, apply, (MIGRATIONS, VERSION_TABLE, where))

"""The user memory's schema: numbered migrations of its own, with their own version table
(``<schema>.memory_schema_version``), applied like the store's (`_schema.apply`).

Kept apart from the store's steps so that a memory can share the store's schema or have one
of its own, and each is migrated alone.
"""

from __future__ import annotations

from psych_core.ports import Migration
from psych_store_postgres._connections import Connection
from psych_store_postgres._schema import apply

VERSION_TABLE = "memory_schema_version"

# ``{s}`` in a statement is the memory's schema.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "user facts",
        (
            # n: the order facts were stored in (recall is newest first: n descending).
            # folded: the text case-folded in Python (`psych_core.ports.folded`), which a query
            # matches with strpos(), so every adapter matches alike. A key lives as long as its
            # fact: it is a column of the fact's row, unique per user.
            """
            CREATE TABLE {s}.user_facts (
                n bigint GENERATED ALWAYS AS IDENTITY,
                tenant text NOT NULL,
                user_id text NOT NULL,
                fact_id text NOT NULL,
                key text NOT NULL,
                text text NOT NULL,
                folded text NOT NULL,
                run_id text,
                at timestamptz NOT NULL,
                PRIMARY KEY (tenant, user_id, fact_id),
                CONSTRAINT user_facts_key UNIQUE (tenant, user_id, key)
            )
            """,
            "CREATE INDEX user_facts_recall ON {s}.user_facts (tenant, user_id, n)",
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


async def migrate(conn: Connection, schema: str, where: str) -> int:
    """Apply every missing step in one transaction; return the memory schema's version."""
    return await apply(conn, schema, MIGRATIONS, VERSION_TABLE, f"Postgres user memory {where}")

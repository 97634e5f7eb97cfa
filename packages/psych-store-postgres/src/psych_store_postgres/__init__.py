"""psych_store_postgres: Psych Runtime's store on PostgreSQL.

`PostgresStore` keeps runs, their logs, their inboxes and the specs in a PostgreSQL schema that
any number of request handlers and worker processes, on any number of hosts, share. An append
is one statement and one round trip; claims take runs with ``FOR UPDATE SKIP LOCKED``; idle
workers and live readers are woken by LISTEN/NOTIFY. It passes the store contract suite
(`psych_runtime.testing.store_contract`) unchanged.
"""

from psych_store_postgres._schema import LATEST_VERSION as SCHEMA_VERSION
from psych_store_postgres._store import DEFAULT_LIMITS, PostgresStore

__all__ = ["DEFAULT_LIMITS", "SCHEMA_VERSION", "PostgresStore"]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    PostgresStore.__module__ = __name__


_claim_exports()

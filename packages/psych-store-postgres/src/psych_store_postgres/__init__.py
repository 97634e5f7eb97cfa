"""psych_store_postgres: Psych Runtime's store on PostgreSQL.

`PostgresStore` keeps runs, their logs, their inboxes and the specs in a PostgreSQL schema that
any number of request handlers and worker processes, on any number of hosts, share. An append
is one statement and one round trip; claims take runs with ``FOR UPDATE SKIP LOCKED``; idle
workers and live readers are woken by LISTEN/NOTIFY. It passes the store contract suite
(`psych_runtime.testing.store_contract`) unchanged.

`PostgresLiveChannel` carries live text (a model's words while it writes them, never stored)
from workers to the processes that follow their runs, by LISTEN/NOTIFY in the same database.

`PostgresUserMemory` keeps facts about end users (the `UserMemory` port, for agents with
``memory=True``) in the store's schema or another; it passes the user memory contract suite
(`psych_runtime.testing.memory_contract`).
"""

from psych_store_postgres._live import LiveConnectionLost, PostgresLiveChannel
from psych_store_postgres._memory import PostgresUserMemory
from psych_store_postgres._schema import LATEST_VERSION as SCHEMA_VERSION
from psych_store_postgres._store import DEFAULT_LIMITS, PostgresStore

__all__ = [
    "DEFAULT_LIMITS",
    "SCHEMA_VERSION",
    "LiveConnectionLost",
    "PostgresLiveChannel",
    "PostgresStore",
    "PostgresUserMemory",
]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    PostgresStore.__module__ = __name__
    PostgresUserMemory.__module__ = __name__
    PostgresLiveChannel.__module__ = __name__
    LiveConnectionLost.__module__ = __name__


_claim_exports()

"""psych_store_sqlite: Psych Runtime's embedded durable store.

`SQLiteStore` keeps runs, their logs and their specs in one SQLite file that the processes of
one host share: a request handler admits runs, worker processes claim and run them. It
passes the store contract suite (`psych_runtime.testing.store_contract`) unchanged.

`SQLiteUserMemory` keeps facts about end users (the `UserMemory` port, for agents with
``memory=True``) in the same file or another; it passes the user memory contract suite
(`psych_runtime.testing.memory_contract`).
"""

from psych_store_sqlite._memory import SQLiteUserMemory
from psych_store_sqlite._schema import LATEST_VERSION as SCHEMA_VERSION
from psych_store_sqlite._store import DEFAULT_LIMITS, SQLiteStore

__all__ = ["DEFAULT_LIMITS", "SCHEMA_VERSION", "SQLiteStore", "SQLiteUserMemory"]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    SQLiteStore.__module__ = __name__
    SQLiteUserMemory.__module__ = __name__


_claim_exports()

"""psych_store_mysql: Psych Runtime's store on MySQL 8 and MariaDB 10.6+.

`MySQLStore` keeps runs, their logs, their inboxes and their specs in one database that
request handlers and workers on any number of hosts share. An append is one transaction of two
round trips, committed only once the client has seen every write of it succeed; claims use
``SELECT ... FOR UPDATE SKIP LOCKED``; leases follow the server's clock. It passes the
store contract suite (`psych_runtime.testing.store_contract`) unchanged.
"""

from psych_store_mysql._schema import LATEST_VERSION as SCHEMA_VERSION
from psych_store_mysql._schema import Server
from psych_store_mysql._store import DEFAULT_LIMITS, MySQLStore

__all__ = ["DEFAULT_LIMITS", "SCHEMA_VERSION", "MySQLStore", "Server"]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    MySQLStore.__module__ = __name__
    Server.__module__ = __name__


_claim_exports()

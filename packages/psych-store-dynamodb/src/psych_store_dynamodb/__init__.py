"""psych_store_dynamodb: Psych Runtime's store on Amazon DynamoDB.

`DynamoDBStore` keeps runs, their logs, inboxes, specs and idempotency keys in one DynamoDB
table, for request handlers and workers on any number of hosts. Appends are transactions
fenced by the attempt (several runs' appends share one: group commit); claims go through a
sparse index and are re-checked on the run's row.
It passes the store contract suite (`psych_runtime.testing.store_contract`) unchanged.
"""

from psych_store_dynamodb._limits import DEFAULT_LIMITS
from psych_store_dynamodb._schema import LATEST_VERSION as SCHEMA_VERSION
from psych_store_dynamodb._store import DynamoDBStore

__all__ = ["DEFAULT_LIMITS", "SCHEMA_VERSION", "DynamoDBStore"]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    DynamoDBStore.__module__ = __name__


_claim_exports()

"""moto's DynamoDB server, one request at a time. Started by scripts/services/moto.sh.

`moto_server` serves each request on its own thread, and moto's DynamoDB keeps no lock: two
conditional writes can both pass their conditions, and a transaction that fails restores a
copy of the whole table taken before it began, undoing what other requests committed
meanwhile. DynamoDB makes each write and each transaction atomic, and the store relies on it.
So this launcher runs moto's application exactly as `moto_server` does, behind one lock: a
request is served whole before the next begins. Connections stay threaded; only the work
inside moto is serialised. Werkzeug's server closes every connection after its response (it
never keeps one alive), so each request of a client opens a connection of its own, which a
DynamoDB endpoint's keep-alive would spare: about a quarter of the benchmark's client CPU per
step on this store is that TCP connect and close.

moto also makes every `TransactWriteItems` copy each table it touches, whole, so that it can
roll back: a transaction on a table of 4,000 items took 200 ms, against 4 ms for a PutItem, and
the crash test and the benchmark grow their tables to thousands of items. Since requests are
served one at a time here, this launcher keeps a copy of only the items a transaction touches
and puts them back if it is cancelled, which is what the whole-table copy achieved.

    python _moto_server.py -H 127.0.0.1 -p 4566
"""

from __future__ import annotations

import argparse
import copy
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


class OneAtATime:
    """A WSGI middleware that serves one request at a time, body included."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self.lock:
            return list(self.app(environ, start_response))


_whole_table_transaction = DynamoDBBackend.transact_write_items


def _touched(backend: DynamoDBBackend, items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(table, hash key, range key, a copy of the item or None) for each item written."""
    saved = []
    for entry in items:
        ((operation, request),) = entry.items()
        table = backend.tables[request["TableName"]]
        key = request["Item"] if operation == "Put" else request["Key"]
        hash_key = DynamoType(key[table.hash_key_attr])
        range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        current = table.get_item(hash_key, range_key)
        saved.append((table, hash_key, range_key, copy.deepcopy(current)))
    return saved


def _put_back(saved: list[tuple[Any, ...]]) -> None:
    for table, hash_key, range_key, item in reversed(saved):
        if range_key is None:
            if item is None:
                table.items.pop(hash_key, None)
            else:
                table.items[hash_key] = item
        elif item is None:
            table.items[hash_key].pop(range_key, None)
        else:
            table.items[hash_key][range_key] = item


def _transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    try:
        saved = _touched(self, transact_items)
    except Exception:  # a malformed request: moto's own code says what is wrong with it
        return _whole_table_transaction(self, transact_items)  # type: ignore[no-any-return]
    # moto's "copy" of each table is the table itself, so its rollback changes nothing;
    # the touched items are put back here instead.
    Table.__deepcopy__ = lambda table, memo: table  # type: ignore[attr-defined]
    try:
        _whole_table_transaction(self, transact_items)
    except BaseException:
        _put_back(saved)
        raise
    finally:
        del Table.__deepcopy__  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=4566)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        args.host,
        args.port,
        OneAtATime(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()

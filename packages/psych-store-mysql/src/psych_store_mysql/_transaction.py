"""Transactions that commit only what the client saw, whatever happens to the client.

A call that writes more than one statement sends them in one text that opens the
transaction and makes every write (one round trip), then reads and checks every answer, and
only then sends ``COMMIT`` on its own (a second round trip). The text never carries its own
``COMMIT``: a server that loses its client part-way through a text does not always stop, and
may commit a transaction that is not what the text says (see `Connection.batch`). With the
``COMMIT`` apart, the server commits only on the client's word, given after the client saw
that each write did what it must; a client or connection lost before it leaves a session
that the server rolls back when it ends. A ``COMMIT`` whose answer is lost is the one doubt
left, and the pool treats it as any lost answer: an idempotent call is sent again (a re-sent
append is recognised by its ``batch_id``), any other is `StoreUnavailable`.

A call whose only write is one statement (``renew``, ``release``, ``put_spec``) needs none of
this: one statement is all or nothing by itself. Nor does a MariaDB append without notices,
sent as one ``BEGIN NOT ATOMIC`` statement that commits only on the server's own checks
(`_append.block`).
"""

from __future__ import annotations

from collections.abc import Iterable

from psych_core import StoreUnavailable
from psych_store_mysql._driver import Connection


def unexpected(what: str, checks: Iterable[tuple[str, int, int]]) -> str | None:
    """What is wrong when a statement reported other than it must, else None.

    Args:
        what: the write, for the message (``"run R: the append of batch B at seq 5"``).
        checks: (what is counted, what the count must be, what the server reported), e.g.
            ``("records written at seq 5", 1, 0)``.
    """
    wrong = [f"{name}: {got}, not {wanted}" for name, wanted, got in checks if got != wanted]
    if not wrong:
        return None
    return f"{what}: the server's answers disagree ({'; '.join(wrong)})"


async def commit(conn: Connection, problem: str | None) -> None:
    """Commit the transaction the connection has open; or, when `problem` says its answers
    were not what its writes must do, roll it back and raise `StoreUnavailable` saying so.

    Never reached in practice: the writes are checked on rows the transaction holds locked.
    It is here so that nothing the client did not confirm is ever committed.
    """
    if problem is None:
        await conn.one("COMMIT")
        return
    await conn.one("ROLLBACK")
    raise StoreUnavailable(f"{problem}; it was rolled back, nothing was written: retry it")

"""The inbox: `signal`, the notices an append writes into other runs' inboxes, `signals`, `due`.

An entry is numbered by incrementing its run row's ``inbox_last`` in the same transaction, so
numbers follow commit order, and a waiting run is woken (``runnable_at`` := at once) by the
same statement. The run row is locked first, by a statement of its own: the key check that
follows then starts after every earlier writer of this inbox has committed, so it sees their
keys (under ``READ COMMITTED`` each statement reads what was committed when it started).
A run that has ended takes only a signal that `accepted_after_end`, until its inbox holds the
`Continued` mark: the same statement checks for the mark, under the same lock, so a message
racing the mark is numbered before it or refused, and costs no extra round trip.
A signal is two round trips: the text that numbers and writes the entry, then its ``COMMIT``
once the answers show the entry numbered and written alike (see `_transaction`).
"""

from __future__ import annotations

import datetime as dt
import json

from psych_core import (
    CONTINUED_KEY,
    FINAL_STATUSES,
    DuplicateSignal,
    InboxEntry,
    RunFinished,
    RunNotFound,
    RunRow,
    Signal,
    accepted_after_end,
)
from psych_store_mysql._driver import Connection, Result
from psych_store_mysql._literals import (
    NEVER_BEFORE_SQL,
    decode,
    digest,
    from_stamp,
    identifier,
    integer,
    signal_key,
    stamp,
    text,
)
from psych_store_mysql._reads import NOT_FINAL, RUN_COLUMNS, run_row
from psych_store_mysql._transaction import commit, unexpected

DELIVER_STATEMENTS = 4
"""How many statements `deliver` returns (so how many answers they get)."""


def deliver(
    run_id: str, key: str, signal: Signal, *, only_if: str = "TRUE", open_if: str = NOT_FINAL
) -> list[str]:
    """The statements that add one entry to `run_id`'s inbox, when `only_if` holds, the run's
    inbox is open (`open_if`: by default, the run has not ended) and `key` is unused; otherwise
    they write nothing (and fail nothing).

    They leave ``@psych_delivered`` at 1 when the entry was added, else 0.
    """
    target = identifier(run_id, "run id")
    hashed = digest(key)
    return [
        f"SELECT run_id FROM psych_runs WHERE run_id = {target} AND {only_if} FOR UPDATE",
        "UPDATE psych_runs SET inbox_last = inbox_last + 1, "
        f"runnable_at = IF(status = 'waiting', {NEVER_BEFORE_SQL}, runnable_at) "
        f"WHERE run_id = {target} AND {only_if} AND {open_if} AND NOT EXISTS "
        f"(SELECT 1 FROM psych_inbox WHERE run_id = {target} AND key_hash = {hashed})",
        "SET @psych_delivered = ROW_COUNT()",
        "INSERT INTO psych_inbox (run_id, number, key_hash, signal_key, body, created_at) "
        f"SELECT run_id, inbox_last, {hashed}, {signal_key(key, run_id)}, "
        f"{text(signal.model_dump_json())}, UTC_TIMESTAMP(6) "
        f"FROM psych_runs WHERE run_id = {target} AND @psych_delivered = 1",
    ]


def delivery_checks(run_id: str, answers: list[Result]) -> list[tuple[str, int, int]]:
    """What the answers to `deliver`'s statements must show (for `unexpected`): as many
    entries written as the run row numbered."""
    numbered, written = answers[1].rowcount, answers[3].rowcount
    return [(f"entries written into the inbox of run {run_id}", numbered, written)]


def _open_to(target: str, body: Signal) -> str:
    """When the inbox of the run `target` takes `body`: while the run has not ended, and for a
    signal that `accepted_after_end`, after it too until the run's inbox holds the mark."""
    if not accepted_after_end(body):
        return NOT_FINAL
    return (
        f"({NOT_FINAL} OR NOT EXISTS (SELECT 1 FROM psych_inbox "
        f"WHERE run_id = {target} AND key_hash = {digest(CONTINUED_KEY)}))"
    )


async def signal(conn: Connection, tenant: str, run_id: str, body: Signal, key: str) -> int:
    """Add a signal to the run's inbox, then commit it (two round trips); see `Store.signal`."""
    target = identifier(run_id, "run id")
    tenant_literal = identifier(tenant, "tenant")
    statements = [
        "START TRANSACTION",
        *deliver(
            run_id,
            key,
            body,
            only_if=f"tenant = {tenant_literal}",
            open_if=_open_to(target, body),
        ),
        "SELECT tenant, status, inbox_last, EXISTS (SELECT 1 FROM "
        f"psych_inbox WHERE run_id = {target} AND key_hash = {digest(key)}) "
        f"FROM psych_runs WHERE run_id = {target}",
    ]
    answers = await conn.batch(";\n".join(statements))
    numbered = answers[2].rowcount
    if numbered:
        checks = delivery_checks(run_id, answers[1 : 1 + DELIVER_STATEMENTS])
        await commit(conn, unexpected(f"run {run_id}: the signal with key {key!r}", checks))
        return int(answers[-1].rows[0][2])
    await conn.one("ROLLBACK")  # nothing was written; this ends the row lock
    rows = answers[-1].rows
    if not rows:
        raise RunNotFound(run_id)
    owner, status, _, taken = rows[0]
    if decode(owner) != tenant:
        raise RunNotFound(run_id)
    if taken:
        raise DuplicateSignal(run_id, key)
    if status in FINAL_STATUSES:
        raise RunFinished(run_id, status)  # or, when `accepted_after_end`, it was continued
    raise RunNotFound(run_id)  # not reached: one of the checks above failed the update


async def signals(conn: Connection, run_id: str, after: int) -> list[InboxEntry]:
    """The run's inbox entries numbered above `after`, in number order."""
    result = await conn.one(
        "SELECT number, signal_key, body, created_at FROM psych_inbox WHERE run_id = "
        f"{identifier(run_id, 'run id')} AND number > {integer(after)} ORDER BY number"
    )
    return [
        InboxEntry.model_validate(
            {
                "run_id": run_id,
                "number": int(number),
                "key": decode(key),
                "signal": json.loads(body),
                "at": from_stamp(at),
            }
        )
        for number, key, body, at in result.rows
    ]


async def due(conn: Connection, now: dt.datetime, limit: int) -> list[RunRow]:
    """Waiting runs of every tenant claimable at `now`, oldest ``runnable_at`` first."""
    result = await conn.one(
        f"SELECT {RUN_COLUMNS} FROM psych_runs FORCE INDEX (psych_runs_runnable) "
        f"WHERE runnable_at <= {stamp(now, 'now')} AND status = 'waiting' "
        f"ORDER BY runnable_at, n LIMIT {integer(max(limit, 0))}"
    )
    return [run_row(row) for row in result.rows]

"""`append_many`: several runs' batches in one transaction of three round trips (group commit).

The first round trip opens the transaction and sends every batch's fenced ``UPDATE`` of its
run row, exactly as `_append` writes it for one batch::

    START TRANSACTION;
    UPDATE psych_runs ... WHERE run_id = R0 AND <its fence>;
    UPDATE psych_runs ... WHERE run_id = R1 AND <its fence>;
    ...

Each answer says whether that ``UPDATE`` matched its row (and hands back the run's
``inbox_last``). The second writes the records of the batches whose ``UPDATE`` matched, all
in one multi-row ``INSERT INTO psych_records ... VALUES (...), (...)``, which writes every row
or fails; the third is ``COMMIT`` alone, sent once both answers checked out (`_transaction`
says why the client commits only what it saw). A batch whose ``UPDATE`` matched nothing wrote
nothing, so the others commit without it; it then goes through the single path
(`MySQLStore.append`), whose second read says why it was refused, in the contract's order, or
recognises it as a batch re-sent after landing. So a group costs three round trips and, on the
server, one statement per batch and one for all their records (17 for 15 one-record batches),
against three or more per batch for the same writes made batch by batch (its ``UPDATE``, the
flag its inserts read, an ``INSERT`` per record: 45). The server runs every statement on the
cores this process shares, and this process reads an answer to each, so the count is what a
group costs (psych-store-mysql's README has the measure). Each batch is still judged as
`append` would judge it alone.

The group takes only batches that have records, no problem `encode` found, and no notices
(whose deliveries lock other runs' rows, out of the group's order); the rest take the single
path. Batches go in run id order, so two groups lock their run rows in one order and wait for
each other rather than deadlock. Whatever goes wrong (a driver error, a deadlock, a lock
wait, answers that disagree) rolls the whole transaction back, and a ``COMMIT`` whose answer
is lost may or may not have landed: either way every batch of the group then takes the single
path, where a re-sent batch is recognised by its ``batch_id`` and written once.

A group whose statements would not fit the server's ``max_allowed_packet`` is split into
several transactions, each three round trips; one append at the store's limits always fits
(`inspect`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from psych_core import Append, AppendResult, Batch, PsychError, StoreError, StoreLimits
from psych_store_mysql._append import (
    INSERT_VALUES,
    ROW_SEPARATOR,
    encode,
    insert_rows,
    record_rows,
    update,
)
from psych_store_mysql._driver import Connection, Result
from psych_store_mysql._pool import Pool
from psych_store_mysql._transaction import unexpected

type Outcome = AppendResult | PsychError
type Single = Callable[[str, int, Batch], Awaitable[AppendResult]]

_START = "START TRANSACTION"
_SEPARATOR = ";\n"
_PACKET_ROOM = 1024
"""Bytes of ``max_allowed_packet`` a group's statements leave unused (the command's own
header)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One append that goes in a group.

    Attributes:
        position: where its outcome goes in the caller's list.
        update: its fenced ``UPDATE`` of the run row.
        rows: its records' rows for the group's ``INSERT``.
        size: the UTF-8 bytes of both in the group's statements, separators included.
    """

    position: int
    one: Append
    update: str
    rows: tuple[str, ...]
    size: int


async def append_many(
    pool: Pool, limits: StoreLimits, appends: Sequence[Append], single: Single
) -> list[Outcome]:
    """Commit the appends that can go together in one transaction per packet, and send the
    rest (and those the group refused or could not vouch for) through `single`; return each
    append's outcome, in the caller's order. See the module docstring.

    Args:
        single: the store's `append`, which judges one batch alone.
    """
    outcomes: list[Outcome | None] = [None] * len(appends)
    grouped = members(appends, limits)
    if len(grouped) > 1:
        if pool.server is None:  # known once the pool has connected
            await pool.run(_connected, what="connect", resend=True)
        assert pool.server is not None
        for chunk in chunks(grouped, pool.server.max_allowed_packet):
            runs = ", ".join(member.one.run_id for member in chunk[:3])
            runs += ", ..." if len(chunk) > 3 else ""
            try:
                landed = await pool.run(
                    functools.partial(_commit, chunk=chunk),
                    what=f"append to {len(chunk)} runs together ({runs})",
                    resend=True,  # a re-sent group writes each batch once (see `_commit`)
                )
            except PsychError as failed:  # no connection, or no answer in time
                for member in chunk:
                    outcomes[member.position] = failed
                continue
            for member, inbox_last in zip(chunk, landed, strict=True):
                if inbox_last is not None:
                    outcomes[member.position] = AppendResult(inbox_last)
    for position, outcome in enumerate(outcomes):
        if outcome is None:
            one = appends[position]
            try:
                outcomes[position] = await single(one.run_id, one.attempt, one.batch)
            except PsychError as refused:
                outcomes[position] = refused
    return [outcome for outcome in outcomes if outcome is not None]


def members(appends: Sequence[Append], limits: StoreLimits) -> list[Member]:
    """The appends that may go in a group, in run id order, each with its statements."""
    eligible = sorted(
        (
            (position, one)
            for position, one in enumerate(appends)
            if one.batch.records and not one.batch.notify
        ),
        key=lambda item: item[1].run_id,
    )
    found: list[Member] = []
    for position, one in eligible:
        encoded = encode(one.run_id, one.batch, limits)
        if encoded.problem is not None:
            continue
        try:
            fenced = update(one.run_id, one.attempt, one.batch, len(encoded.texts))
            rows = tuple(record_rows(one.run_id, one.attempt, one.batch, encoded.texts))
        except StoreError:  # an id too long for its column: the single path says so
            continue
        size = _bytes(fenced) + len(_SEPARATOR)
        size += sum(_bytes(row) + len(ROW_SEPARATOR) for row in rows)
        found.append(Member(position, one, fenced, rows, size))
    return found


def chunks(grouped: list[Member], max_packet: int) -> list[list[Member]]:
    """`grouped` cut into groups whose updates, and whose ``INSERT``, each fit one packet of
    `max_packet` bytes (both together do), in order."""
    budget = max_packet - _PACKET_ROOM - max(len(_START), len(INSERT_VALUES) + 2)
    cut: list[list[Member]] = []
    used = 0
    for member in grouped:
        if cut and used + member.size <= budget:
            cut[-1].append(member)
            used += member.size
        else:  # the first, or one that does not fit: a text of its own, alone if it must
            cut.append([member])
            used = member.size
    return cut


def text(chunk: Sequence[Member]) -> str:
    """The first round trip of a group: its transaction opened and every member's fenced
    ``UPDATE``."""
    return _SEPARATOR.join([_START, *(member.update for member in chunk)])


def insert(chunk: Sequence[Member], landed: Sequence[int | None]) -> tuple[str, int]:
    """The second round trip: one ``INSERT`` of the records of every member whose ``UPDATE``
    matched (`landed` not None), and how many rows it must write."""
    rows = [
        row
        for member, inbox_last in zip(chunk, landed, strict=True)
        if inbox_last is not None
        for row in member.rows
    ]
    return insert_rows(rows), len(rows)


def matched(
    chunk: Sequence[Member], answers: Sequence[Result]
) -> tuple[list[int | None], str | None]:
    """Each member's ``inbox_last`` when its ``UPDATE`` matched (None when not), from the
    answers to `text`, and what is wrong with them, if anything (for `unexpected`)."""
    updates = answers[1:]
    landed = [answer.insert_id if answer.rowcount == 1 else None for answer in updates]
    checks = [("answers to the statements", 1 + len(chunk), len(answers))]
    checks += [
        (f"run {member.one.run_id}: run rows updated", 1, answer.rowcount)
        for member, answer in zip(chunk, updates, strict=False)
        if answer.rowcount not in (0, 1)
    ]
    return landed, unexpected(f"a group of {len(chunk)} appends", checks)


async def _commit(conn: Connection, _: bool, *, chunk: Sequence[Member]) -> list[int | None]:
    """Run one group's transaction; each member's ``inbox_last`` when it committed, None when
    it must take the single path (its ``UPDATE`` matched nothing, or the group did not commit
    for certain).

    A driver error in any of its round trips is not raised: the single path settles each
    batch instead. Only the ``ROLLBACK`` of a group that wrote nothing may raise one, and the
    pool may then send the group again, which is safe: a batch that landed meanwhile no longer
    matches its ``UPDATE``, and the single path recognises it.
    """
    nothing: list[int | None] = [None] * len(chunk)
    try:
        answers = await conn.batch(text(chunk))
    except Exception:  # a deadlock, a lock wait, a lost connection: it ends uncommitted
        await _abandon(conn)
        return nothing
    landed, problem = matched(chunk, answers)
    if problem is not None:
        await _abandon(conn)
        return nothing
    if all(inbox_last is None for inbox_last in landed):  # nothing written: nothing to keep
        await conn.one("ROLLBACK")
        return nothing
    records, count = insert(chunk, landed)
    try:
        written = await conn.one(records)
    except Exception:  # a record the server refused, a lost connection: nothing is kept
        await _abandon(conn)
        return nothing
    if written.rowcount != count:  # never seen: one INSERT writes every row or none
        await _abandon(conn)
        return nothing
    try:
        await conn.one("COMMIT")
    except Exception:  # committed or not: the single path recognises what landed
        conn.close()
        return nothing
    return landed


async def _abandon(conn: Connection) -> None:
    """Roll back the group's transaction, freeing its row locks at once for the single path
    that follows; then close the session, whose state after an error part-way through a
    text is not worth trusting (the pool drops a closed connection)."""
    if not conn.closed:
        with contextlib.suppress(Exception):  # closing rolls back whatever is left
            await conn.one("ROLLBACK")
    conn.close()


async def _connected(conn: Connection, _: bool) -> None:
    """Nothing: a call that makes the pool connect, so that the server's packet is known."""


def _bytes(statement: str) -> int:
    return len(statement) if statement.isascii() else len(statement.encode())

"""`append_many`: several runs' batches in one transaction of two round trips (group commit).

One text opens the transaction and makes every batch's writes, each batch guarded by a flag of
its own, exactly as `_append` writes one batch::

    START TRANSACTION;
    UPDATE psych_runs ... WHERE run_id = R0 AND <its fence>;  SET @psych_ok_0 = ROW_COUNT();
    INSERT INTO psych_records ... FROM DUAL WHERE @psych_ok_0 = 1;   -- per record of R0
    UPDATE psych_runs ... WHERE run_id = R1 AND <its fence>;  SET @psych_ok_1 = ROW_COUNT();
    ...

then ``COMMIT`` alone, once the answers show each matched ``UPDATE``'s records all written and
each unmatched one's none (`_transaction` says why the client commits only what it saw). A
batch whose ``UPDATE`` matched nothing wrote nothing, so the others commit without it; it then
goes through the single path (`MySQLStore.append`), whose second read says why it was refused,
in the contract's order, or recognises it as a batch re-sent after landing. So a group costs
two round trips, not two per batch, and each batch is judged as `append` would judge it alone.

The text carries only batches that have records, no problem `encode` found, and no notices
(whose deliveries lock other runs' rows, out of the group's order); the rest take the single
path. Batches go in run id order, so two groups lock their run rows in one order and wait for
each other rather than deadlock. Whatever goes wrong with the text (a driver error, a deadlock,
a lock wait, answers that disagree) rolls the whole transaction back, and a ``COMMIT`` whose
answer is lost may or may not have landed: either way every batch of the group then takes the
single path, where a re-sent batch is recognised by its ``batch_id`` and written once.

A group whose text would not fit the server's ``max_allowed_packet`` is split into several
transactions, each two round trips; one append at the store's limits always fits (`inspect`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from psych_core import Append, AppendResult, Batch, PsychError, StoreError, StoreLimits
from psych_store_mysql._append import answers_to, encode, write_checks, writes
from psych_store_mysql._driver import Connection, Result
from psych_store_mysql._pool import Pool
from psych_store_mysql._transaction import unexpected

type Outcome = AppendResult | PsychError
type Single = Callable[[str, int, Batch], Awaitable[AppendResult]]

_START = "START TRANSACTION"
_SEPARATOR = ";\n"
_PACKET_ROOM = 1024
"""Bytes of ``max_allowed_packet`` a group's text leaves unused (the command's own header)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One append that goes in a group's text.

    Attributes:
        position: where its outcome goes in the caller's list.
        statements: its writes, guarded by its own flag.
        size: their UTF-8 bytes in the text, separators included.
    """

    position: int
    one: Append
    statements: tuple[str, ...]
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
    """The appends that may go in a group's text, in run id order, each with its flag."""
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
        flag = f"@psych_ok_{len(found)}"
        try:
            statements = writes(one.run_id, one.attempt, one.batch, encoded.texts, flag=flag)
        except StoreError:  # an id too long for its column: the single path says so
            continue
        size = sum(_bytes(statement) + len(_SEPARATOR) for statement in statements)
        found.append(Member(position, one, tuple(statements), size))
    return found


def chunks(grouped: list[Member], max_packet: int) -> list[list[Member]]:
    """`grouped` cut into texts that each fit one packet of `max_packet` bytes, in order."""
    budget = max_packet - _PACKET_ROOM - len(_START)
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
    """The first round trip of a group: its transaction opened and every member's writes."""
    return _SEPARATOR.join([_START, *(s for member in chunk for s in member.statements)])


def settle(
    chunk: Sequence[Member], answers: Sequence[Result]
) -> tuple[list[int | None], str | None]:
    """Each member's ``inbox_last`` when its ``UPDATE`` matched (None when not), and what is
    wrong with the answers, if anything (for `unexpected`)."""
    landed: list[int | None] = []
    checks: list[tuple[str, int, int]] = []
    at = 1  # after START TRANSACTION
    for member in chunk:
        batch = member.one.batch
        mine = answers[at : at + answers_to(batch)]
        matched = bool(mine) and mine[0].rowcount == 1
        landed.append(mine[0].insert_id if matched else None)
        checks += [
            (f"run {member.one.run_id}: {name}", wanted, got)
            for name, wanted, got in write_checks(batch, mine, matched=matched)
        ]
        at += answers_to(batch)
    checks.append(("answers to the statements", at, len(answers)))
    return landed, unexpected(f"a group of {len(chunk)} appends", checks)


async def _commit(conn: Connection, _: bool, *, chunk: Sequence[Member]) -> list[int | None]:
    """Run one group's transaction; each member's ``inbox_last`` when it committed, None when
    it must take the single path (its ``UPDATE`` matched nothing, or the group did not commit
    for certain).

    A driver error in the text or the ``COMMIT`` is not raised: the single path settles each
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
    landed, problem = settle(chunk, answers)
    if problem is not None:
        await _abandon(conn)
        return nothing
    if all(inbox_last is None for inbox_last in landed):  # nothing written: nothing to keep
        await conn.one("ROLLBACK")
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

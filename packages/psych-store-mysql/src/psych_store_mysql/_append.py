"""`append`: one transaction that writes all of a batch or none of it, in one round trip on
MariaDB (a batch without notices) and two elsewhere.

The first round trip is one text that opens the transaction and makes every write::

    START TRANSACTION;
    UPDATE psych_runs SET <index columns>, next_seq = F + N,
            inbox_last = LAST_INSERT_ID(inbox_last)     -- handed back in the OK packet
        WHERE run_id = R AND attempt = A AND next_seq = F AND lease_owner IS NOT NULL
          AND <not ended> [AND inbox_last <= SEEN];     -- the fence, the seq, the inbox
    SET @psych_ok = ROW_COUNT();
    INSERT INTO psych_records ... SELECT ... FROM DUAL WHERE @psych_ok = 1;   -- per record
    <each notice, when @psych_ok = 1>

The ``UPDATE`` takes the run row's lock and checks everything at once, on the row's latest
committed version. Its OK packet says whether it matched the row (the connection reports
matched rows) and carries ``inbox_last`` as the statement's ``LAST_INSERT_ID``, so the text
returns no result set: reading one costs more than the rest of its answers together. The
second round trip is ``COMMIT``, sent only when the ``UPDATE`` matched, every ``INSERT``
wrote its record and every notice was numbered and written alike (`_transaction` says why
the ``COMMIT`` is never part of the text). ``@psych_ok`` spares a refused batch its writes;
what makes the batch all or nothing is that the client commits only what it saw.

A refused batch is rolled back in the same round trip that reads the run again, on a fresh
snapshot, to say why, in the contract's order; that read is also what recognises a re-sent
batch (its ``batch_id`` and attempt at its first seq), which then succeeds without writing.
A refusal is final: the run row only moves forward (attempts and seqs grow, an ended run
stays ended, a lost lease comes back only with a new attempt), so what failed the ``UPDATE``
still fails when the second read looks.

On MariaDB a batch without notices goes in one round trip instead (`block`): the same
``UPDATE`` and the batch's records, in one multi-row ``INSERT``, inside one ``BEGIN NOT ATOMIC
... END`` statement, which writes the records and ``COMMIT``s only when the ``UPDATE`` matched
the run row (``ROLLBACK`` otherwise) and answers whether it did, with ``inbox_last``.
The decision to commit is the server's, on checks it makes itself within one statement: no
statement inside sends an answer, so none can fail to reach a client that went away and run
on with a ``ROW_COUNT()`` of -1 (what broke a text that ended in ``COMMIT``); a session killed
or cut part-way stops inside the block, before its ``COMMIT``, and the server rolls it back.
The ``INSERT`` either writes every row or fails the block, the transaction left open for the
pool to close with its connection. `tests/contract/test_mysql_atomicity.py` holds it to the same
kills and cuts as the two round trips. It costs about half the client's CPU of an append (one
round trip of aiomysql's instead of two) and a tenth of its time on loopback (psych-store-mysql's
README). MySQL has no anonymous blocks; a batch with notices keeps the two round trips, whose
client-side checks of each delivery stay as they are.

A group of several runs' batches (`Store.append_many`, in `_group`) uses the same fenced
``UPDATE`` (`update`) and the same rows (`record_rows`): every batch's ``UPDATE`` in one
round trip, then the records of those that matched in one multi-row ``INSERT``, then one
``COMMIT``. A batch whose ``UPDATE`` in the group matched nothing then goes through `append`,
whose second read says why or recognises it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psych_core import (
    FINAL_STATUSES,
    Batch,
    StoreError,
    StoreLimits,
    StoreUnavailable,
    quick_init,
)
from psych_core.ports import AppendFence, check_batch, judge_append
from psych_store_mysql._driver import Connection, Result
from psych_store_mysql._inbox import DELIVER_STATEMENTS, deliver, delivery_checks
from psych_store_mysql._literals import (
    decode,
    identifier,
    integer,
    optional_stamp,
    text,
)
from psych_store_mysql._reads import NOT_FINAL
from psych_store_mysql._transaction import commit, unexpected

_INSERT_INTO = "INSERT INTO psych_records (run_id, seq, attempt, batch_id, body) "

INSERT_VALUES = f"{_INSERT_INTO}VALUES "
"""The start of a multi-row ``INSERT`` of records (`insert_rows`)."""

ROW_SEPARATOR = "), ("
"""What separates two rows of `insert_rows`."""

WRITES_BEFORE_INSERTS = 2
"""The answers to a batch's `writes` before its first record's ``INSERT``: ``UPDATE``, ``SET``."""


@quick_init
@dataclass(frozen=True, slots=True)
class Encoded:
    """A batch's records as JSON text, checked before anything is sent (`check_batch`).

    The problem is raised only where `judge_append` puts it, after the fence check, because
    `LeaseLost` comes first.
    """

    texts: tuple[str, ...]
    problem: StoreError | None


def encode(run_id: str, batch: Batch, limits: StoreLimits) -> Encoded:
    """Serialise the batch and find what is wrong with it, without touching the database."""
    checked = check_batch(run_id, batch, limits)
    if checked.problem is not None:
        return Encoded((), checked.problem)
    return Encoded(checked.texts(), None)


def statements(run_id: str, attempt: int, batch: Batch, texts: tuple[str, ...]) -> str:
    """The first round trip of a well-formed, non-empty batch (see the module docstring):
    it leaves the transaction open, for `append` to commit once it has checked the answers."""
    return ";\n".join(["START TRANSACTION", *writes(run_id, attempt, batch, texts)])


def update(run_id: str, attempt: int, batch: Batch, records: int) -> str:
    """The fenced ``UPDATE`` of a well-formed, non-empty batch of `records` records (see the
    module docstring): it matches the run row only when the batch may be written, moves the
    row past the batch, and hands back ``inbox_last`` as its ``LAST_INSERT_ID``."""
    run = identifier(run_id, "run id")
    first = batch.records[0].seq
    index = batch.index
    changes = [
        f"status = {text(index.status)}",
        f"waiting = {'NULL' if index.waiting is None else text(index.waiting)}",
        f"next_seq = {integer(first + records)}",
        "updated_at = UTC_TIMESTAMP(6)",
        "inbox_last = LAST_INSERT_ID(inbox_last)",
    ]
    checks = [
        f"run_id = {run}",
        f"attempt = {integer(attempt)}",
        f"next_seq = {integer(first)}",
        "lease_owner IS NOT NULL",
        NOT_FINAL,
    ]
    if index.releases_lease:
        due = optional_stamp(index.due_at, "due_at")
        changes += ["lease_owner = NULL", "lease_expires_at = NULL", f"runnable_at = {due}"]
        checks.append(f"inbox_last <= {integer(batch.inbox_seen)}")
    if index.status == "waiting":
        changes.append("claims = 0")
    return f"UPDATE psych_runs SET {', '.join(changes)} WHERE {' AND '.join(checks)}"


def record_rows(run_id: str, attempt: int, batch: Batch, texts: tuple[str, ...]) -> list[str]:
    """Each record's row of ``psych_records`` (run_id, seq, attempt, batch_id, body) as SQL:
    the batch's id is kept on its first record only."""
    run = identifier(run_id, "run id")
    first = batch.records[0].seq
    batch_id = identifier(batch.batch_id, "batch id")
    return [
        f"{run}, {integer(first + offset)}, {integer(attempt)}, "
        f"{batch_id if offset == 0 else 'NULL'}, {text(body)}"
        for offset, body in enumerate(texts)
    ]


def insert_rows(rows: Sequence[str]) -> str:
    """One ``INSERT`` of `rows` (`record_rows`): it writes every row or fails."""
    return f"{INSERT_VALUES}({ROW_SEPARATOR.join(rows)})"


def writes(run_id: str, attempt: int, batch: Batch, texts: tuple[str, ...]) -> list[str]:
    """A batch's statements inside a transaction the caller opened: the fenced ``UPDATE``,
    ``@psych_ok`` := whether it matched, then each record and notice, written only when it
    did."""
    rows = record_rows(run_id, attempt, batch, texts)
    parts = [update(run_id, attempt, batch, len(texts)), "SET @psych_ok = ROW_COUNT()"]
    parts += [f"{_INSERT_INTO}SELECT {row} FROM DUAL WHERE @psych_ok = 1" for row in rows]
    for notice in batch.notify:
        parts += deliver(notice.run_id, notice.key, notice.signal, only_if="@psych_ok = 1")
    return parts


def answers_to(batch: Batch) -> int:
    """How many answers a batch's `writes` get."""
    return WRITES_BEFORE_INSERTS + len(batch.records) + len(batch.notify) * DELIVER_STATEMENTS


def write_checks(
    batch: Batch, answers: Sequence[Result], *, matched: bool = True
) -> list[tuple[str, int, int]]:
    """What the answers to a batch's `writes` (its ``UPDATE``'s first) must show, for
    `unexpected`: a record written at each seq when the ``UPDATE`` `matched`, none when not,
    and each notice numbered and written alike."""
    first = batch.records[0].seq
    inserts = answers[WRITES_BEFORE_INSERTS : WRITES_BEFORE_INSERTS + len(batch.records)]
    wanted = 1 if matched else 0
    checks = [
        (f"records written at seq {first + i}", wanted, a.rowcount) for i, a in enumerate(inserts)
    ]
    start = WRITES_BEFORE_INSERTS + len(batch.records)
    for n, notice in enumerate(batch.notify):
        offset = start + n * DELIVER_STATEMENTS
        delivery = list(answers[offset : offset + DELIVER_STATEMENTS])
        checks += delivery_checks(notice.run_id, delivery)
    return checks


def block(run_id: str, attempt: int, batch: Batch, texts: tuple[str, ...]) -> str:
    """MariaDB: a well-formed batch without notices in one statement (see the module
    docstring), which answers one row: whether the ``UPDATE`` matched (1 or 0), and the run's
    ``inbox_last`` when it did. Its records go in one multi-row ``INSERT``, made only when the
    ``UPDATE`` matched: the server's one decision, with no flag for each record to read."""
    if batch.notify:
        raise ValueError(f"{describe(run_id, attempt, batch)} has notices: not a block's")
    rows = insert_rows(record_rows(run_id, attempt, batch, texts))
    inside = [
        "DECLARE matched INT DEFAULT 0",
        "DECLARE last BIGINT DEFAULT 0",
        "START TRANSACTION",
        update(run_id, attempt, batch, len(texts)),
        "SET matched = ROW_COUNT(), last = LAST_INSERT_ID()",
        f"IF matched = 1 THEN\n{rows};\nCOMMIT;\nELSE ROLLBACK;\nEND IF",
        "SELECT matched, last",
    ]
    return "BEGIN NOT ATOMIC\n" + ";\n".join(inside) + ";\nEND"


async def append(
    conn: Connection,
    run_id: str,
    attempt: int,
    batch: Batch,
    encoded: Encoded,
    *,
    one_trip: bool = False,
) -> int:
    """Add a batch; see `Store.append` for the checks and their order. Returns inbox_last.

    Args:
        one_trip: the server runs `block` (MariaDB): a batch without notices goes in one.
    """
    if not batch.records or encoded.problem is not None:
        return await explain(conn, run_id, attempt, batch, encoded)
    if one_trip and not batch.notify:
        answers = await conn.batch(block(run_id, attempt, batch, encoded.texts))
        rows = [answer.rows for answer in answers if answer.rows]
        if len(rows) != 1 or len(rows[0]) != 1:
            # Never seen: the block's one row is its last word, after its COMMIT or ROLLBACK.
            raise StoreUnavailable(
                f"{describe(run_id, attempt, batch)}: the server's answers disagree "
                f"(result sets with rows: {len(rows)}, not 1); it may or may not have been "
                "applied: read back before doing it again"
            )
        matched, inbox_last = rows[0][0]
        if int(matched) != 1:  # rolled back inside the block: read the run to say why
            return await explain(conn, run_id, attempt, batch, encoded)
        return int(inbox_last)
    answers = await conn.batch(statements(run_id, attempt, batch, encoded.texts))
    update = answers[1]
    if update.rowcount != 1:
        return await explain(conn, run_id, attempt, batch, encoded, rollback=True)
    await commit(conn, _disagreement(run_id, attempt, batch, answers))
    return update.insert_id


def _disagreement(run_id: str, attempt: int, batch: Batch, answers: list[Result]) -> str | None:
    """What is wrong with the answers of a batch whose ``UPDATE`` matched, else None."""
    checks = write_checks(batch, answers[1:])
    checks.append(("answers to the statements", 1 + answers_to(batch), len(answers)))
    return unexpected(describe(run_id, attempt, batch), checks)


def describe(run_id: str, attempt: int, batch: Batch) -> str:
    """The append, for messages: ``run R: the append of batch B (attempt A, seq F)``."""
    first = batch.records[0].seq if batch.records else 0
    return f"run {run_id}: the append of batch {batch.batch_id} (attempt {attempt}, seq {first})"


async def explain(
    conn: Connection,
    run_id: str,
    attempt: int,
    batch: Batch,
    encoded: Encoded,
    *,
    rollback: bool = False,
) -> int:
    """Read the run again and raise what refused the batch, in the contract's order; or
    return inbox_last when there is nothing to refuse (an empty or a re-sent batch).

    Args:
        rollback: end the refused batch's open transaction first, in the same round trip.
    """
    run = identifier(run_id, "run id")
    first = batch.records[0].seq if batch.records else 0
    read = (
        "SELECT r.attempt, r.next_seq, r.status, r.lease_owner IS NOT NULL, r.inbox_last, "
        "b.batch_id, b.attempt FROM psych_runs r LEFT JOIN psych_records b "
        f"ON b.run_id = r.run_id AND b.seq = {integer(first)} WHERE r.run_id = {run}"
    )
    result = (await conn.batch(f"ROLLBACK;\n{read}" if rollback else read))[-1]
    fence, stored = None, None
    if result.rows:
        current, next_seq, status, owned, inbox_last, stored_batch, stored_attempt = result.rows[0]
        leased = bool(owned) and status not in FINAL_STATUSES
        fence = AppendFence(int(current), int(next_seq), leased, int(inbox_last))
        stored = None if stored_batch is None else (decode(stored_batch), stored_attempt)
    mine = (batch.batch_id, attempt)
    done = judge_append(run_id, attempt, batch, encoded.problem, fence, lambda: stored == mine)
    if done is not None:
        return done
    raise StoreError(
        f"{describe(run_id, attempt, batch)} was not applied, and reading the run again shows "
        "no reason; it was written by nothing, so it is safe to send again"
    )

"""Group commit (`Store.append_many`): several runs' batches in ONE statement, one round trip
and one commit, each fenced exactly as `append` fences it alone.

The group statement (`_sql`'s ``append_group``) writes only what passes every fence at once:
a batch with records, nothing wrong with them (`_log.encode`), and no notices. Whatever it
does not write, and whatever it was never given, goes through `append` itself, which writes
a batch that has become writable since, names the refusal, or recognises a batch that had
landed by its id. So the group adds no rule of its own: a refusal is always `append`'s.

When the group statement fails (a record key already taken, a connection that broke and did
not come back), its transaction wrote nothing or its outcome is unknown; every batch then goes
through `append`, which is safe to send after either.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from psych_core import PsychError, quick_init
from psych_core.ports import Append, AppendResult, StoreLimits
from psych_store_postgres._connections import Connection, Connections
from psych_store_postgres._log import Encoded, encode
from psych_store_postgres._rows import check_aware
from psych_store_postgres._sql import Sql

type Outcome = AppendResult | PsychError
"""What `append_many` says of one append: its result, or the refusal `append` raises."""


@quick_init
@dataclass(frozen=True, slots=True)
class Prepared:
    """An append checked and serialised before any IO, as `append` does first."""

    append: Append
    encoded: Encoded

    @property
    def groupable(self) -> bool:
        """Whether the group statement can write it: records and nothing wrong with them
        (else only `append`'s diagnosis can say what refuses it), and no notices (delivering
        them, numbered after any racing signal, is `append`'s own statement)."""
        batch = self.append.batch
        return bool(batch.records) and self.encoded.problem is None and not batch.notify


def prepare(append: Append, limits: StoreLimits) -> Prepared:
    """Check `due_at` and serialise the batch; raises ValueError for a naive `due_at`."""
    due_at = append.batch.index.due_at
    if due_at is not None:
        check_aware(due_at, "due_at")
    return Prepared(append, encode(append.run_id, append.batch, limits))


type Alone = Callable[[Prepared], Awaitable[AppendResult]]
"""`append` for one prepared batch: the path every refusal and every re-send goes through."""


async def append_many(
    connections: Connections, sql: Sql, group: Sequence[Prepared], alone: Alone
) -> list[Outcome]:
    """Each append's outcome, in order. The groupable ones (when there are at least two) go in
    one statement, and what it did not write then goes through `alone`; the others go through
    `alone` from the start, beside it."""
    outcomes: list[Outcome | None] = [None] * len(group)

    async def settle(position: int) -> None:
        try:
            outcomes[position] = await alone(group[position])
        except PsychError as refused:
            outcomes[position] = refused

    together = [position for position, one in enumerate(group) if one.groupable]
    if len(together) < 2:
        together = []  # one batch costs the same alone, and `append` is its one path
    apart = set(range(len(group))).difference(together)
    if len(apart) == 1 and not together:
        await settle(*apart)  # a lone append: no task, no group
        return [outcome for outcome in outcomes if outcome is not None]

    async def commit_together() -> None:
        written = await _commit(connections, sql, [group[position] for position in together])
        left = []
        for ordinal, position in enumerate(together, start=1):
            inbox_last = written.get(ordinal)
            if inbox_last is None:
                left.append(position)
            else:
                outcomes[position] = AppendResult(inbox_last)
        async with asyncio.TaskGroup() as tasks:
            for position in left:
                tasks.create_task(settle(position))

    async with asyncio.TaskGroup() as tasks:
        if together:
            tasks.create_task(commit_together())
        for position in sorted(apart):
            tasks.create_task(settle(position))
    settled = [outcome for outcome in outcomes if outcome is not None]
    assert len(settled) == len(group)  # every task has settled its position
    return settled


async def _commit(
    connections: Connections, sql: Sql, members: Sequence[Prepared]
) -> dict[int, int]:
    """Send the group statement: {ordinal (from 1): inbox_last} of each batch it wrote; empty
    when the statement failed, so that every batch goes through `append`.

    A connection that broke in flight sends the statement again: a batch that had landed
    no longer matches its fence (its run's next seq moved on), so it is left for `append`,
    which recognises it.
    """
    arguments = _arguments(members)
    what = f"the group append of {len(members)} runs"
    try:
        rows = await connections.run(
            what, lambda conn, _again: _send(conn, sql, arguments), resend=True
        )
    except PsychError:
        return {}
    return {int(ordinal): int(inbox_last) for ordinal, inbox_last in rows}


async def _send(conn: Connection, sql: Sql, arguments: list[object]) -> list[tuple[int, int]]:
    rows = await conn.fetch(sql.append_group, *arguments)
    return [(row[0], row[1]) for row in rows]


def _arguments(members: Sequence[Prepared]) -> list[object]:
    """The group statement's parameters: one array element per batch, and the records as
    two flat arrays (their batch's ordinal, their body)."""
    run_ids: list[str] = []
    attempts: list[int] = []
    firsts: list[int] = []
    counts: list[int] = []
    batch_ids: list[str] = []
    statuses: list[str] = []
    waitings: list[str | None] = []
    releases: list[bool] = []
    due_ats: list[dt.datetime | None] = []
    inbox_seens: list[int] = []
    owners: list[int] = []
    bodies: list[bytes] = []
    for ordinal, member in enumerate(members, start=1):
        append, encoded = member.append, member.encoded
        batch, index = append.batch, append.batch.index
        run_ids.append(append.run_id)
        attempts.append(append.attempt)
        firsts.append(batch.records[0].seq)
        counts.append(len(encoded.bodies))
        batch_ids.append(batch.batch_id)
        statuses.append(index.status)
        waitings.append(index.waiting)
        releases.append(index.releases_lease)
        due_ats.append(index.due_at)
        inbox_seens.append(batch.inbox_seen)
        owners.extend([ordinal] * len(encoded.bodies))
        bodies.extend(encoded.bodies)
    return [
        run_ids,
        attempts,
        firsts,
        counts,
        batch_ids,
        statuses,
        waitings,
        releases,
        due_ats,
        inbox_seens,
        owners,
        bodies,
    ]

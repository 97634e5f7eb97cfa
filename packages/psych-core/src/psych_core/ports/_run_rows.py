"""Run rows as the SQL stores keep them, and pages of them: one column order, one paging rule.

The SQL stores name their run row's columns after `RunRow`'s fields, so a row comes back as
`RUN_ROW_COLUMNS` in that order and `run_row_of` builds the `RunRow`; what differs between
databases (how a time or a text comes back from the driver) is passed in. A listing fetches
one row more than the page holds, to learn whether more follow (`page_of`); its cursor is the
last run's creation number (`cursor_position` reads it back).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from psych_core.ports._store import Page, RunRow

RUN_ROW_COLUMNS = ", ".join(field.name for field in dataclasses.fields(RunRow))
"""`RunRow`'s fields, in order, as the column list of a ``SELECT``."""


def run_row_of(
    values: Sequence[Any],
    *,
    time: Callable[[Any], dt.datetime],
    text: Callable[[Any], str] = str,
) -> RunRow:
    """The `RunRow` whose columns are `values`, in the order of `RUN_ROW_COLUMNS`.

    Args:
        time: a time column's value (never NULL here) as an aware UTC datetime.
        text: an id or name column's value as text, for a driver that returns bytes.
    """
    (
        run_id,
        tenant,
        agent,
        spec_version,
        status,
        waiting,
        parent_run_id,
        attempt,
        lease_owner,
        lease_expires_at,
        runnable_at,
        next_seq,
        inbox_last,
        created_at,
        updated_at,
        claims,
    ) = values
    return RunRow(
        run_id=text(run_id),
        tenant=text(tenant),
        agent=text(agent),
        spec_version=text(spec_version),
        status=status,
        waiting=waiting,
        parent_run_id=None if parent_run_id is None else text(parent_run_id),
        attempt=int(attempt),
        lease_owner=None if lease_owner is None else text(lease_owner),
        lease_expires_at=None if lease_expires_at is None else time(lease_expires_at),
        runnable_at=None if runnable_at is None else time(runnable_at),
        next_seq=int(next_seq),
        inbox_last=int(inbox_last),
        created_at=time(created_at),
        updated_at=time(updated_at),
        claims=int(claims),
    )


def page_of[R, T](
    rows: Sequence[R], limit: int, item: Callable[[R], T], position: Callable[[R], int]
) -> Page[T]:
    """The first `limit` of `rows` as a page, its cursor the last one's `position` when more
    follow; the store fetched `limit` + 1 rows (or all) in listing order to tell."""
    size = max(limit, 0)
    page = rows[:size]
    more = len(rows) > size
    return Page(
        items=tuple(item(row) for row in page),
        next_cursor=str(position(page[-1])) if more and page else None,
    )


def cursor_position(cursor: str) -> int:
    """The creation number in a cursor `page_of` made; `ValueError` for any other text."""
    try:
        return int(cursor)
    except ValueError:
        raise ValueError(
            f"cursor {cursor!r} was not issued by this store; pass a Page.next_cursor, or "
            "None for the first page"
        ) from None

"""Listing runs: the store's pages of run rows, filtered and paged again for the console.

`Store.list_runs` pages a tenant's runs newest first and filters by status. The console also
filters by agent, by what a run waits for, by the stuck rule and by id; this module reads the
store's pages and keeps what matches. Its cursor says where to go on: the store's cursor of
the page it stopped in, and the last run it returned there. A request reads at most
`MAX_PAGES` of the store's pages: a filter that matches little returns fewer runs than asked,
with a cursor to go on from, rather than scanning every run at once.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

import psych_runtime
from psych_playground.stuck import Stuck, stuck
from psych_runtime import RunQuery, RunStatusName, ScopedStore, WaitingReason
from psych_runtime.ports import RunRow

STORE_PAGE = 100
MAX_PAGES = 20

WaitingFilter = Literal["approval", "question", "any"]


class RunSummary(BaseModel):
    """One run as a list shows it: its row, and whether it is stuck (`stuck.py`)."""

    run_id: str
    agent: str
    spec_version: str
    status: RunStatusName
    waiting: WaitingReason | None
    attempt: int
    parent_run_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    lease_expires_at: dt.datetime | None
    stuck: Stuck | None


class RunsPage(BaseModel):
    """A page of runs, newest first; `next_cursor` is None on the last."""

    items: list[RunSummary]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What the runs listed must match; None (or False) matches every run."""

    agent: str | None = None
    status: RunStatusName | None = None
    waiting: WaitingFilter | None = None
    failed: bool = False
    stuck: bool = False
    q: str | None = None


class BadCursor(ValueError):
    """A cursor this server did not issue."""


def summary_of(row: RunRow, *, now: dt.datetime, lease: dt.timedelta) -> RunSummary:
    """The summary of run `row` at `now`."""
    return RunSummary(
        run_id=row.run_id,
        agent=row.agent,
        spec_version=row.spec_version,
        status=row.status,
        waiting=row.waiting,
        attempt=row.attempt,
        parent_run_id=row.parent_run_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        lease_expires_at=row.lease_expires_at,
        stuck=stuck(row, now, lease),
    )


async def list_runs(
    store: ScopedStore,
    match: RunFilter,
    *,
    cursor: str | None,
    limit: int,
    now: dt.datetime,
    lease: dt.timedelta,
) -> RunsPage:
    """The runs of `store`'s tenant that `match` keeps, `limit` at most, after `cursor`."""
    if match.q:
        exact = await store.store.get_run(store.tenant, match.q.strip())
        if exact is not None and cursor is None:
            summary = summary_of(exact, now=now, lease=lease)
            keep = await _keeps(store, match, exact, summary)
            return RunsPage(items=[summary] if keep else [], next_cursor=None)
    status = _store_status(match)
    if status == "none":
        return RunsPage(items=[], next_cursor=None)
    page_cursor, after = decode_cursor(cursor)
    items: list[RunSummary] = []
    found_at: tuple[str | None, str] | None = None  # where the last item was: page and run
    for _ in range(MAX_PAGES):
        try:
            query = RunQuery(status=status, cursor=page_cursor, limit=STORE_PAGE)
            page = await store.list_runs(query)
        except ValueError as error:  # the store's own check of its cursor
            raise BadCursor(f"cursor {cursor!r} was not issued by this server: {error}") from None
        for row in page.items:
            if after is not None:
                after = None if row.run_id == after else after
                continue
            summary = summary_of(row, now=now, lease=lease)
            if not await _keeps(store, match, row, summary):
                continue
            if len(items) == limit:
                # One more matches: the page is full, and there is a next one.
                assert found_at is not None
                return RunsPage(items=items, next_cursor=encode_cursor(*found_at))
            items.append(summary)
            found_at = (page_cursor, row.run_id)
        if page.next_cursor is None:
            return RunsPage(items=items, next_cursor=None)
        page_cursor = page.next_cursor
    # The scan budget is spent: go on from the last run returned, or from the next page.
    if found_at is not None and len(items) == limit:
        return RunsPage(items=items, next_cursor=encode_cursor(*found_at))
    return RunsPage(items=items, next_cursor=encode_cursor(page_cursor, after))


def _store_status(match: RunFilter) -> RunStatusName | Literal["none"] | None:
    """The status the store can filter by: the one asked, ``failed`` or ``waiting`` when the
    other filters say so, or ``none`` when they contradict each other."""
    wanted: set[RunStatusName] = set()
    if match.status is not None:
        wanted.add(match.status)
    if match.failed:
        wanted.add("failed")
    if match.waiting is not None:
        wanted.add("waiting")
    if len(wanted) > 1:
        return "none"
    return wanted.pop() if wanted else None


async def _keeps(store: ScopedStore, match: RunFilter, row: RunRow, summary: RunSummary) -> bool:
    if match.agent is not None and row.agent != match.agent:
        return False
    if match.status is not None and row.status != match.status:
        return False
    if match.failed and row.status != "failed":
        return False
    if match.stuck and summary.stuck is None:
        return False
    if match.q and not row.run_id.upper().startswith(match.q.strip().upper()):
        return False
    if match.waiting is not None:
        if row.status != "waiting":
            return False
        if match.waiting == "approval":
            return row.waiting == "approval"
        if match.waiting == "question":
            # The row says "external"; only the log says whether it is a question to the user.
            return row.waiting == "external" and bool(
                (await psych_runtime.status(store, row.run_id)).questions
            )
    return True


def encode_cursor(page: str | None, after: str | None) -> str:
    """A cursor: the store's cursor of a page, and the last run returned from it."""
    text = json.dumps({"page": page, "after": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[str | None, str | None]:
    """What `encode_cursor` put in `cursor`; `BadCursor` for any other text."""
    if not cursor:
        return None, None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        data = json.loads(text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        data = None
    if not (
        isinstance(data, dict)
        and set(data) == {"page", "after"}
        and all(value is None or isinstance(value, str) for value in data.values())
    ):
        raise BadCursor(f"cursor {cursor!r} was not issued by this server; start without one")
    return data["page"], data["after"]

"""What the routes are given: the server's resources, and the run a path names.

The console serves one tenant (PSYCH_TENANT): every request reads and writes through the store
scoped to it. An app with users would pick the scope from who is calling, here.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Query, Request

from psych_playground.resources import Playground
from psych_runtime.ports import RunRow


def playground(request: Request) -> Playground:
    """The resources the server opened at start."""
    ground: Playground = request.app.state.playground
    return ground


Ground = Annotated[Playground, Depends(playground)]


async def run_row(run_id: str, ground: Ground) -> RunRow:
    """The row of the run the path names; 404 when the tenant has no such run."""
    row = await ground.store.get_run(ground.settings.tenant, run_id)
    if row is None:
        raise HTTPException(404, f"no run {run_id} in tenant {ground.settings.tenant!r}")
    return row


Row = Annotated[RunRow, Depends(run_row)]


def resume_after(
    after: Annotated[int, Query(ge=-1)] = -1,
    last_event_id: Annotated[str | None, Header()] = None,
) -> int:
    """Where a stream of events starts: after the Last-Event-ID a reconnecting browser sends,
    else after `after` (-1: from the start)."""
    if last_event_id is None or not last_event_id.strip():
        return after
    try:
        seq = int(last_event_id)
    except ValueError:
        raise HTTPException(
            422, f"Last-Event-ID {last_event_id!r} is not a seq this server sent"
        ) from None
    if seq < -1:
        raise HTTPException(422, f"Last-Event-ID {seq} is not a seq (they start at 0)")
    return seq


def now() -> dt.datetime:
    """The server's time, for the stuck rule and open timelines."""
    return dt.datetime.now(dt.UTC)

"""Following a run live, as server-sent events. Both streams end with the run (an ``end`` event
with its status); a browser that reconnects sends the last ``id`` it saw as Last-Event-ID and
gets exactly what came after it.

    GET /api/runs/{id}/events   each record as it lands (``event: record``, ``id: <seq>``)
    GET /api/runs/{id}/text     the assistant's words (``event: text``): ``delta`` pieces while
                                the model writes them (PostgreSQL only: they cross processes
                                by LISTEN/NOTIFY), then each message's ``final`` text from the
                                log, whose seq is its ``id``
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.sse import EventSourceResponse, ServerSentEvent

import psych_runtime
from psych_playground.deps import Ground, Row, resume_after
from psych_playground.resources import Playground
from psych_runtime.conversations import stream_text

router = APIRouter(prefix="/api/runs/{run_id}", tags=["live"])

POLL_SECONDS = 0.25
"""How often a stream looks for new records where the store cannot wake it (SQLite)."""

After = Annotated[int, Depends(resume_after)]


@router.get("/events", response_class=EventSourceResponse)
async def events(row: Row, ground: Ground, after: After) -> AsyncIterator[ServerSentEvent]:
    """The run's records after `after` (or Last-Event-ID), each exactly once, until it ends."""
    records = psych_runtime.stream(ground.scoped, row.run_id, after=after, poll=POLL_SECONDS)
    async for record in records:
        yield ServerSentEvent(event="record", id=str(record.seq), raw_data=record.model_dump_json())
    yield await _end(ground, row.run_id)


@router.get("/text", response_class=EventSourceResponse)
async def text(row: Row, ground: Ground, after: After) -> AsyncIterator[ServerSentEvent]:
    """The assistant's words (`stream_text`); resume after the seq of the last ``final``."""
    words = stream_text(ground.scoped, row.run_id, after=after, live=ground.live, poll=POLL_SECONDS)
    async for event in words:
        yield ServerSentEvent(
            event="text",
            id=str(event.seq) if event.kind == "final" else None,
            data={"kind": event.kind, "run_id": event.run_id, "seq": event.seq, "text": event.text},
        )
    yield await _end(ground, row.run_id)


async def _end(ground: Playground, run_id: str) -> ServerSentEvent:
    status = await psych_runtime.status(ground.scoped, run_id)
    return ServerSentEvent(event="end", data={"status": status.status})

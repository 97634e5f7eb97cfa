"""/api/runs: admitting runs, listing them, and reading one back. Every answer is a fold of the
run's log (through psych_runtime's reading functions) or its row in the store.

    POST /api/runs                  admit a run of a published spec (202); a worker runs it
    GET  /api/runs                  runs, newest first, filtered and paged
    GET  /api/runs/{id}             its row, its status, what it continues and waits for
    GET  /api/runs/{id}/log         its records, a page at a time
    GET  /api/runs/{id}/report      what happened: tool calls, usage, cost, timings
    GET  /api/runs/{id}/timeline    bars, marks and idle gaps, to draw
    GET  /api/runs/{id}/thread      the thread it belongs to, as chat messages
    GET  /api/runs/{id}/workflow    a workflow run's step tree
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Header, HTTPException, Query
from pydantic import BaseModel, BeforeValidator, Field

import psych_runtime
from psych_playground.approvals import PendingApproval, pending_approvals
from psych_playground.chat import ChatMessage, chat_messages
from psych_playground.deps import Ground, Row, now
from psych_playground.resources import Playground
from psych_playground.runs_query import (
    RunFilter,
    RunsPage,
    RunSummary,
    WaitingFilter,
    list_runs,
    summary_of,
)
from psych_playground.timeline import Timeline, fold_timeline
from psych_runtime import Report, RunStatus, RunStatusName
from psych_runtime.conversations import thread
from psych_runtime.errors import NotReplayable
from psych_runtime.ports import RunRow
from psych_runtime.records import Continued, Record, RunAdmitted
from psych_runtime.workflows import WorkflowView

router = APIRouter(prefix="/api/runs", tags=["runs"])

RunKind = Literal["agent", "workflow"]


class StartRun(BaseModel):
    agent: str = Field(min_length=1)
    version: str | None = None
    message: str = Field(min_length=1, max_length=20_000)
    continues: str | None = None


class Started(BaseModel):
    run_id: str
    agent: str
    version: str


class RunDetail(BaseModel):
    """A run: its row, its status, its kind, its neighbours in its thread, and the calls it
    waits to have approved (tool, arguments and rule, for an approval card)."""

    summary: RunSummary
    status: RunStatus
    kind: RunKind
    continues: str | None
    continued_by: str | None
    approvals: list[PendingApproval]


class LogPage(BaseModel):
    records: list[Record]
    next_after: int | None
    last_seq: int


class ThreadView(BaseModel):
    runs: list[str]
    messages: list[ChatMessage]


@router.post("", status_code=202)
async def start_run(
    body: StartRun,
    ground: Ground,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> Started:
    """Admit a run of the agent's version (its latest by default) and return at once. With
    `continues`, the run carries on the thread of that run (which must have ended); with an
    Idempotency-Key header, a retried request gets the same run."""
    entry = await ground.catalog.find(ground.settings.tenant, body.agent, body.version)
    if entry is None:
        which = f"version {body.version} of " if body.version else ""
        raise HTTPException(404, f"no {which}agent or workflow {body.agent!r} is published")
    spec = entry.spec()
    run_id = await psych_runtime.dispatch(
        ground.scoped,
        spec,
        body.message,
        continues=body.continues,
        idempotency_key=idempotency_key,
    )
    return Started(run_id=run_id, agent=spec.name, version=spec.version)


def _unset_when_blank(value: object) -> object:
    # A form's empty select or field sends "status=": the filter is off, not a bad value.
    return None if value == "" else value


Blank = BeforeValidator(_unset_when_blank)


@router.get("")
async def runs(
    ground: Ground,
    agent: Annotated[str | None, Blank] = None,
    status: Annotated[RunStatusName | None, Blank] = None,
    waiting: Annotated[WaitingFilter | None, Blank] = None,
    failed: Annotated[bool | None, Blank] = None,
    stuck: Annotated[bool | None, Blank] = None,
    q: Annotated[str | None, Blank] = None,
    cursor: Annotated[str | None, Blank] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> RunsPage:
    """Runs newest first, filtered: by agent, status, what they wait for, failed, stuck, and
    run id (or its first characters, `q`). An empty parameter filters nothing."""
    match = RunFilter(
        agent=agent,
        status=status,
        waiting=waiting,
        failed=bool(failed),
        stuck=bool(stuck),
        q=q,
    )
    return await list_runs(
        ground.scoped, match, cursor=cursor, limit=limit, now=now(), lease=ground.lease
    )


@router.get("/{run_id}")
async def run_detail(row: Row, ground: Ground) -> RunDetail:
    records = await psych_runtime.read_log(ground.scoped, row.run_id)
    status = await psych_runtime.status(ground.scoped, row.run_id)
    admitted = records[0].body if records else None
    return RunDetail(
        summary=summary_of(row, now=now(), lease=ground.lease),
        status=status,
        kind=await run_kind(ground, row),
        continues=admitted.continues if isinstance(admitted, RunAdmitted) else None,
        continued_by=await continued_by(ground, row),
        approvals=pending_approvals(records, status.waiting_for),
    )


@router.get("/{run_id}/log")
async def run_log(
    row: Row,
    ground: Ground,
    after: Annotated[int, Query(ge=-1)] = -1,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> LogPage:
    """The records after seq `after`, `limit` at most; `next_after` is where the next page
    starts (None when there is no more yet), `last_seq` the last seq written so far."""
    records = await ground.scoped.read(row.run_id, after, limit + 1)
    more = len(records) > limit
    records = records[:limit]
    last_seq = max(row.next_seq - 1, records[-1].seq if records else -1)
    return LogPage(
        records=records,
        next_after=records[-1].seq if more else None,
        last_seq=last_seq,
    )


@router.get("/{run_id}/report")
async def run_report(row: Row, ground: Ground) -> Report:
    return await psych_runtime.report(ground.scoped, row.run_id)


@router.get("/{run_id}/timeline")
async def run_timeline(row: Row, ground: Ground) -> Timeline:
    records = await psych_runtime.read_log(ground.scoped, row.run_id)
    agent = await run_kind(ground, row) == "agent"
    return fold_timeline(records, now=now(), agent=agent)


@router.get("/{run_id}/thread")
async def run_thread(row: Row, ground: Ground) -> ThreadView:
    """The thread the run belongs to: its runs, first to latest, and their messages."""
    chain = await thread(ground.scoped, row.run_id)
    messages: list[ChatMessage] = []
    for run_id in chain.run_ids:
        messages += chat_messages(await psych_runtime.read_log(ground.scoped, run_id))
    return ThreadView(runs=list(chain.run_ids), messages=messages)


@router.get("/{run_id}/workflow")
async def run_workflow(row: Row, ground: Ground) -> WorkflowView:
    try:
        return await psych_runtime.workflow_view(ground.scoped, row.run_id)
    except NotReplayable as error:
        raise HTTPException(404, str(error)) from None


async def run_kind(ground: Playground, row: RunRow) -> RunKind:
    """Whether the run is an agent's or a workflow's, from the spec it was admitted with."""
    text = await ground.scoped.get_spec(row.spec_version)
    data = json.loads(text) if text is not None else None
    return "workflow" if isinstance(data, dict) and data.get("kind") == "workflow" else "agent"


async def continued_by(ground: Playground, row: RunRow) -> str | None:
    """The run that continues this one: the mark a continuation leaves in its inbox."""
    if row.status not in ("completed", "failed", "cancelled"):
        return None
    for entry in await ground.scoped.signals(row.run_id):
        if isinstance(entry.signal, Continued):
            return entry.signal.continuation
    return None

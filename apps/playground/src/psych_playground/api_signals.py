"""/api/runs/{id}/...: telling a run something. Each is one of psych_runtime's signal functions:
an entry in the run's inbox, moved into its log by the worker that runs it next; the answer
is 202 with the entry's number (``seq``), since the run takes it up in its own time.

    POST approvals/{call_id}  approve (with edited arguments, perhaps) or deny a waiting call
    POST answers/{call_id}    answer a question the run asked the user (or a workflow's human step)
    POST cancel               cancel the run
    POST interrupt            a user message the model reads at its next turn
    POST send                 a user message for a queue: steer, follow_up or next_run
    POST replay               a new run of an ended workflow run, from one of its steps
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field, JsonValue

import psych_runtime
from psych_playground.deps import Ground, Row
from psych_runtime.conversations import send
from psych_runtime.records import UserQueue

router = APIRouter(prefix="/api/runs/{run_id}", tags=["signals"])

Text = Annotated[str, Field(min_length=1, max_length=20_000)]


class Decision(BaseModel):
    approve: bool
    by: Annotated[str, Field(min_length=1, max_length=200)]
    note: str | None = None
    arguments: dict[str, JsonValue] | None = None


class AnswerBody(BaseModel):
    answer: JsonValue


class CancelBody(BaseModel):
    reason: str = ""


class InterruptBody(BaseModel):
    message: Text


class SendBody(BaseModel):
    message: Text
    queue: UserQueue = "steer"


class ReplayBody(BaseModel):
    from_step: Annotated[str, Field(min_length=1)]


class Accepted(BaseModel):
    """The inbox entry a signal became."""

    seq: int


class Replayed(BaseModel):
    run_id: str


@router.post("/approvals/{call_id}", status_code=202)
async def decide(call_id: str, decision: Decision, row: Row, ground: Ground) -> Accepted:
    """Approve call `call_id` (with `arguments`, to run it with those instead) or deny it; a
    decision is single-use (409 for a call not waiting for one)."""
    if decision.approve:
        seq = await psych_runtime.approve(
            ground.scoped,
            row.run_id,
            call_id,
            by=decision.by,
            note=decision.note,
            arguments=decision.arguments,
        )
    else:
        if decision.arguments is not None:
            raise HTTPException(
                422,
                f"run {row.run_id}: arguments edit call {call_id} when it is approved; a denied "
                "call does not run (nothing was sent)",
            )
        reason = decision.note or f"denied by {decision.by}"
        seq = await psych_runtime.deny(
            ground.scoped, row.run_id, call_id, by=decision.by, reason=reason
        )
    return Accepted(seq=seq)


@router.post("/answers/{call_id}", status_code=202)
async def answer(call_id: str, body: AnswerBody, row: Row, ground: Ground) -> Accepted:
    """Answer the question call `call_id` asks (a workflow's human step: its name or memo key);
    single-use. A question with options takes one of them (422 otherwise)."""
    status = await psych_runtime.status(ground.scoped, row.run_id)
    asked = {question.call_id for question in status.questions}
    if call_id not in asked and call_id not in status.waiting_for:
        if status.status in ("completed", "failed", "cancelled"):
            raise HTTPException(
                409, f"run {row.run_id} has ended ({status.status}); it takes no answer"
            )
        waiting = ", ".join(sorted(asked | set(status.waiting_for))) or "nothing"
        raise HTTPException(
            409, f"run {row.run_id} asks no question in {call_id} (it waits for: {waiting})"
        )
    seq = await psych_runtime.answer(
        ground.scoped, row.run_id, call_id, body.answer, key=f"answer:{call_id}"
    )
    return Accepted(seq=seq)


@router.post("/cancel", status_code=202)
async def cancel(body: CancelBody, row: Row, ground: Ground) -> Accepted:
    seq = await psych_runtime.cancel(ground.scoped, row.run_id, body.reason, by="console")
    return Accepted(seq=seq)


@router.post("/interrupt", status_code=202)
async def interrupt(body: InterruptBody, row: Row, ground: Ground) -> Accepted:
    return Accepted(seq=await psych_runtime.interrupt(ground.scoped, row.run_id, body.message))


@router.post("/send", status_code=202)
async def send_message(body: SendBody, row: Row, ground: Ground) -> Accepted:
    return Accepted(seq=await send(ground.scoped, row.run_id, body.message, queue=body.queue))


@router.post("/replay", status_code=202)
async def replay(body: ReplayBody, row: Row, ground: Ground) -> Replayed:
    """A new run of this ended workflow run, from step `from_step` on; the steps settled
    before it are copied, not run again."""
    new = await psych_runtime.replay(ground.scoped, row.run_id, from_step=body.from_step)
    return Replayed(run_id=new)

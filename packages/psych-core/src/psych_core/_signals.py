"""Signals: what the outside world tells a run, through its inbox.

A signal goes into the run's inbox through the store (`Store.signal`), numbered in commit order.
Only the attempt holding the run's lease moves inbox entries into the log (as `SignalReceived`
records carrying the entry's number), at a step boundary, in order: so each log has one writer.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializeAsAny,
)


class _Signal(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Approve(_Signal):
    """A person approves a pending tool call, possibly with edited arguments."""

    kind: Literal["approve"] = "approve"
    call_id: str
    by: str
    note: str | None = None
    arguments: dict[str, JsonValue] | None = None


class Deny(_Signal):
    """A person denies a pending tool call; the model is told who and why."""

    kind: Literal["deny"] = "deny"
    call_id: str
    by: str
    reason: str


class Resume(_Signal):
    """Something external the run waits on has happened; `payload` is what it brought.

    Aimed at one waiting call: `call_id` names it (a workflow's human step by its memo key or
    its step name: `answer`), `event` names the event a workflow's wait step waits for
    (`send_event`); with neither, it ends the first waiting call's wait. A named event that
    no step waits for yet is kept for the first wait step that asks for it. With
    `breakpoint`, it is aimed only at a workflow step paused at a breakpoint (`continue_run`),
    and any other resume never ends such a pause.
    """

    kind: Literal["resume"] = "resume"
    payload: JsonValue = None
    event: str | None = None
    call_id: str | None = None
    breakpoint: bool = False


class Cancel(_Signal):
    """Stop the run (and its children)."""

    kind: Literal["cancel"] = "cancel"
    reason: str = ""
    by: str | None = None


UserQueue = Literal["steer", "follow_up", "next_run"]
"""What a user message sent to a run is for (`UserInput.queue`):

- ``steer``: the model reads it before its next call in this run, once every tool call of its
  current turn has its result (never between a call and its result).
- ``follow_up``: it waits until the model has answered everything before it, then becomes the
  next user message: the run goes on instead of completing.
- ``next_run``: never delivered to this run; kept for the run that continues it
  (``dispatch(..., continues=run_id)``), ahead of that run's input.
"""


class UserInput(_Signal):
    """A message from the user; `queue` says when the model reads it (`UserQueue`)."""

    kind: Literal["user_input"] = "user_input"
    text: str
    # A steer is written as user messages were before queues existed.
    queue: UserQueue = Field(default="steer", exclude_if=lambda queue: queue == "steer")


class Continued(_Signal):
    """The mark ``dispatch(..., continues=run_id)`` leaves in the inbox of the ended run it
    continues, under the key `CONTINUED_KEY`: from then on that inbox takes nothing more, so
    every message kept for the next run is in it before the mark, and the continuation takes
    them all. Never moved into a log (the run has ended)."""

    kind: Literal["continued"] = "continued"
    continuation: str


CONTINUED_KEY = "continued"
"""The key of the `Continued` mark: single-use, as every key, so a run is continued once."""


class ChildEnded(_Signal):
    """A child run ended; written by the child's final append into its parent's inbox."""

    kind: Literal["child_ended"] = "child_ended"
    child_run_id: str
    call_id: str
    status: str


Signal = Annotated[
    Approve | Deny | Resume | Cancel | UserInput | ChildEnded | Continued,
    Field(discriminator="kind"),
]
"""Any signal a run's inbox can hold."""


def accepted_after_end(signal: Signal) -> bool:
    """Whether the inbox of a run that has ended still takes `signal`, until it holds the
    `Continued` mark: a user message for the next run of the thread, and the mark itself."""
    return isinstance(signal, Continued) or (
        isinstance(signal, UserInput) and signal.queue == "next_run"
    )


class InboxEntry(BaseModel):
    """One signal in a run's inbox: numbered 1, 2, 3, ... in commit order, with its key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    number: int = Field(ge=1)
    key: str
    signal: SerializeAsAny[Signal]  # as `Record.body`: a union's serializer is slow
    at: dt.datetime

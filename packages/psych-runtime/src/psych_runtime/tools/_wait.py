"""`WaitFor`: what a tool returns to make the run wait for something external, or a time."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WaitFor:
    """Return this from a tool to suspend the run until `resume()` (or `due_at`).

    The run holds no worker while it waits. The call's result becomes the payload passed to
    ``psych_runtime.resume(store, run_id, payload)``; if `due_at` passes first, the result is
    ``{"resumed": False, "timed_out": True, "due_at": ...}``. Psych has no timer: a worker
    claims the run once `due_at` has passed, and ``psych_runtime.due(store, now)`` lists such
    runs for an app that starts workers on demand.

    Attributes:
        note: what the run waits for, for people reading its status.
        due_at: when to stop waiting (timezone-aware), or None to wait for `resume` only.
    """

    note: str = ""
    due_at: dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.due_at is not None and self.due_at.tzinfo is None:
            raise ValueError("WaitFor.due_at must be timezone-aware (e.g. datetime.now(UTC))")

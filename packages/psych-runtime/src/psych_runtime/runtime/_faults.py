"""Named fault-injection points: a test arms one in a worker process to make it die there.

A point is armed by name, in the process itself (`arm`) or through the environment variable
``PSYCH_FAULTS`` that a test sets when it starts a worker process, e.g.
``PSYCH_FAULTS="after_commit:tool_call_started@3"``: the third time the point is reached, the
process kills itself with SIGKILL, exactly like ``kill -9`` from outside: no cleanup, no
``finally`` blocks, no lease release.

The points:

- ``after_claim``: the claim (and its `AttemptStarted`) is committed; nothing else happened.
- ``after_model_returned``: the model answered; its `ModelCallFinished` is not committed.
- ``after_commit:<record type>``: an append holding a record of that type was committed,
  e.g. ``after_commit:model_call_finished``, ``after_commit:tool_call_started``,
  ``after_commit:tool_call_finished``, ``after_commit:run_completed``.
- ``after_tool_returned``: a tool returned; its finish is not committed.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "after_claim",
    "after_model_returned",
    "after_tool_returned",
    "after_commit:model_call_finished",
    "after_commit:tool_call_started",
    "after_commit:tool_call_finished",
    "after_commit:tool_call_failed",
    "after_commit:tool_call_settled",
    "after_commit:run_completed",
)
"""The points a test can arm (``after_commit:`` takes any record type)."""

_armed: dict[str, int] = {}


def _parse(spec: str) -> dict[str, int]:
    armed: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, count = item.partition("@")
        armed[name] = int(count) if count else 1
    return armed


def arm(name: str, hit: int = 1) -> None:
    """Make this process kill itself the `hit`-th time it reaches point `name`."""
    if not (name in POINTS or name.startswith("after_commit:")):
        raise ValueError(f"unknown fault point {name!r}; known: {', '.join(POINTS)}")
    _armed[name] = hit


def disarm() -> None:
    """Disarm every point."""
    _armed.clear()


def reach(name: str) -> None:
    """Called by the runtime at point `name`: dies there if the point is armed."""
    if not _armed:
        return
    remaining = _armed.get(name)
    if remaining is None:
        return
    if remaining > 1:
        _armed[name] = remaining - 1
        return
    os.kill(os.getpid(), signal.SIGKILL)


_armed.update(_parse(os.environ.get("PSYCH_FAULTS", "")))

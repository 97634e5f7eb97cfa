"""Named points in an attempt where a test may act: the runtime calls `reach(name)` there.

Production code only names the points; what happens at one is a hook that tests install
through `psych_runtime.testing.faults` (for example, dying with SIGKILL exactly there, as
``kill -9`` from outside would). With no hook installed, `reach` does nothing.

The points:

- ``after_claim``: the claim (and its `AttemptStarted`) is committed; nothing else happened.
- ``after_model_returned``: the model answered; its `ModelCallFinished` is not committed.
- ``after_commit:<record type>``: an append holding a record of that type was committed,
  e.g. ``after_commit:model_call_finished``, ``after_commit:tool_call_started``,
  ``after_commit:tool_call_finished``, ``after_commit:run_completed``.
- ``after_tool_returned``: a tool returned; its finish is not committed.
"""

from __future__ import annotations

from collections.abc import Callable

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
"""The points a test can act at (``after_commit:`` takes any record type)."""

FaultHook = Callable[[str], None]
"""Called with the point's name each time the runtime reaches one."""

_hook: FaultHook | None = None


def install(hook: FaultHook | None) -> FaultHook | None:
    """Make `hook` the one called at every point (None: nothing); returns the previous one."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def armed() -> bool:
    """Whether a hook is installed: a caller that builds point names can skip that work."""
    return _hook is not None


def reach(name: str) -> None:
    """Called by the runtime at point `name`."""
    if _hook is not None:
        _hook(name)

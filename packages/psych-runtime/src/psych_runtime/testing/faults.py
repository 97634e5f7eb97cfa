"""Fault injection for crash tests: make a worker process die at a named point of an attempt.

The runtime names its points (`POINTS`: ``after_claim``, ``after_commit:tool_call_started``,
...); this module installs the hook that acts there. A point is armed by name, in the process
itself (`arm`) or, for a worker process a test starts, through the environment:
``PSYCH_FAULTS="after_commit:tool_call_started@3"`` and a call to `arm_from_environment()` at
the start of the process's main. The `hit`-th time the point is reached, the process kills
itself with SIGKILL, exactly like ``kill -9`` from outside: no cleanup, no ``finally``
blocks, no lease release.
"""

from __future__ import annotations

import os
import signal

from psych_runtime.runtime._faults import POINTS, install

__all__ = ["POINTS", "arm", "arm_from_environment", "disarm"]

ENVIRONMENT = "PSYCH_FAULTS"
"""The environment variable `arm_from_environment` reads."""

_armed: dict[str, int] = {}


def arm(name: str, hit: int = 1) -> None:
    """Make this process kill itself the `hit`-th time it reaches point `name`."""
    if not (name in POINTS or name.startswith("after_commit:")):
        raise ValueError(f"unknown fault point {name!r}; known: {', '.join(POINTS)}")
    if hit < 1:
        raise ValueError(f"fault point {name!r}: hit must be at least 1, got {hit}")
    _armed[name] = hit
    install(_reach)


def arm_from_environment() -> None:
    """Arm the points ``PSYCH_FAULTS`` names (``name[@hit],...``); nothing when it is unset."""
    for item in filter(None, (part.strip() for part in os.environ.get(ENVIRONMENT, "").split(","))):
        name, _, count = item.partition("@")
        arm(name, int(count) if count else 1)


def disarm() -> None:
    """Disarm every point."""
    _armed.clear()
    install(None)


def _reach(name: str) -> None:
    remaining = _armed.get(name)
    if remaining is None:
        return
    if remaining > 1:
        _armed[name] = remaining - 1
        return
    os.kill(os.getpid(), signal.SIGKILL)

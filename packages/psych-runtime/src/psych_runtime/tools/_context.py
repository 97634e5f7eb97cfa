"""What a tool function is told about the call it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psych_core import Scope, quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class ToolContext:
    """Passed to a tool function that declares a parameter annotated `ToolContext`.

    Attributes:
        run_id: the run the call belongs to.
        call_id: the runtime's name for the call, ``"{seq}.{i}"``.
        tool: the tool's name.
        attempt: the attempt running the call; a fencing token for the tool's own writes.
        idempotency_key: ``"{run_id}:{call_id}"``, equal on every attempt, so a tool whose
            outcome was settled ``unknown`` can be asked again safely by a careful implementation.
        scope: who the run is for.
        runtime: the `Runtime` the worker or session runs with: an app that subclasses it
            to carry options of its own (a connection pool, a region) reads them here.
    """

    run_id: str
    call_id: str
    tool: str
    attempt: int
    idempotency_key: str
    scope: Scope
    # Typed loosely on purpose: tools sit below the runtime layer and cannot name its type.
    runtime: Any = None

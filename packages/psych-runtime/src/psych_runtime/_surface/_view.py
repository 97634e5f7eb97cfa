"""`RunView`: what `Session.ask` hands back."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from psych_core import RunState, RunStatusName


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as its caller sees it when it stops.

    Attributes:
        run_id: the run's id, for `status`, `report` and `read_log`.
        status: ``completed``, ``failed``, ...
        text: the model's last text (its answer, when the run completed).
        output: the answer, parsed as JSON when the spec asks for structured output.
        error: why the run failed, when it did.
    """

    run_id: str
    status: RunStatusName
    text: str | None
    output: JsonValue
    error: str | None = None


def view_of(state: RunState) -> RunView:
    """The view of a folded state."""
    return RunView(
        run_id=state.run_id,
        status=state.status,
        text=state.last_text,
        output=state.output,
        error=state.error,
    )

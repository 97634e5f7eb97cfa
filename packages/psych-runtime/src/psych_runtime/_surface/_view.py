"""`RunView`: what `Session.ask` hands back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from psych_core import OutputUnavailable, RunState, RunStatusName

# A module-level variable rather than a type parameter of `output_as`: the public surface
# resolves every exported method's hints from its module, which a method's own parameter
# is not in.
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as its caller sees it when it stops.

    Attributes:
        run_id: the run's id, for `status`, `report` and `read_log`.
        status: ``completed``, ``failed``, ...
        text: the model's last text (its answer, when the run completed); None for a
            workflow.
        output: the answer, parsed as JSON when the spec asks for structured output; a
            workflow's output.
        error: why the run failed, when it did.
    """

    run_id: str
    status: RunStatusName
    text: str | None
    output: JsonValue
    error: str | None = None

    def output_as(self, model: type[M]) -> M:
        """The answer validated as `model`, the pydantic model the spec's `output_type` names.

        The runtime checked the answer against the spec's schema before the run completed;
        this validates it with pydantic itself, so what comes back is a `model` instance.
        A spec without an `output_type` has its answer text parsed as JSON.

        Raises:
            OutputUnavailable: the run did not complete (it failed, waits, ...), or its
                answer is not a valid `model`; the message names the run and says why.
        """
        if self.status != "completed":
            why = f": {self.error}" if self.error else ""
            raise OutputUnavailable(
                self.run_id,
                f"it is {self.status}, so it has no output to read as {model.__name__}{why}",
            )
        try:
            if isinstance(self.output, str):
                return model.model_validate_json(self.output)
            return model.model_validate(self.output)
        except ValidationError as exc:
            raise OutputUnavailable(
                self.run_id,
                f"its output is not a valid {model.__name__} ({exc.error_count()} "
                f"problem(s)): {_problems(exc)}; check that the spec's output_type is "
                f"{model.__name__}",
            ) from exc


def _problems(exc: ValidationError) -> str:
    shown = [
        f"{'.'.join(str(part) for part in error['loc']) or 'the output'}: {error['msg']}"
        for error in exc.errors(include_url=False)[:5]
    ]
    return "; ".join(shown)


def view_of(state: RunState) -> RunView:
    """The view of a folded state."""
    return RunView(
        run_id=state.run_id,
        status=state.status,
        text=state.last_text,
        output=state.output,
        error=state.error,
    )

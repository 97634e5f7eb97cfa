"""What the workflow planner decides, as data a `StepsPlanned` record carries.

A workflow run's log says everything its planner decided: the calls of each round of steps
(`StepCall`) and the decisions that need no effect (`StepEvent`): a step settled (a map, a
skipped guard, a tool's result read against its schema, a container whose steps all ended),
state set, a container entered (a branch's choice, a foreach's items), an item or iteration
started, a retry scheduled, a buffered event taken. The reducer applies them in order, so a
reader folds the same progress the planner saw, without the spec.

A run that replays another (`psych_runtime.replay`) names it in its `RunAdmitted`
(`ReplayOf`), with the steps it copies from it (`CopiedStep`); the planner settles each of
them as ``replayed`` when the walk reaches it, instead of running it.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from psych_core._unvalidated import unvalidated
from psych_core._workflow_spec import FailureKind


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepFailure(_Event):
    """Why a step failed.

    Attributes:
        kind: the failure's kind (``error``, ``timeout``, ``outcome_unknown``, ...).
        error: what went wrong, naming the step.
        step: the memo key of the step where the failure began (a container's failure is
            the failure of a step inside it).
    """

    kind: FailureKind
    error: str
    step: str


class StepCall(_Event):
    """One call of a round: a tool step's tool, an agent or workflow step's child run, or a
    built-in wait (a sleep, a wait for an event, a question to a person, a retry's wait).

    Attributes:
        call_id: the step's memo key (``orders[3].charge``), ``KEY#N`` for its try N, or
            ``KEY~N`` for the wait before try N.
        name: the tool called (see `psych_core.call_name`).
        arguments: the resolved arguments, as JSON text: recorded, so the log says what ran.
        due_at: when the step times out (a child run is cancelled then; a wait stops).
    """

    call_id: str
    name: str
    arguments: str
    due_at: dt.datetime | None = None


StepStatus = Literal["completed", "failed", "skipped"]
"""How a settled step ended."""


class StepSettled(_Event):
    """A step (or a foreach item ``KEY[i]``, a loop iteration ``KEY[i]``) ended.

    Attributes:
        output: what it produced (null when it failed or was skipped).
        failure: why it failed.
        replayed: the step did not run in this run: its result was copied from the run this
            one replays (`RunAdmitted.replay_of`).
    """

    type: Literal["settled"] = "settled"
    key: str
    status: StepStatus
    output: JsonValue = None
    failure: StepFailure | None = None
    replayed: bool = False


class StateSet(_Event):
    """A set_state step ran: these ``state.NAME`` values are set, and the step settled with
    them as its output."""

    type: Literal["state_set"] = "state_set"
    key: str
    values: dict[str, JsonValue]
    replayed: bool = False


class StepEntered(_Event):
    """A container step started.

    Attributes:
        kind: which container.
        cases: a branch's chosen cases, by index, in case order.
        otherwise: whether a branch chose its `otherwise`.
        items: a foreach's items, resolved when it started.
        due_at: when it times out (its timeout, counted from now).
    """

    type: Literal["entered"] = "entered"
    key: str
    kind: Literal["parallel", "branch", "foreach", "loop"]
    cases: tuple[int, ...] = ()
    otherwise: bool = False
    items: tuple[JsonValue, ...] = ()
    due_at: dt.datetime | None = None


class ItemStarted(_Event):
    """Item `index` of the foreach `key` started (its steps are ``key[index].NAME``)."""

    type: Literal["item_started"] = "item_started"
    key: str
    index: int = Field(ge=0)


class IterationStarted(_Event):
    """Iteration `iteration` of the loop `key` started (its steps are ``key[iteration].NAME``)."""

    type: Literal["iteration_started"] = "iteration_started"
    key: str
    iteration: int = Field(ge=0)


class StepRetrying(_Event):
    """Try `attempt` of step `key` failed, and the step will be tried again: at `due_at` (the
    run waits, holding no worker, in the call ``key~N``), or at once when it is None."""

    type: Literal["retrying"] = "retrying"
    key: str
    attempt: int = Field(ge=1)
    failure: StepFailure
    due_at: dt.datetime | None = None


class EventTaken(_Event):
    """The wait step `key` took the oldest buffered event named `name` (one that arrived
    before the step waited for it); its payload is the step's outcome."""

    type: Literal["event_taken"] = "event_taken"
    key: str
    name: str


def step_completed(key: str, output: JsonValue) -> StepSettled:
    """A completed `StepSettled` for an output that is JSON already, without validating it
    again (see `psych_core._unvalidated`): equal to ``StepSettled(key=key,
    status="completed", output=output)`` and serialised to the same bytes.

    The planner's outputs are JSON already: a call's result read from its validated record
    (or made JSON by the runtime, `finished_call`), the run's parsed input, the spec's
    validated literals, and lists and objects the planner assembles from those.
    """
    fields = {
        "type": "settled",
        "key": key,
        "status": "completed",
        "output": output,
        "failure": None,
        "replayed": False,
    }
    return unvalidated(StepSettled, fields, {"key", "status", "output"})


def state_set(key: str, values: dict[str, JsonValue]) -> StateSet:
    """A `StateSet` of values that are JSON already (as `step_completed`'s), without
    validating them again: equal to ``StateSet(key=key, values=values)``."""
    fields = {"type": "state_set", "key": key, "values": values, "replayed": False}
    return unvalidated(StateSet, fields, {"key", "values"})


StepEvent = Annotated[
    StepSettled
    | StateSet
    | StepEntered
    | ItemStarted
    | IterationStarted
    | StepRetrying
    | EventTaken,
    Field(discriminator="type"),
]
"""A decision of the workflow planner that needs no effect."""


class CopiedStep(_Event):
    """A step a replaying run copies from the run it replays: the step's memo key, the kind
    of step that settled there, and how it ended (only completed and skipped steps are
    copied; a failed one runs again)."""

    key: str
    kind: str
    status: Literal["completed", "skipped"]
    output: JsonValue = None


class ReplayOf(_Event):
    """The run a replaying run starts from.

    Attributes:
        run_id: the run replayed (left untouched).
        from_step: the memo key from which steps run again (`psych_runtime.replay`).
        steps: the steps settled before it in the replayed run, copied.
    """

    run_id: str
    from_step: str
    steps: tuple[CopiedStep, ...] = ()

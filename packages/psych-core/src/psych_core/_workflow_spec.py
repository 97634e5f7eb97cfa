"""Workflow specs: fixed pipelines as data that hashes to a version, like `AgentSpec`.

A `WorkflowSpec` is a tree of named steps. Data flows between them by reference (`Ref`:
``input.email``, ``steps.create.output.id``, ``state.count``, ``item``, ``index``,
``iteration``), never by string templates; constants are `Lit`; objects and lists of either
are `Obj` and `Arr`. Conditions are data too (`Compare`, `Exists`, `Truthy`, `AllOf`, `AnyOf`,
`Not`). Specs hold names and data, never callables: a tool step names a tool reference, which a
worker matches to the function it registered under that name.

Step names are unique in the whole tree. With the loop and item indices of the containers a
step sits in, a name is the step's **memo key** (``charge``, ``orders[3].charge``,
``retry_loop[2].poll``): the position in the tree, never the order in which concurrent steps
finished, so a run resumed after a crash finds every settled step where it left it. A retried
step's second try is the call ``charge#2``, and the wait before it ``charge~2``.

References follow the tree: ``steps.NAME`` inside a foreach item or a loop iteration is that
item's or iteration's step. From outside a loop, a step inside it is its last iteration's;
from outside a foreach, a step inside it names no single item and does not resolve (read the
foreach's own output, the list of each item's last output).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, field_validator, model_validator

from psych_core import _spec as _agent_specs
from psych_core._canonical import spec_canonical_json, spec_version
from psych_core._json_schema import OUTPUT_KEYWORDS, schema_problems
from psych_core._spec import (
    AgentSpec,
    AgentTool,
    CodeTool,
    HttpTool,
    SandboxTool,
    WorkflowTool,
    _Frozen,
)

_STEP_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_REF_ROOTS = ("input", "steps", "state", "item", "index", "iteration")
_STEP_FIELDS = ("output", "failure", "status")

# -- values ------------------------------------------------------------------------------------


class Ref(_Frozen):
    """A value taken from the run: ``input...``, ``steps.NAME.output...``, ``state.NAME...``,
    or, inside a container, ``item``/``index`` (a foreach) and ``iteration`` (a loop).

    ``steps.NAME.failure`` is null for a step that did not fail, else ``{"kind", "error",
    "step"}`` (a step with ``on_failure="continue"`` is read this way); ``steps.NAME.status`` is
    ``"completed"``, ``"failed"`` or ``"skipped"``. A path that does not resolve fails the step
    that uses it (kind ``reference``), with an error naming the path and what was there.
    """

    kind: Literal["ref"] = "ref"
    path: str

    def __init__(self, path: str | None = None, **data: Any) -> None:
        if path is not None:
            data["path"] = path
        super().__init__(**data)

    @field_validator("path")
    @classmethod
    def _check_path(cls, path: str) -> str:
        parts = path.split(".")
        if not path or any(not part for part in parts):
            raise ValueError(f"reference {path!r} has an empty part; write e.g. 'input.email'")
        if parts[0] not in _REF_ROOTS:
            roots = ", ".join(_REF_ROOTS)
            raise ValueError(f"reference {path!r} must start with one of: {roots}")
        if parts[0] == "steps" and (len(parts) < 3 or parts[2] not in _STEP_FIELDS):
            raise ValueError(
                f"reference {path!r}: a step's value is 'steps.NAME.output' (then a path in "
                "it), 'steps.NAME.failure' (null, or its kind and error) or 'steps.NAME.status'"
            )
        if parts[0] == "steps" and parts[2] == "status" and len(parts) > 3:
            raise ValueError(f"reference {path!r}: 'steps.NAME.status' is a string, with no parts")
        return path


class Lit(_Frozen):
    """A constant."""

    kind: Literal["lit"] = "lit"
    value: JsonValue = None

    def __init__(self, value: JsonValue = None, **data: Any) -> None:
        if "value" not in data:
            data["value"] = value
        super().__init__(**data)


class Obj(_Frozen):
    """An object whose fields are values."""

    kind: Literal["obj"] = "obj"
    fields: dict[str, Expr] = Field(default_factory=dict)


class Arr(_Frozen):
    """A list of values."""

    kind: Literal["arr"] = "arr"
    items: tuple[Expr, ...] = ()


Expr = Annotated[Ref | Lit | Obj | Arr, Field(discriminator="kind")]
"""A value a step takes: a reference, a constant, or an object or list of values."""


# -- conditions --------------------------------------------------------------------------------

CompareOp = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "contains"]


class Compare(_Frozen):
    """``left OP right``: equality (JSON's: 1 equals 1.0, true does not equal 1), order (numbers
    or strings alike; values of different kinds never compare), ``in`` (left is an item of the
    list right, a key of the object right, or a part of the string right), ``contains`` (the
    reverse)."""

    kind: Literal["compare"] = "compare"
    left: Expr
    op: CompareOp
    right: Expr


class Exists(_Frozen):
    """Whether a reference resolves (to anything, ``null`` included)."""

    kind: Literal["exists"] = "exists"
    ref: Ref


class Truthy(_Frozen):
    """Whether a value is truthy as JSON reads it: not null, false, 0, "", [] or {}."""

    kind: Literal["truthy"] = "truthy"
    value: Expr


class AllOf(_Frozen):
    """Every condition holds (true when there are none)."""

    kind: Literal["all_of"] = "all_of"
    conditions: tuple[Condition, ...]


class AnyOf(_Frozen):
    """At least one condition holds (false when there are none)."""

    kind: Literal["any_of"] = "any_of"
    conditions: tuple[Condition, ...]


class Not(_Frozen):
    """The condition does not hold."""

    kind: Literal["not"] = "not"
    condition: Condition


Condition = Annotated[Compare | Exists | Truthy | AllOf | AnyOf | Not, Field(discriminator="kind")]
"""A condition on the run's data: for a step's guard, a branch's case, a loop's end."""


# -- what every step has ---------------------------------------------------------------------

FailureKind = Literal[
    "error", "timeout", "outcome_unknown", "invalid_output", "reference", "denied", "cancelled"
]
"""Why a step failed: its effect failed (``error``), took longer than its timeout, ended in a
crash with an unknown outcome (a tool not safe to retry), produced output that breaks its
schema, used a reference that does not resolve, was denied by a person or refused by the
policy, or the run was cancelled while it ran."""


class Retry(_Frozen):
    """How a failed step is tried again: after `backoff` seconds, each wait `multiplier` times
    the last, at most `cap`; only for the failure kinds in `on`. The run suspends between
    tries and holds no worker.

    Attributes:
        attempts: how many tries in all (1: no retry).
    """

    attempts: int = Field(default=3, ge=1)
    backoff: float = Field(default=1.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    cap: float = Field(default=300.0, ge=0)
    on: tuple[FailureKind, ...] = ("error", "timeout")


def _checked_schema(what: str, schema: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
    if schema is not None:
        problems = schema_problems(schema, keywords=OUTPUT_KEYWORDS)
        if problems:
            raise ValueError(f"{what}: {'; '.join(problems)}")
    return schema


class _Step(_Frozen):
    """What every step has.

    Attributes:
        name: unique in the whole workflow: the step's memo key, with its containers' indices.
        when: a guard, read once before the step starts; when it does not hold the step is
            recorded as skipped (its output is null).
        retry: how a failure is tried again; None: it is not. Only a step that does one thing
            takes a retry (not parallel, branch, foreach or loop: retry the steps inside, or
            make the container a nested workflow step, which can be retried whole).
        timeout: seconds the step may take; None: no limit of its own. A tool call runs under
            it (with its tool's own timeout, whichever is shorter); an agent or workflow step's
            child run is cancelled past it; a wait or human step stops waiting; a sleep ends
            early and fails. A container's timeout is checked between rounds of steps and cuts
            short the waits inside it; a tool call inside still runs to its own timeout.
        on_failure: ``fail`` ends the workflow with the failure; ``continue`` records it and
            goes on (the step's output is then null, its failure readable by later steps).
        output_schema: a JSON schema the step's output must satisfy (``invalid_output``).
    """

    name: str
    when: Condition | None = None
    retry: Retry | None = None
    timeout: float | None = Field(default=None, gt=0)
    on_failure: Literal["fail", "continue"] = "fail"
    output_schema: dict[str, JsonValue] | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not _STEP_NAME.match(name):
            raise ValueError(
                f"step name {name!r} must start with a letter and hold only letters, digits, "
                "'_' and '-' (at most 64): it is the step's key in the log"
            )
        return name

    @field_validator("output_schema")
    @classmethod
    def _check_schema(cls, schema: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        return _checked_schema("output_schema", schema)


# -- the step kinds ----------------------------------------------------------------------------

StepTool = Annotated[CodeTool | HttpTool | SandboxTool, Field(discriminator="kind")]
"""The tool a tool step calls: a code function, a declared HTTP request or a sandboxed program,
matched by name to what the worker registered, exactly as for an agent."""


class ToolStep(_Step):
    """Call one tool with arguments taken from values. Approval rules and the policy apply as
    for an agent's call; a call cut off by a crash is re-run only when the tool is
    ``safe_to_retry``, else it fails with ``outcome_unknown``."""

    kind: Literal["tool"] = "tool"
    tool: StepTool
    arguments: dict[str, Expr] = Field(default_factory=dict)


class AgentStep(_Step):
    """Run an agent to completion on an input (a child run, with every agent feature: its tools,
    approvals, subagents). Its output is the agent's answer."""

    kind: Literal["agent"] = "agent"
    agent: AgentSpec
    input: Expr


class WorkflowStep(_Step):
    """Run a nested workflow on an input, as a child run. Its output is the child's output."""

    kind: Literal["workflow"] = "workflow"
    workflow: WorkflowSpec
    input: Expr = Field(default_factory=lambda: Lit(None))


class ParallelStep(_Step):
    """Run branches at once; each branch is a sequence of steps. The output is an object of the
    branches' outputs (each branch's last step's), by branch name. A branch that fails fails
    the parallel step, and nothing new starts in the others. The branches advance in rounds:
    a round's next steps start when every call of the round has ended (a branch that waits for
    an event holds the others until it is over)."""

    kind: Literal["parallel"] = "parallel"
    branches: dict[str, tuple[Step, ...]]


class Case(_Frozen):
    """One case of a branch: its steps run when its condition holds."""

    when: Condition
    steps: tuple[Step, ...]


class BranchStep(_Step):
    """Run the first case whose condition holds (``mode="first"``) or every one that holds
    (``mode="all"``, at once), else `otherwise`. The output is the last step's output of the
    case that ran (for ``all``, a list of them in case order, `otherwise` a list of one; null
    when nothing ran). A step of a case that did not run does not resolve."""

    kind: Literal["branch"] = "branch"
    cases: tuple[Case, ...]
    otherwise: tuple[Step, ...] = ()
    mode: Literal["first", "all"] = "first"


class ForeachStep(_Step):
    """Run `steps` once per item of a list, at most `concurrency` items at once (and at most
    `psych_core.MAX_PLANNED` calls a round); inside, ``item`` and ``index`` name the item. The
    output is the list of each item's last step's output, in item order. An item that fails
    fails the foreach, and no further item starts."""

    kind: Literal["foreach"] = "foreach"
    items: Expr
    steps: tuple[Step, ...]
    concurrency: int = Field(default=1, ge=1)


class LoopStep(_Step):
    """Run `steps` again and again: while `repeat_while` holds before an iteration, until
    `until` holds after one, at most `max_iterations` times. A loop whose condition still asks
    for more after `max_iterations` fails (kind ``error``) unless `exhausted` is ``stop``; a
    loop with neither condition runs exactly `max_iterations` times. Inside, ``iteration``
    counts from 0. `until` reads the iteration that just ended; `repeat_while` reads the one
    before the next (before the first, a step of the body does not resolve: guard it with
    `Exists`). The output is the last iteration's last step's output (null when none ran)."""

    kind: Literal["loop"] = "loop"
    steps: tuple[Step, ...]
    until: Condition | None = None
    repeat_while: Condition | None = None
    max_iterations: int = Field(default=100, ge=1)
    exhausted: Literal["fail", "stop"] = "fail"


class MapStep(_Step):
    """Shape data, with no effect: the output is `output`, resolved."""

    kind: Literal["map"] = "map"
    output: Expr


class SetStateStep(_Step):
    """Set named workflow state (``state.NAME``), folded from the log. The output is the
    values set."""

    kind: Literal["set_state"] = "set_state"
    values: dict[str, Expr]


class SleepStep(_Step):
    """Wait for a duration (`seconds`) or until a time (`until`, an ISO 8601 time with an
    offset; one already past ends the step at once). The run suspends and holds no worker;
    `due()` lists it. The output is ``{"until": TIME}``."""

    kind: Literal["sleep"] = "sleep"
    seconds: float | None = Field(default=None, ge=0)
    until: Expr | None = None

    @model_validator(mode="after")
    def _one_of(self) -> SleepStep:
        if (self.seconds is None) == (self.until is None):
            raise ValueError(f"sleep step {self.name!r} takes seconds or until, one of them")
        return self


class WaitStep(_Step):
    """Wait for the named event (`psych_runtime.send_event`), exactly once; its payload,
    checked against `payload_schema` (else kind ``invalid_output``), is the output. An event
    that came before the step waited is kept for it. With a `timeout` (the common field), the
    step fails with kind ``timeout`` when no event came in time."""

    kind: Literal["wait"] = "wait"
    event: str = Field(min_length=1)
    payload_schema: dict[str, JsonValue] | None = None

    @field_validator("payload_schema")
    @classmethod
    def _check_payload(cls, schema: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        return _checked_schema("payload_schema", schema)


class HumanStep(_Step):
    """Ask a person a question (no model involved) and wait for the answer
    (`psych_runtime.answer`), checked against `answer_schema`, which is the output. An answer
    that breaks the schema fails the step with kind ``invalid_output``: a retry on that kind
    asks again."""

    kind: Literal["human"] = "human"
    question: str = Field(min_length=1)
    answer_schema: dict[str, JsonValue] | None = None

    @field_validator("answer_schema")
    @classmethod
    def _check_answer(cls, schema: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        return _checked_schema("answer_schema", schema)


Step = Annotated[
    ToolStep
    | AgentStep
    | WorkflowStep
    | ParallelStep
    | BranchStep
    | ForeachStep
    | LoopStep
    | MapStep
    | SetStateStep
    | SleepStep
    | WaitStep
    | HumanStep,
    Field(discriminator="kind"),
]
"""Any step of a workflow, told apart by its ``kind``."""


class WorkflowSpec(_Frozen):
    """A fixed pipeline as hashable data; `dispatch` takes one as it takes an `AgentSpec`.

    Attributes:
        name: the workflow's name; shown in status and reports.
        steps: run in order (a container runs its own steps inside).
        output: the workflow's output, resolved when its last step has settled; by default
            the last step's output.
        input_schema: a JSON schema the input must satisfy (the input is JSON text).
        max_steps: how many step starts a run may make in all (loops and foreach count each
            time, and each try of a retried step; the waits between tries do not); past it the
            run fails with reason ``max_steps``.
    """

    kind: Literal["workflow"] = "workflow"
    name: str = Field(min_length=1)
    steps: tuple[Step, ...]
    output: Expr | None = None
    input_schema: dict[str, JsonValue] | None = None
    max_steps: int = Field(default=1000, ge=1)

    @field_validator("input_schema")
    @classmethod
    def _check_input(cls, schema: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        return _checked_schema("input_schema", schema)

    @model_validator(mode="after")
    def _unique_names(self) -> WorkflowSpec:
        seen: set[str] = set()
        tools: dict[str, StepTool] = {}
        for step in walk(self.steps):
            if step.name in seen:
                raise ValueError(
                    f"WorkflowSpec {self.name!r} has two steps named {step.name!r}: a name is "
                    "its step's key in the log, so each must be unique in the whole tree"
                )
            seen.add(step.name)
            if step.retry is not None and children(step):
                raise ValueError(
                    f"WorkflowSpec {self.name!r}: {step.kind} step {step.name!r} takes no "
                    "retry; put the retry on the steps inside it, or make it a nested "
                    "workflow step, which can be retried whole"
                )
            if isinstance(step, ToolStep):
                known = tools.setdefault(step.tool.name, step.tool)
                if known != step.tool:
                    raise ValueError(
                        f"WorkflowSpec {self.name!r}: step {step.name!r} declares tool "
                        f"{step.tool.name!r} differently from an earlier step; a tool is one "
                        "declaration: give both steps the same one"
                    )
        if not self.steps:
            raise ValueError(f"WorkflowSpec {self.name!r} has no steps")
        return self

    @property
    def version(self) -> str:
        """``"sha256:" + hex`` of this spec's canonical JSON; equal specs hash equal
        (remembered for this object only, as `AgentSpec.version` is)."""
        return spec_version(self)

    def canonical_json(self) -> str:
        """The canonical JSON this spec's version is the hash of (remembered for this object
        only, as its version is)."""
        return spec_canonical_json(self)

    def step(self, name: str) -> Step | None:
        """The step named `name`, wherever it is in the tree, or None."""
        for step in walk(self.steps):
            if step.name == name:
                return step
        return None

    @property
    def tools(self) -> tuple[StepTool, ...]:
        """The tools its tool steps call, each once, in tree order (nested workflows' tools
        are theirs). A worker also always has the built-in tools sleep, wait and human steps
        call (`BUILTIN_TOOLS`)."""
        found: dict[str, StepTool] = {}
        for step in walk(self.steps):
            if isinstance(step, ToolStep):
                found.setdefault(step.tool.name, step.tool)
        return tuple(found.values())

    def tool(self, name: str) -> StepTool | None:
        """The tool named `name` that a tool step calls, or None."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None


CONTAINERS = (ParallelStep, BranchStep, ForeachStep, LoopStep)
"""The step kinds that hold steps of their own (a nested workflow is a step of one run)."""


def children(step: Step) -> tuple[Step, ...]:
    """The steps directly inside a container step (none for the others), in tree order."""
    match step:
        case ParallelStep(branches=branches):
            return tuple(inner for steps in branches.values() for inner in steps)
        case BranchStep(cases=cases, otherwise=otherwise):
            return (*(inner for case in cases for inner in case.steps), *otherwise)
        case ForeachStep(steps=steps) | LoopStep(steps=steps):
            return steps
        case _:
            return ()


def walk(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """Every step of a tree, depth first, in tree order (nested workflows not included: their
    steps are their own run's)."""
    out: list[Step] = []
    for step in steps:
        out.append(step)
        out.extend(walk(children(step)))
    return tuple(out)


SLEEP_TOOL = "psych:sleep"
WAIT_TOOL = "psych:wait"
HUMAN_TOOL = "psych:human"
BREAKPOINT_TOOL = "psych:breakpoint"
BUILTIN_TOOLS = (SLEEP_TOOL, WAIT_TOOL, HUMAN_TOOL, BREAKPOINT_TOOL)
"""The tools sleep, wait and human steps call (and a retry's wait between tries, and the pause
at a breakpoint): built into every worker, each safe to run again. No tool a spec declares
can be named like them."""


def call_name(step: Step) -> str | None:
    """The name of the tool a step's calls are made to, or None for a step that makes none
    (a container, map or set_state): its tool's name for a tool step, ``agent:NAME`` and
    ``workflow:NAME`` for the child run of an agent or workflow step, a built-in for the rest."""
    match step:
        case ToolStep(tool=tool):
            return tool.name
        case AgentStep(name=name):
            return f"agent:{name}"
        case WorkflowStep(name=name):
            return f"workflow:{name}"
        case SleepStep():
            return SLEEP_TOOL
        case WaitStep():
            return WAIT_TOOL
        case HumanStep():
            return HUMAN_TOOL
        case _:
            return None


_RECURSIVE: tuple[type[_Frozen], ...] = (
    Obj,
    Arr,
    AllOf,
    AnyOf,
    Not,
    Compare,
    Truthy,
    ParallelStep,
    Case,
    BranchStep,
    ForeachStep,
    LoopStep,
    WorkflowStep,
    WorkflowSpec,
)
# `WorkflowTool` (an agent calling a workflow) names `WorkflowSpec`, which is defined only
# here; every model that reaches it is completed with this module's names, and the name is
# given to `_spec` too, where `typing.get_type_hints(WorkflowTool)` looks for it.
_agent_specs.WorkflowSpec = WorkflowSpec  # type: ignore[attr-defined]
_NAMES: dict[str, Any] = {"WorkflowSpec": WorkflowSpec, "AgentSpec": AgentSpec}
_COMPLETED: tuple[type[_Frozen], ...] = (WorkflowTool, AgentTool, AgentSpec, AgentStep)
for _model in (*_COMPLETED, *_RECURSIVE):
    _model.model_rebuild(_types_namespace=_NAMES)

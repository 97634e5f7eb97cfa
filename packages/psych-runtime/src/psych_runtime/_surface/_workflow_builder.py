"""A fluent builder for workflows: the spec the dict form would give, and the functions handed in.

    flow = Workflow("onboard")
    flow.tool("create", create_user, email=ref("input.email")).retry(attempts=3)
    with flow.foreach("orders", ref("steps.create.output.orders"), concurrency=2) as body:
        body.tool("charge", charge, order=ref("item"))
    spec = flow.build()  # a WorkflowSpec, of the same version as its dict form
    runtime = Runtime(model=..., tools=flow.tools)

The builder sets only the fields it is given: one left out takes the spec's default, as in the
dict form, and every step is validated by the spec model itself, so the two forms give equal
specs and equal versions. Specs hold names, never callables: a function given to `tool` is
named in the spec by a `CodeTool` and kept in `Workflow.tools`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Literal, Self

from pydantic import BaseModel, JsonValue, ValidationError

from psych_core import (
    AgentSpec,
    ApprovalRule,
    CodeTool,
    Condition,
    FailureKind,
    HttpTool,
    Retry,
    SandboxTool,
    SpecError,
    Step,
    WorkflowSpec,
)
from psych_runtime._surface._workflow_expressions import (
    Value,
    as_condition,
    as_expr,
    validation_problems,
)
from psych_runtime._surface._workflow_references import NEXT, reference_problems
from psych_runtime.tools import CodeFunction, ToolFunction

type Schema = Mapping[str, JsonValue] | type[BaseModel]
"""A JSON schema, or a pydantic model class (turned into its schema)."""

type AddSteps = Callable[[Steps], object]
"""A function that adds steps to the sequence it is given: ``lambda body: body.tool(...)``."""

_STEP_CLASSES: dict[str, type[BaseModel]] = {
    cls.model_fields["kind"].default: cls for cls in typing.get_args(typing.get_args(Step)[0])
}
"""Each step kind's class: a step is validated by its own class, so its errors say where in
it they are (the dict form's nested steps are validated by the same class)."""


def _schema(schema: Schema) -> dict[str, JsonValue]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return dict(schema)


class _Root:
    """What every sequence of one workflow shares: its names and the functions handed in."""

    def __init__(self, workflow: str) -> None:
        self.workflow = workflow
        self.names: dict[str, str] = {}
        self.functions: dict[str, tuple[ToolFunction, str]] = {}
        self.flags: dict[str, dict[str, tuple[object, str]]] = {}
        self.nested: list[Workflow] = []

    def set_flags(self, tool: str, flags: Mapping[str, object], step: str) -> None:
        """Set flags of the `CodeTool` declaring the function `tool`: one declaration for every
        step that calls it, as the spec requires, so a flag set twice must agree."""
        known = self.flags.setdefault(tool, {})
        for flag, value in flags.items():
            if flag in known and known[flag][0] != value:
                raise SpecError(
                    f"workflow {self.workflow!r}, {step}: tool {tool!r} already has "
                    f"{flag}={known[flag][0]!r} (set by {known[flag][1]}); a tool is one "
                    "declaration for every step that calls it: set each option once"
                )
        for flag, value in flags.items():
            known.setdefault(flag, (value, step))

    def declaration(self, tool: str) -> dict[str, object]:
        """The dict form of the `CodeTool` declaring the function `tool`."""
        flags = {flag: value for flag, (value, _) in self.flags.get(tool, {}).items()}
        return {"kind": "code", "name": tool, **flags}

    def claim(self, name: str, kind: str, where: str) -> None:
        first = self.names.get(name)
        here = f"a {kind} step in {where}"
        if first is not None:
            raise SpecError(
                f"workflow {self.workflow!r}: step name {name!r} is used twice, by {first} and "
                f"by {here}; a name is its step's key in the log, so each must be unique in the "
                "whole workflow: rename one"
            )
        self.names[name] = here


def _merge(
    workflow: str,
    functions: dict[str, tuple[ToolFunction, str]],
    name: str,
    function: ToolFunction,
    step: str,
) -> None:
    """Add `function` under `name`, unless that name already has a function: then the same
    one (once) or an error naming both steps."""
    known = functions.get(name)
    if known is None:
        functions[name] = (function, step)
    elif _target(known[0]) is not _target(function):
        raise SpecError(
            f"{workflow}: tool {name!r} is given two different functions, {known[0]!r} by "
            f"{known[1]} and {function!r} by {step}; a worker runs one function per tool "
            "name: rename one (CodeFunction.of(function, name=...))"
        )


def _target(function: ToolFunction) -> object:
    return function.function if isinstance(function, CodeFunction) else function


class StepHandle:
    """A step being built, returned by each of `Steps`' methods: chain its options on it.

    ``flow.map("total", ...).when(exists("input.cents")).timeout(30).on_failure("continue")``.
    Each option is the spec field of the same name; one not set keeps the spec's default. A
    step that does one thing (`LeafHandle`) also takes a retry; a container does not.
    """

    def __init__(self, steps: Steps, kind: str, name: str, fields: dict[str, object]) -> None:
        steps._root.claim(name, kind, steps._where)
        steps._handles.append(self)
        self._parent = steps
        self._root = steps._root
        self._kind = kind
        self._name = name
        self._fields = fields
        self._options: dict[str, object] = {}

    @property
    def name(self) -> str:
        """The step's name: its key in the log."""
        return self._name

    @property
    def _label(self) -> str:
        return f"workflow {self._root.workflow!r}, {self._kind} step {self._name!r}"

    def when(self, condition: Condition) -> Self:
        """Run the step only when `condition` holds (checked when it is reached); otherwise
        it is recorded as skipped."""
        self._options["when"] = as_condition(condition, f"{self._label}: when()")
        return self

    def timeout(self, seconds: float) -> Self:
        """Fail the step with kind ``timeout`` when it takes longer than `seconds`."""
        self._options["timeout"] = seconds
        return self

    def on_failure(self, action: Literal["fail", "continue"]) -> Self:
        """``"fail"`` (the default) ends the workflow with the step's failure; ``"continue"``
        records it and goes on, the step's output null."""
        self._options["on_failure"] = action
        return self

    def output_schema(self, schema: Schema) -> Self:
        """Fail the step with kind ``invalid_output`` when its output breaks `schema` (a JSON
        schema, or a pydantic model class)."""
        self._options["output_schema"] = _schema(schema)
        return self

    def _children(self) -> dict[str, object]:
        return {}

    def _build(self) -> Step:
        data = {
            "kind": self._kind,
            "name": self._name,
            **self._fields,
            **self._children(),
            **self._options,
        }
        try:
            return typing.cast(Step, _STEP_CLASSES[self._kind].model_validate(data))
        except ValidationError as exc:
            raise SpecError(f"{self._label}: {validation_problems(exc)}") from None


class LeafHandle(StepHandle):
    """A step that does one thing being built (every kind but parallel, branch, foreach and
    loop): the options of every step, and a retry."""

    def retry(
        self,
        *,
        attempts: int | None = None,
        backoff: float | None = None,
        multiplier: float | None = None,
        cap: float | None = None,
        on: Sequence[FailureKind] | None = None,
    ) -> Self:
        """Try the step again after a failure: `attempts` tries in all, the first wait
        `backoff` seconds, each next one `multiplier` times the last, at most `cap`, for the
        failure kinds in `on` (each left out keeps `Retry`'s default). The run suspends between
        tries and holds no worker.

        Raises:
            SpecError: a value is out of range (attempts below 1, a negative backoff, ...).
        """
        given = {"attempts": attempts, "backoff": backoff, "multiplier": multiplier, "cap": cap}
        data: dict[str, object] = {key: value for key, value in given.items() if value is not None}
        if on is not None:
            data["on"] = tuple(on)
        try:
            self._options["retry"] = Retry.model_validate(data)
        except ValidationError as exc:
            raise SpecError(f"{self._label}: retry(): {validation_problems(exc)}") from None
        return self


class ToolHandle(LeafHandle):
    """A tool step being built: the options of a leaf step, and the flags of a tool given as a
    function."""

    def __init__(
        self, steps: Steps, name: str, fields: dict[str, object], function: str | None
    ) -> None:
        super().__init__(steps, "tool", name, fields)
        self._function = function

    def tool_options(
        self,
        *,
        safe_to_retry: bool | None = None,
        requires_approval: ApprovalRule | None = None,
        timeout: float | None = None,
        description: str | None = None,
    ) -> Self:
        """Set the `CodeTool` flags of a tool given as a function (each one left out keeps
        its default): whether a call cut off by a crash may run again, whether a person
        approves it first, the call's own timeout, the description. A tool is one declaration,
        so the flags hold for every step that calls the function.

        Raises:
            SpecError: the tool was given as a `CodeTool`, `HttpTool` or `SandboxTool` (set the
                flags on it), or another step set one of these flags to another value.
        """
        if self._function is None:
            tool = self._fields["tool"]
            raise SpecError(
                f"{self._label}: tool_options() sets the flags of a tool given as a function; "
                f"this step was given a {type(tool).__name__}: set them on it"
            )
        given = {
            "safe_to_retry": safe_to_retry,
            "requires_approval": requires_approval,
            "timeout": timeout,
            "description": description,
        }
        flags = {key: value for key, value in given.items() if value is not None}
        self._root.set_flags(self._function, flags, f"tool step {self._name!r}")
        return self

    def _children(self) -> dict[str, object]:
        if self._function is None:
            return {}
        return {"tool": self._root.declaration(self._function)}


class ParallelHandle(StepHandle):
    """A parallel step being built: add its branches with `branch`, each a sequence of steps
    (``with flow.parallel("checks") as p: p.branch("credit").tool(...)``)."""

    def __init__(self, steps: Steps, name: str) -> None:
        super().__init__(steps, "parallel", name, {})
        self._branches: dict[str, Steps] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def branch(self, name: str, steps: AddSteps | None = None) -> Steps:
        """Add the branch `name` and return its sequence (`steps` adds to it at once).

        Raises:
            SpecError: the step already has a branch of that name.
        """
        if name in self._branches:
            raise SpecError(
                f"{self._label}: branch {name!r} is declared twice; add its steps to the first"
            )
        body = Steps(self._parent, f"branch {name!r} of parallel step {self._name!r}")
        self._branches[name] = body
        if steps is not None:
            steps(body)
        return body

    def _children(self) -> dict[str, object]:
        if not self._branches:
            raise SpecError(
                f"{self._label} has no branches: add one, e.g. "
                f"`with flow.parallel({self._name!r}) as p: p.branch('a').tool(...)`"
            )
        for branch, body in self._branches.items():
            if not body._handles:
                raise SpecError(f"{self._label}: branch {branch!r} has no steps; add some")
        return {"branches": {branch: body._built() for branch, body in self._branches.items()}}


class BranchHandle(StepHandle):
    """A branch step being built: add its cases with `case` and the steps for when none holds
    with `otherwise`."""

    def __init__(self, steps: Steps, name: str, fields: dict[str, object]) -> None:
        super().__init__(steps, "branch", name, fields)
        self._cases: list[tuple[Condition, Steps]] = []
        self._otherwise: Steps | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def case(self, when: Condition, steps: AddSteps | None = None) -> Steps:
        """Add a case: its steps run when `when` holds (`steps` adds to them at once). A case
        with no steps does nothing, and in ``mode="first"`` stops the search there."""
        number = len(self._cases)
        condition = as_condition(when, f"{self._label}: case {number}")
        body = Steps(self._parent, f"case {number} of branch step {self._name!r}")
        self._cases.append((condition, body))
        if steps is not None:
            steps(body)
        return body

    def otherwise(self, steps: AddSteps | None = None) -> Steps:
        """The steps that run when no case holds (`steps` adds to them at once).

        Raises:
            SpecError: `otherwise` was already called for this step.
        """
        if self._otherwise is not None:
            raise SpecError(f"{self._label}: otherwise() is called twice; add to the first")
        self._otherwise = Steps(self._parent, f"the otherwise of branch step {self._name!r}")
        if steps is not None:
            steps(self._otherwise)
        return self._otherwise

    def _children(self) -> dict[str, object]:
        if not self._cases:
            raise SpecError(
                f"{self._label} has no cases: add one, e.g. "
                f"`with flow.branch({self._name!r}) as b: b.case(eq(ref('input.x'), 1)).tool(...)`"
            )
        children: dict[str, object] = {
            "cases": tuple({"when": when, "steps": body._built()} for when, body in self._cases)
        }
        if self._otherwise is not None:
            if not self._otherwise._handles:
                raise SpecError(f"{self._label}: otherwise() has no steps; add some or drop it")
            children["otherwise"] = self._otherwise._built()
        return children


class BodyHandle(StepHandle):
    """A foreach or loop step being built; ``with`` it to add the steps of its body
    (``with flow.foreach("orders", ref("input.orders")) as body: body.tool(...)``)."""

    def __init__(self, steps: Steps, kind: str, name: str, fields: dict[str, object]) -> None:
        super().__init__(steps, kind, name, fields)
        self._body = Steps(self._parent, f"the body of {kind} step {name!r}")

    def __enter__(self) -> Steps:
        return self._body

    def __exit__(self, *exc: object) -> None:
        return None

    @property
    def body(self) -> Steps:
        """The body's sequence of steps (what ``with`` gives)."""
        return self._body

    def _children(self) -> dict[str, object]:
        if not self._body._handles:
            raise SpecError(
                f"{self._label} has no steps: add them with `with ... as body: body.tool(...)` "
                "or steps=lambda body: body.tool(...)"
            )
        return {"steps": self._body._built()}


class _NestedHandle(LeafHandle):
    """A workflow step whose workflow is a builder: built with the step."""

    def __init__(
        self, steps: Steps, name: str, nested: Workflow, fields: dict[str, object]
    ) -> None:
        super().__init__(steps, "workflow", name, fields)
        self._nested = nested

    def _children(self) -> dict[str, object]:
        return {"workflow": self._nested.build()}


class Steps:
    """A sequence of steps being built: the workflow's own, a parallel branch, a case, the
    otherwise of a branch, the body of a foreach or a loop. Steps run in the order they are
    added; each method adds one and returns it, to chain its options on (``.when(...)``,
    ``.timeout(...)``, ``.on_failure(...)``, ``.output_schema(...)``, and on a step that does
    one thing ``.retry(...)``). A keyword left out keeps the spec's default.
    """

    _root: _Root
    _where: str
    _handles: list[StepHandle]

    def __init__(self, within: Steps, where: str) -> None:
        """A sequence inside `within`'s workflow (the builder makes these: `Workflow` and the
        container steps' methods); `where` says which, for errors."""
        self._root = within._root
        self._where = where
        self._handles = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _built(self) -> tuple[Step, ...]:
        return tuple(handle._build() for handle in self._handles)

    def tool(
        self,
        name: str,
        tool: ToolFunction | CodeTool | HttpTool | SandboxTool,
        /,
        **arguments: Value,
    ) -> ToolHandle:
        """Call one tool with `arguments` (values: ``ref(...)``, ``lit(...)`` or JSON data).

        A function (or `CodeFunction`) is named in the spec by a `CodeTool` of its name and
        kept in `Workflow.tools`; set its flags with `ToolHandle.tool_options`. A `CodeTool`,
        `HttpTool` or `SandboxTool` goes in the spec as it is (a code tool's function is then
        yours to give the worker).

        Raises:
            SpecError: the name is taken, the tool is a lambda or another function without a
                usable name, or an argument is not a value.
        """
        label = f"workflow {self._root.workflow!r}, tool step {name!r}"
        values = {
            key: as_expr(value, f"{label}, argument {key!r}") for key, value in arguments.items()
        }
        if isinstance(tool, CodeTool | HttpTool | SandboxTool):
            return ToolHandle(self, name, {"tool": tool, "arguments": values}, None)
        if isinstance(tool, BaseModel):
            raise SpecError(
                f"{label}: a step's tool is a function, CodeTool, HttpTool or SandboxTool, not "
                f"{type(tool).__name__}; run an agent with agent() and a workflow with workflow()"
            )
        if not (isinstance(tool, CodeFunction) or callable(tool)):
            raise SpecError(
                f"{label}: {tool!r} is not a tool; give a function, a CodeFunction, or a "
                "CodeTool, HttpTool or SandboxTool"
            )
        tool_name = tool.name if isinstance(tool, CodeFunction) else getattr(tool, "__name__", "")
        if not tool_name or tool_name == "<lambda>":
            raise SpecError(
                f"{label}: {tool!r} has no usable name to register it under; define it with def, "
                "or give CodeFunction.of(function, name=...)"
            )
        try:
            CodeTool(name=tool_name)
        except ValidationError as exc:
            raise SpecError(f"{label}: {validation_problems(exc)}") from None
        # Checked before the step is added, so a refused tool leaves the builder as it was.
        functions = dict(self._root.functions)
        workflow = f"workflow {self._root.workflow!r}"
        _merge(workflow, functions, tool_name, tool, f"tool step {name!r}")
        handle = ToolHandle(self, name, {"arguments": values}, tool_name)
        self._root.functions = functions
        return handle

    def agent(self, name: str, agent: AgentSpec, input: Value) -> LeafHandle:
        """Run `agent` to completion on `input`, as a child run; the output is its answer."""
        label = f"workflow {self._root.workflow!r}, agent step {name!r}, its input"
        return LeafHandle(self, "agent", name, {"agent": agent, "input": as_expr(input, label)})

    def workflow(
        self, name: str, workflow: Workflow | WorkflowSpec, input: Value = None
    ) -> LeafHandle:
        """Run a nested workflow on `input`, as a child run; the output is the child's output.
        A builder is built with this one, and its functions join `Workflow.tools`."""
        label = f"workflow {self._root.workflow!r}, workflow step {name!r}"
        fields: dict[str, object] = {}
        if input is not None:
            fields["input"] = as_expr(input, f"{label}, its input")
        if isinstance(workflow, WorkflowSpec):
            return LeafHandle(self, "workflow", name, {"workflow": workflow, **fields})
        if workflow._root is self._root:
            raise SpecError(f"{label}: a workflow cannot run itself as one of its steps")
        handle = _NestedHandle(self, name, workflow, fields)
        self._root.nested.append(workflow)
        return handle

    def parallel(self, name: str, branches: Mapping[str, AddSteps] | None = None) -> ParallelHandle:
        """Run branches at once: ``with flow.parallel("checks") as p:`` then
        ``p.branch("a").tool(...)``, or ``branches={"a": lambda b: b.tool(...)}``."""
        handle = ParallelHandle(self, name)
        for branch, steps in (branches or {}).items():
            handle.branch(branch, steps)
        return handle

    def branch(
        self,
        name: str,
        *,
        mode: Literal["first", "all"] | None = None,
        cases: Sequence[tuple[Condition, AddSteps]] = (),
        otherwise: AddSteps | None = None,
    ) -> BranchHandle:
        """Run the first case whose condition holds (``mode="all"``: every one, at once), else
        the otherwise: ``with flow.branch("route") as b:`` then ``b.case(cond).tool(...)`` and
        ``b.otherwise().tool(...)``, or ``cases=[(cond, lambda s: ...)]``, ``otherwise=...``."""
        handle = BranchHandle(self, name, {} if mode is None else {"mode": mode})
        for when, steps in cases:
            handle.case(when, steps)
        if otherwise is not None:
            handle.otherwise(otherwise)
        return handle

    def foreach(
        self,
        name: str,
        items: Value,
        *,
        concurrency: int | None = None,
        steps: AddSteps | None = None,
    ) -> BodyHandle:
        """Run a body once per item of the list `items`, at most `concurrency` at once; in it,
        ``ref("item")`` and ``ref("index")`` name the item. ``with flow.foreach(...) as body:``
        or ``steps=lambda body: ...`` adds the body's steps."""
        label = f"workflow {self._root.workflow!r}, foreach step {name!r}, its items"
        fields: dict[str, object] = {"items": as_expr(items, label)}
        if concurrency is not None:
            fields["concurrency"] = concurrency
        handle = BodyHandle(self, "foreach", name, fields)
        if steps is not None:
            steps(handle.body)
        return handle

    def loop(
        self,
        name: str,
        *,
        until: Condition | None = None,
        repeat_while: Condition | None = None,
        max_iterations: int | None = None,
        exhausted: Literal["fail", "stop"] | None = None,
        steps: AddSteps | None = None,
    ) -> BodyHandle:
        """Run a body again and again: while `repeat_while` holds before an iteration, until
        `until` holds after one, at most `max_iterations` times (then fail, or with
        ``exhausted="stop"`` stop); in it, ``ref("iteration")`` counts from 0."""
        label = f"workflow {self._root.workflow!r}, loop step {name!r}"
        fields: dict[str, object] = {}
        if until is not None:
            fields["until"] = as_condition(until, f"{label}, until")
        if repeat_while is not None:
            fields["repeat_while"] = as_condition(repeat_while, f"{label}, repeat_while")
        if max_iterations is not None:
            fields["max_iterations"] = max_iterations
        if exhausted is not None:
            fields["exhausted"] = exhausted
        handle = BodyHandle(self, "loop", name, fields)
        if steps is not None:
            steps(handle.body)
        return handle

    def map(self, name: str, output: Value) -> LeafHandle:
        """Shape data with no effect: the step's output is `output`, resolved."""
        label = f"workflow {self._root.workflow!r}, map step {name!r}, its output"
        return LeafHandle(self, "map", name, {"output": as_expr(output, label)})

    def set_state(self, name: str, /, **values: Value) -> LeafHandle:
        """Set named workflow state, read later as ``ref("state.NAME")``."""
        label = f"workflow {self._root.workflow!r}, set_state step {name!r}"
        resolved = {key: as_expr(value, f"{label}, {key!r}") for key, value in values.items()}
        return LeafHandle(self, "set_state", name, {"values": resolved})

    def sleep(
        self,
        name: str,
        seconds: float | None = None,
        *,
        until: Value | dt.datetime | None = None,
    ) -> LeafHandle:
        """Wait `seconds`, or until a time (an aware `datetime`, an ISO 8601 text with an
        offset, or a reference to one); the run suspends and holds no worker.

        Raises:
            SpecError: `until` is a naive datetime.
        """
        label = f"workflow {self._root.workflow!r}, sleep step {name!r}"
        fields: dict[str, object] = {}
        if seconds is not None:
            fields["seconds"] = seconds
        if isinstance(until, dt.datetime):
            if until.utcoffset() is None:
                raise SpecError(f"{label}: until={until!r} has no time zone; give an aware time")
            until = until.isoformat()
        if until is not None:
            fields["until"] = as_expr(until, f"{label}, until")
        return LeafHandle(self, "sleep", name, fields)

    def wait(self, name: str, event: str, *, payload_schema: Schema | None = None) -> LeafHandle:
        """Wait for the named event (sent with `send_event`), exactly once; its payload is the
        output. Chain ``.timeout(seconds)`` to fail with kind ``timeout`` when none comes."""
        fields: dict[str, object] = {"event": event}
        if payload_schema is not None:
            fields["payload_schema"] = _schema(payload_schema)
        return LeafHandle(self, "wait", name, fields)

    def human(self, name: str, question: str, *, answer_schema: Schema | None = None) -> LeafHandle:
        """Ask a person `question` and wait for the answer (sent with `answer`), the output."""
        fields: dict[str, object] = {"question": question}
        if answer_schema is not None:
            fields["answer_schema"] = _schema(answer_schema)
        return LeafHandle(self, "human", name, fields)


class Workflow(Steps):
    """A workflow being built: add its steps, then `build` the `WorkflowSpec`.

    The spec is exactly the one its dict or JSON form gives (same version); the functions
    handed to `tool` are in `tools`, for ``Runtime(tools=flow.tools)``.

    Args:
        name: the workflow's name.
        input_schema: a JSON schema (or a pydantic model class) the input must satisfy.
        max_steps: how many step starts a run may make in all; None keeps the spec's default.
    """

    def __init__(
        self, name: str, *, input_schema: Schema | None = None, max_steps: int | None = None
    ) -> None:
        # The one sequence with no sequence around it: it holds what the others share.
        self._root = _Root(name)
        self._where = "the workflow's steps"
        self._handles = []
        self._top: dict[str, object] = {}
        if input_schema is not None:
            self._top["input_schema"] = _schema(input_schema)
        if max_steps is not None:
            self._top["max_steps"] = max_steps
        self._open = False

    @property
    def name(self) -> str:
        """The workflow's name."""
        return self._root.workflow

    def output(self, value: Value) -> Self:
        """The workflow's output, resolved when its last step has settled (by default the last
        step's output)."""
        self._top["output"] = as_expr(value, f"workflow {self.name!r}, its output")
        return self

    @property
    def tools(self) -> tuple[ToolFunction, ...]:
        """The functions given to `tool` (here and in nested builders), once each, in the
        order they were given: pass them to ``Runtime(tools=...)`` or a session.

        Raises:
            SpecError: two different functions were given under one tool name.
        """
        return tuple(function for function, _ in self._functions().values())

    def _functions(self) -> dict[str, tuple[ToolFunction, str]]:
        with self._entered():
            merged = dict(self._root.functions)
            for nested in self._root.nested:
                for name, (function, step) in nested._functions().items():
                    where = f"{step} of workflow {nested.name!r}"
                    _merge(f"workflow {self.name!r}", merged, name, function, where)
            return merged

    def build(self) -> WorkflowSpec:
        """The `WorkflowSpec` of the steps added so far (build again after adding more).

        Raises:
            SpecError: naming the step: a field out of range, an empty container, a reference
                that can never resolve (a step that does not exist or comes later, ``item``
                outside a foreach, ...), two functions under one tool name.
        """
        with self._entered():
            if not self._handles:
                raise SpecError(
                    f"workflow {self.name!r} has no steps: add one (flow.tool(...), "
                    "flow.map(...), ...) before build()"
                )
            data = {"name": self.name, "steps": self._built(), **self._top}
            try:
                spec = WorkflowSpec.model_validate(data)
            except ValidationError as exc:
                said = validation_problems(exc)
                named = said.startswith(f"WorkflowSpec {self.name!r}")
                raise SpecError(said if named else f"workflow {self.name!r}: {said}") from None
            problems = reference_problems(spec)
            if problems:
                shown = "; ".join(problem.removesuffix(f"; {NEXT}") for problem in problems)
                hint = f"; {NEXT}" if any(p.endswith(NEXT) for p in problems) else ""
                raise SpecError(shown + hint)
        self._functions()
        return spec

    @contextlib.contextmanager
    def _entered(self) -> Iterator[None]:
        # Marks the builder as being read, so one nested in itself is an error, not a recursion.
        if self._open:
            raise SpecError(
                f"workflow {self.name!r} contains itself (through a workflow step); a workflow "
                "cannot run itself as a step"
            )
        self._open = True
        try:
            yield
        finally:
            self._open = False

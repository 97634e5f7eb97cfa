"""Where a workflow step is: its place in the spec's tree, the items and iterations around it,
and where its references start.

`places` indexes a spec once: for each step name, the step, the foreach and loop steps around
it, and its order in a depth-first walk (what `replay` compares positions by). `Scope` is
where the planner's walk is (the key prefix of the items and iterations around it, and what
``item``, ``index`` and ``iteration`` mean there); `StepEnv` resolves the references of a step
in a scope against the run's progress.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from psych_core._remembered import Remembered
from psych_core._workflow_keys import indexed, key_parts
from psych_core._workflow_spec import ForeachStep, LoopStep, Step, WorkflowSpec, children
from psych_core._workflow_state import StepResult
from psych_core._workflow_values import Unresolved

# -- the spec's tree, indexed once per spec --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Place:
    """Where a step is: the foreach and loop steps around it, outermost first (each with
    whether it is a loop), and its order in a depth-first walk of the tree."""

    step: Step
    around: tuple[tuple[str, bool], ...]
    order: int


def _index(spec: WorkflowSpec) -> dict[str, Place]:
    index: dict[str, Place] = {}

    def visit(steps: tuple[Step, ...], around: tuple[tuple[str, bool], ...]) -> None:
        for step in steps:
            index[step.name] = Place(step, around, len(index))
            inner = around
            if isinstance(step, ForeachStep | LoopStep):
                inner = (*around, (step.name, isinstance(step, LoopStep)))
            visit(children(step), inner)

    visit(spec.steps, ())
    return index


places: Remembered[WorkflowSpec, dict[str, Place]] = Remembered(_index)
"""Every step of a spec by name, with its place in the tree: indexed once per spec object,
since a worker plans many rounds of the same spec and the index walks the whole tree."""


def step_place(spec: WorkflowSpec, text: str, *, what: str) -> Place:
    """The place of the step `text` names: a step's name, or its whole memo key
    (``orders[2].charge``: every foreach and loop around it, each with an index).

    Raises `ValueError` naming `what` (the argument it came in) and saying what is wrong.
    """
    index = places(spec)
    parts = key_parts(text)
    name, last_index = parts[-1]
    place = index.get(name)
    if place is None or last_index is not None:
        known = ", ".join(sorted(index))
        raise ValueError(
            f"{what} {text!r} names no step of workflow {spec.name!r} (its steps: {known})"
        )
    if len(parts) == 1:
        return place
    containers = [container for container, _ in place.around]
    given = [part for part, _ in parts[:-1]]
    if given != containers or any(number is None for _, number in parts[:-1]):
        whole = "".join(f"{indexed(container, 0)}." for container in containers) + name
        around = " > ".join(containers) or "no foreach or loop"
        raise ValueError(
            f"{what} {text!r}: step {name!r} sits in {around}; name it by its name alone, or "
            f"by its whole memo key such as {whole!r}"
        )
    return place


# -- scopes ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scope:
    """Where the walk is: the key prefix of the items and iterations around it, what ``item``,
    ``index`` and ``iteration`` mean there, and the deadline of the containers around it."""

    prefix: str = ""
    around: tuple[tuple[str, int], ...] = ()
    item: JsonValue = None
    index: int | None = None
    iteration: int | None = None
    deadline: dt.datetime | None = None

    def key(self, name: str) -> str:
        """The memo key of the step `name` here."""
        return self.prefix + name

    def into(
        self,
        name: str,
        number: int,
        *,
        item: JsonValue = None,
        foreach: bool = False,
    ) -> Scope:
        """The scope inside item (or iteration) `number` of the container `name`."""
        return Scope(
            prefix=f"{self.prefix}{indexed(name, number)}.",
            around=(*self.around, (name, number)),
            item=item if foreach else self.item,
            index=number if foreach else self.index,
            iteration=self.iteration if foreach else number,
            deadline=self.deadline,
        )

    def at_iteration(self, number: int) -> Scope:
        """This scope, with ``iteration`` meaning `number`."""
        return Scope(
            self.prefix, self.around, self.item, self.index, number, deadline=self.deadline
        )

    def until(self, deadline: dt.datetime | None) -> Scope:
        """This scope, with the earlier of its deadline and `deadline`."""
        return Scope(
            self.prefix,
            self.around,
            self.item,
            self.index,
            self.iteration,
            deadline=earliest(self.deadline, deadline),
        )


ROOT = Scope()
"""The scope of the workflow's top-level steps."""


class StepEnv:
    """Where the references of a step in `scope` start (`psych_core._workflow_values.Env`)."""

    def __init__(
        self,
        places: Mapping[str, Place],
        input: JsonValue,
        results: Mapping[str, StepResult],
        values: Mapping[str, JsonValue],
        last_iteration: Mapping[str, int],
        scope: Scope,
    ) -> None:
        self.places = places
        self.input = input
        self.results = results
        self.values = values
        self.last_iteration = last_iteration
        self.scope = scope

    def start(self, path: str, parts: list[str]) -> tuple[JsonValue, int]:
        """The value the first parts of `path` name, and how many parts it stands for."""
        scope = self.scope
        match parts[0]:
            case "input":
                return self.input, 1
            case "state":
                if len(parts) == 1:
                    return dict(self.values), 1
                if parts[1] not in self.values:
                    raise Unresolved(
                        path, f"state.{parts[1]} is not set (no set_state step has set it yet)"
                    )
                return self.values[parts[1]], 2
            case "item" | "index":
                if scope.index is None:
                    raise Unresolved(path, f"{parts[0]} is defined only inside a foreach step")
                return (scope.item, 1) if parts[0] == "item" else (scope.index, 1)
            case "iteration":
                if scope.iteration is None:
                    raise Unresolved(path, "iteration is defined only inside a loop step")
                return scope.iteration, 1
            case _:
                return self._step(path, parts), 3

    def _step(self, path: str, parts: list[str]) -> JsonValue:
        name, what = parts[1], parts[2]
        place = self.places.get(name)
        if place is None:
            raise Unresolved(path, f"this workflow has no step named {name!r}")
        key = self._key(path, name, place)
        result = self.results.get(key)
        if result is None:
            raise Unresolved(path, f"step {key} has not run (it has not settled, or never ran)")
        match what:
            case "output":
                return result.output
            case "status":
                return result.status
            case _:
                failure = result.failure
                if failure is None:
                    return None
                return {"kind": failure.kind, "error": failure.error, "step": failure.step}

    def _key(self, path: str, name: str, place: Place) -> str:
        prefix = ""
        inside = True
        for depth, (container, is_loop) in enumerate(place.around):
            if inside and depth < len(self.scope.around):
                here, number = self.scope.around[depth]
                if here == container:
                    prefix += f"{indexed(container, number)}."
                    continue
            inside = False
            if not is_loop:
                raise Unresolved(
                    path,
                    f"step {name!r} runs once per item of foreach {container!r}, and this "
                    f"reference is outside it: read steps.{container}.output (each item's "
                    "last output)",
                )
            last = self.last_iteration.get(prefix + container)
            if last is None:
                raise Unresolved(
                    path, f"step {name!r} is inside loop {container!r}, which has not run yet"
                )
            prefix += f"{indexed(container, last)}."
        return prefix + name


def earliest(a: dt.datetime | None, b: dt.datetime | None) -> dt.datetime | None:
    """The earlier of two times, either of which may be None (no time)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)

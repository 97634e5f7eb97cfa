"""What a workflow's references use that can be told wrong before it runs.

A step may use the output of a step that has settled before it starts: one earlier in its own
sequence or in a sequence around it (or inside such a step, but not inside a foreach: from
outside, a step in a foreach names no single item). Anything else never resolves when it is
read: a step that does not exist, the step itself, one that comes later, one inside it, the
container it is in, or one in another branch of a parallel or branch step (those run at the
same time, or instead). ``item``/``index`` need a foreach around them, ``iteration`` a loop,
and ``state.NAME`` a set_state step that sets NAME somewhere. A loop's ``until`` and
``repeat_while`` are read as if at the end of its body (before the first iteration a step of
the body does not resolve yet: that is the engine's to report, guarded with `exists`).

Pure: it reads a built `WorkflowSpec` and lists the problems, each naming its step.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator

from pydantic import BaseModel

from psych_core import (
    AgentSpec,
    BranchStep,
    ForeachStep,
    LoopStep,
    ParallelStep,
    Ref,
    SetStateStep,
    Step,
    WorkflowSpec,
    WorkflowStep,
)

_STEP_TYPES: tuple[type[BaseModel], ...] = typing.get_args(typing.get_args(Step)[0])
_AT_END_OF_BODY = ("until", "repeat_while")
"""A loop's fields read after its body ran, not before it starts."""

type _Sequence = tuple[str, str, str]
"""A sequence of steps: (its container step's name, the container's kind, which of its
sequences), ("", "workflow", "") for the workflow's own."""

type _Path = tuple[tuple[_Sequence, int], ...]
"""Where a step is: the sequence and index of it and of each container around it."""

_TOP: _Sequence = ("", "workflow", "")
NEXT = "a step can use the output of steps before it in its own sequence or one around it"


def reference_problems(spec: WorkflowSpec) -> list[str]:
    """Every reference of `spec` (and of the workflows nested in it) that can never resolve,
    each as a sentence naming the workflow and the step that holds it."""
    places = dict(_places(spec.steps, _TOP, ()))
    paths = {step.name: path for step, path in places.values()}
    state_names = {
        key for step, _ in places.values() if isinstance(step, SetStateStep) for key in step.values
    }
    problems: list[str] = []
    for step, path in places.values():
        holder = f"workflow {spec.name!r}, {step.kind} step {step.name!r}"
        for name in type(step).model_fields:
            at = path
            if isinstance(step, LoopStep) and name in _AT_END_OF_BODY:
                at = (*path, ((step.name, step.kind, "body"), len(step.steps)))
            for found in _refs(getattr(step, name)):
                problem = _problem(found, at, paths, state_names)
                if problem is not None:
                    problems.append(f"{holder}: reference {found.path!r} {problem}")
        if isinstance(step, WorkflowStep):
            problems.extend(reference_problems(step.workflow))
    if spec.output is not None:
        end: _Path = ((_TOP, len(spec.steps)),)
        for found in _refs(spec.output):
            problem = _problem(found, end, paths, state_names)
            if problem is not None:
                problems.append(
                    f"workflow {spec.name!r}, its output: reference {found.path!r} {problem}"
                )
    return problems


def _places(
    steps: tuple[Step, ...], sequence: _Sequence, around: _Path
) -> Iterator[tuple[str, tuple[Step, _Path]]]:
    for index, step in enumerate(steps):
        path = (*around, (sequence, index))
        yield step.name, (step, path)
        for slot, inner in _sequences(step):
            yield from _places(inner, (step.name, step.kind, slot), path)


def _sequences(step: Step) -> Iterator[tuple[str, tuple[Step, ...]]]:
    match step:
        case ParallelStep(branches=branches):
            for name, steps in branches.items():
                yield f"branch {name!r}", steps
        case BranchStep(cases=cases, otherwise=otherwise):
            for number, case in enumerate(cases):
                yield f"case {number}", case.steps
            yield "otherwise", otherwise
        case ForeachStep(steps=steps) | LoopStep(steps=steps):
            yield "body", steps
        case _:
            pass


def _refs(value: object) -> Iterator[Ref]:
    """The references in a step's own field: not in the steps inside it, which are checked
    where they are, nor in a nested workflow or agent, which are their own runs."""
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, (*_STEP_TYPES, WorkflowSpec, AgentSpec)):
        return
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _refs(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _refs(item)


def _problem(found: Ref, at: _Path, paths: dict[str, _Path], state_names: set[str]) -> str | None:
    parts = found.path.split(".")
    match parts[0]:
        case "steps":
            target = paths.get(parts[1])
            if target is None:
                return f"names no step of this workflow ({parts[1]!r})"
            return _order(parts[1], target, at)
        case "item" | "index" if not _inside(at, "foreach"):
            return f"is only defined inside a foreach step's body; {NEXT}"
        case "iteration" if not _inside(at, "loop"):
            return "is only defined inside a loop step's body (or its until/repeat_while)"
        case "state" if len(parts) > 1 and parts[1] not in state_names:
            return f"names state {parts[1]!r}, which no set_state step of this workflow sets"
        case _:
            return None


def _inside(at: _Path, kind: str) -> bool:
    return any(sequence[1] == kind for sequence, _ in at)


def _order(name: str, target: _Path, at: _Path) -> str | None:
    for level, ((where, index), (target_where, target_index)) in enumerate(
        zip(at, target, strict=False)
    ):
        if where != target_where:
            container = f"{where[1]} step {where[0]!r}"
            return (
                f"uses step {name!r}, which is in another {_slot_noun(where)} of {container}: "
                f"they run at the same time or instead of each other; {NEXT}"
            )
        if target_index < index:
            foreach = next((seq[0] for seq, _ in target[level + 1 :] if seq[1] == "foreach"), None)
            if foreach is None:
                return None
            return (
                f"uses step {name!r}, which is inside foreach step {foreach!r}: from outside it, "
                f"a step inside names no single item; read the foreach's own output "
                f"('steps.{foreach}.output', the list of each item's last output)"
            )
        if target_index > index:
            return f"uses step {name!r}, which comes later; {NEXT}"
    if len(target) == len(at):
        return f"uses its own step's output, which is not ready when it is read; {NEXT}"
    if len(target) < len(at):
        return f"uses step {name!r}, which contains it: its output is ready only after; {NEXT}"
    return f"uses step {name!r}, which is inside it and runs after it starts; {NEXT}"


def _slot_noun(sequence: _Sequence) -> str:
    return "branch" if sequence[1] == "parallel" else "case"

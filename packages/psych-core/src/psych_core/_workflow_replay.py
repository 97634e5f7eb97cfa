"""Replay: which steps of a workflow run a new run copies, and where it runs again from.

`psych_runtime.replay` admits a new run that starts from a step of an ended one. Every step
that settled ``completed`` or ``skipped`` in the old run *before* that step is copied into the
new run's `RunAdmitted` (`ReplayOf`); the planner settles each as ``replayed`` when its walk
reaches it, and runs everything else. "Before" is the order of the tree, never the order in
which steps happened to finish: steps depth first in spec order, the items of a foreach and
the iterations of a loop by index. So replaying from ``orders[2].charge`` copies items 0 and
1 of ``orders`` whole and the steps of item 2 before ``charge``; replaying from ``charge``
(the name alone) starts at its first item, ``orders[0].charge``, and runs every later item
again. Containers are never copied whole: the
new run enters them again (from copied data, so they choose what they chose before, unless a
new input or a corrected spec says otherwise) and copies what is inside.

Pure: it reads the old run's records and the specs, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import JsonValue

from psych_core._records import Record, StepsPlanned
from psych_core._workflow_events import CopiedStep, StateSet, StepSettled
from psych_core._workflow_keys import indexed, key_parts
from psych_core._workflow_scope import Place, places, step_place
from psych_core._workflow_spec import CONTAINERS, WorkflowSpec

Position = tuple[tuple[int, int], ...]


def replay_start(spec: WorkflowSpec, from_step: str) -> str:
    """The memo key a replay of `spec` runs again from.

    `from_step` is a step's name (inside foreach and loop steps: from their first item or
    iteration) or a memo key (``orders[2].charge``). Raises `ValueError`, saying what is
    wrong, when it names no step of `spec`.
    """
    place = step_place(spec, from_step, what="from_step")
    if len(key_parts(from_step)) > 1:
        return from_step
    return "".join(f"{indexed(container, 0)}." for container, _ in place.around) + from_step


def copied_steps(
    source: WorkflowSpec,
    target: WorkflowSpec,
    records: Iterable[Record],
    start: str,
) -> tuple[CopiedStep, ...]:
    """The steps a replay from `start` copies from the old run's `records`: those that settled
    ``completed`` or ``skipped`` there before `start` in `target`'s tree order (the spec the
    new run follows), each with the kind of step that ran (`source`'s). `start` is read as
    `replay_start` reads it."""
    ran = places(source)
    order = places(target)
    limit = _position(order, replay_start(target, start))
    assert limit is not None
    copied: dict[str, CopiedStep] = {}
    for record in records:
        body = record.body
        if not isinstance(body, StepsPlanned):
            continue
        for event in body.events:
            match event:
                case StepSettled(key=key, status="completed" | "skipped" as status):
                    output: JsonValue = event.output
                case StateSet(key=key, values=values):
                    status, output = "completed", dict(values)
                case _:
                    continue
            step = _leaf(ran, key)
            position = _position(order, key)
            if step is None or position is None or not _before(position, limit):
                continue
            copied[key] = CopiedStep(key=key, kind=step.step.kind, status=status, output=output)
    return tuple(copied.values())


def _leaf(index: Mapping[str, Place], key: str) -> Place | None:
    """The place of the step `key` names, when it is a step that does one thing (a foreach
    item or loop iteration, ``KEY[i]``, and a container are not copied)."""
    name, number = key_parts(key)[-1]
    place = index.get(name)
    if place is None or number is not None or isinstance(place.step, CONTAINERS):
        return None
    return place


def _position(index: Mapping[str, Place], key: str) -> Position | None:
    """Where `key` is in the tree's order: for each step it passes through, the step's order
    and its item or iteration index (-1 for the step itself)."""
    out: list[tuple[int, int]] = []
    for name, number in key_parts(key):
        place = index.get(name)
        if place is None:
            return None
        out.append((place.order, -1 if number is None else number))
    return tuple(out)


def _before(position: Position, limit: Position) -> bool:
    """Whether `position` comes before `limit` in the tree's order, and is neither inside the
    step at `limit` nor around it."""
    for mine, theirs in zip(position, limit, strict=False):
        if mine != theirs:
            return mine < theirs
    return False

"""Resolving a workflow's values (`Ref`, `Lit`, `Obj`, `Arr`) and evaluating its conditions.

Pure: what a reference finds comes from an `Env` (the run's input, its state, the steps
settled so far, the item or iteration around the step). A reference that does not resolve
raises `Unresolved`, naming the path and what was there, so the step that used it fails with
kind ``reference`` and a message a person can act on.
"""

from __future__ import annotations

import json
from typing import Protocol

from pydantic import JsonValue

from psych_core._json_equal import json_equal
from psych_core._workflow_spec import (
    AllOf,
    AnyOf,
    Arr,
    Compare,
    CompareOp,
    Condition,
    Exists,
    Expr,
    Lit,
    Not,
    Obj,
    Ref,
    Truthy,
)

PREVIEW = 60
"""How many characters of a value an error shows."""


class Unresolved(Exception):
    """A reference that does not resolve: `path`, and what was wrong."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"reference {path!r}: {problem}")


class Env(Protocol):
    """Where references start: the value at the start of a path, and how many of its parts
    that value stands for (``input`` is one part, ``steps.NAME.output`` three)."""

    def start(self, path: str, parts: list[str]) -> tuple[JsonValue, int]:
        """The value the first parts of `path` name; `Unresolved` when there is none."""
        ...


def resolve(expr: Expr, env: Env) -> JsonValue:
    """The value of `expr`; `Unresolved` names the first reference that does not resolve."""
    match expr:
        case Lit(value=value):
            return value
        case Ref(path=path):
            return lookup(path, env)
        case Obj(fields=fields):
            return {name: resolve(value, env) for name, value in fields.items()}
        case Arr(items=items):
            return [resolve(item, env) for item in items]


def lookup(path: str, env: Env) -> JsonValue:
    """The value a reference path names."""
    parts = path.split(".")
    value, used = env.start(path, parts)
    where = ".".join(parts[:used])
    for part in parts[used:]:
        value = _member(path, where, value, part)
        where = f"{where}.{part}"
    return value


def holds(condition: Condition, env: Env) -> bool:
    """Whether `condition` holds. `AllOf` and `AnyOf` stop at the first condition that
    decides them, so a later one is not evaluated (and cannot fail)."""
    match condition:
        case Compare(left=left, op=op, right=right):
            return compare(resolve(left, env), op, resolve(right, env))
        case Exists(ref=ref):
            try:
                lookup(ref.path, env)
            except Unresolved:
                return False
            return True
        case Truthy(value=value):
            return truthy(resolve(value, env))
        case AllOf(conditions=conditions):
            return all(holds(inner, env) for inner in conditions)
        case AnyOf(conditions=conditions):
            return any(holds(inner, env) for inner in conditions)
        case Not(condition=inner):
            return not holds(inner, env)


def compare(left: JsonValue, op: CompareOp, right: JsonValue) -> bool:
    """``left OP right`` as JSON reads them. An order between values of different kinds (a
    number and a string) never holds, like ``in`` or ``contains`` on a value that holds nothing."""
    match op:
        case "eq":
            return json_equal(left, right)
        case "ne":
            return not json_equal(left, right)
        case "gt" | "gte" | "lt" | "lte":
            return _ordered(left, op, right)
        case "in":
            return _contains(right, left)
        case "contains":
            return _contains(left, right)


def truthy(value: JsonValue) -> bool:
    """JSON truthiness: everything but null, false, 0, "", [] and {}."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    return value is not None and value != "" and value != [] and value != {}


def describe(value: JsonValue) -> str:
    """A value as an error names it: its kind and the start of its JSON."""
    kind = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), "null")
    if value is None:
        return "null"
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > PREVIEW:
        text = text[:PREVIEW] + "..."
    return f"{kind} ({text})"


def _member(path: str, where: str, value: JsonValue, part: str) -> JsonValue:
    if isinstance(value, dict):
        if part in value:
            return value[part]
        keys = ", ".join(sorted(value)[:10]) or "none"
        raise Unresolved(path, f"{where} has no field {part!r} (its fields: {keys})")
    if isinstance(value, list):
        if part.isdigit() and int(part) < len(value):
            return value[int(part)]
        raise Unresolved(path, f"{where} is a list of {len(value)}; {part!r} is not an index in it")
    raise Unresolved(path, f"{where} is {describe(value)}, which has no {part!r}")


def _ordered(left: JsonValue, op: CompareOp, right: JsonValue) -> bool:
    a: float | str
    b: float | str
    if _is_number(left) and _is_number(right):
        a, b = float(left), float(right)  # type: ignore[arg-type]
    elif isinstance(left, str) and isinstance(right, str):
        a, b = left, right
    else:
        return False
    match op:
        case "gt":
            return a > b  # type: ignore[operator]
        case "gte":
            return a >= b  # type: ignore[operator]
        case "lt":
            return a < b  # type: ignore[operator]
        case _:
            return a <= b  # type: ignore[operator]


def _is_number(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _contains(container: JsonValue, member: JsonValue) -> bool:
    if isinstance(container, list):
        return any(json_equal(item, member) for item in container)
    if isinstance(container, dict):
        return isinstance(member, str) and member in container
    if isinstance(container, str):
        return isinstance(member, str) and member in container
    return False

"""The values and conditions a workflow builder takes: `ref`, `lit` and the condition helpers.

Each returns the spec's own data (`Ref`, `Lit`, `Compare`, ...), so a builder's spec is the
dict form's spec. Plain Python data becomes a value as the dict form would write it: a scalar
is a `Lit`, a dict an `Obj` and a list or tuple an `Arr` of values (write ``lit({...})`` for
one constant object instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeGuard

from pydantic import JsonValue, ValidationError

from psych_core import (
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
    SpecError,
    Truthy,
)

type Value = (
    Ref | Lit | Obj | Arr | str | int | float | bool | Mapping[str, Value] | Sequence[Value] | None
)
"""What a builder takes where the spec takes a value: ``ref(...)``, ``lit(...)``, or plain JSON
data (a scalar becomes a `Lit`, a dict an `Obj`, a list or tuple an `Arr`)."""

_CONDITIONS = (Compare, Exists, Truthy, AllOf, AnyOf, Not)


def validation_problems(exc: ValidationError) -> str:
    """A pydantic error as one line: each problem with where it is."""
    problems = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def as_expr(value: object, where: str) -> Expr:
    """`value` as a spec value; `SpecError` naming `where` when it is not JSON data."""
    match value:
        case Ref() | Lit() | Obj() | Arr():
            return value
        case float() if not math.isfinite(value):
            raise SpecError(f"{where}: {value!r} has no JSON form; use a finite number")
        case None | bool() | int() | float() | str():
            return Lit(value)
        case Mapping():
            fields: dict[str, Expr] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SpecError(f"{where}: object keys must be strings, got {key!r}")
                fields[key] = as_expr(item, f"{where}.{key}")
            return Obj(fields=fields)
        case list() | tuple():
            return Arr(items=tuple(as_expr(item, f"{where}[{i}]") for i, item in enumerate(value)))
        case _:
            hint = (
                " (a condition is not a value: give it to when(...), a case or a loop)"
                if is_condition(value)
                else ""
            )
            raise SpecError(
                f"{where}: {type(value).__name__} {value!r} is not a workflow value{hint}; pass "
                "JSON data (str, int, float, bool, None, dict, list), ref('...') or lit(...)"
            )


def is_condition(value: object) -> TypeGuard[Condition]:
    """Whether `value` is a condition (``eq(...)``, ``exists(...)``, ``all_of(...)``, ...)."""
    return isinstance(value, _CONDITIONS)


def as_condition(value: object, where: str) -> Condition:
    """`value` if it is a condition; `SpecError` naming `where` otherwise."""
    if is_condition(value):
        return value
    raise SpecError(
        f"{where}: {type(value).__name__} {value!r} is not a condition; build one with eq, ne, "
        "gt, gte, lt, lte, in_, contains, exists, truthy, all_of, any_of or not_ "
        "(truthy(ref('...')) tests a value)"
    )


def ref(path: str) -> Ref:
    """A value taken from the run: ``"input.email"``, ``"steps.create.output.id"`` (or a
    step's ``failure`` or ``status``), ``"state.count"``, or, inside a foreach,
    ``"item"``/``"index"`` and, inside a loop, ``"iteration"`` (each followed by a path into
    it, if you like).

    Raises:
        SpecError: the path does not start with one of those roots or has an empty part.
    """
    try:
        return Ref(path)
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise SpecError(problems) from None


def lit(value: JsonValue) -> Lit:
    """A constant, taken as it is: ``lit({"a": 1})`` is one constant object, where a plain
    ``{"a": 1}`` would be an object of values.

    Raises:
        SpecError: `value` is not JSON data.
    """
    try:
        return Lit(value)
    except ValidationError as exc:
        raise SpecError(f"lit({value!r}): {validation_problems(exc)}") from None


def _compare(op: CompareOp, left: Value, right: Value) -> Compare:
    name = "in_" if op == "in" else op
    return Compare(
        left=as_expr(left, f"{name}(): its left side"),
        op=op,
        right=as_expr(right, f"{name}(): its right side"),
    )


def eq(left: Value, right: Value) -> Compare:
    """``left == right`` (JSON equality: ``1`` and ``1.0`` are equal, ``1`` and ``true`` not)."""
    return _compare("eq", left, right)


def ne(left: Value, right: Value) -> Compare:
    """``left != right``."""
    return _compare("ne", left, right)


def gt(left: Value, right: Value) -> Compare:
    """``left > right`` (numbers with numbers, strings with strings)."""
    return _compare("gt", left, right)


def gte(left: Value, right: Value) -> Compare:
    """``left >= right`` (numbers with numbers, strings with strings)."""
    return _compare("gte", left, right)


def lt(left: Value, right: Value) -> Compare:
    """``left < right`` (numbers with numbers, strings with strings)."""
    return _compare("lt", left, right)


def lte(left: Value, right: Value) -> Compare:
    """``left <= right`` (numbers with numbers, strings with strings)."""
    return _compare("lte", left, right)


def in_(left: Value, right: Value) -> Compare:
    """`left` is an item of the list `right`, a key of the object `right` or a part of the
    string `right` (the spec's ``in``; the underscore keeps it from being Python's keyword)."""
    return _compare("in", left, right)


def contains(left: Value, right: Value) -> Compare:
    """The list `left` holds the item `right`, the object `left` has the key `right`, or the
    string `left` holds the string `right`."""
    return _compare("contains", left, right)


def exists(target: Ref | str) -> Exists:
    """Whether a reference resolves (to anything, ``null`` included): ``exists("input.note")``
    or ``exists(ref("input.note"))``."""
    if isinstance(target, str):
        return Exists(ref=ref(target))
    if not isinstance(target, Ref):
        raise SpecError(f"exists() takes a reference, like exists('input.note'), not {target!r}")
    return Exists(ref=target)


def truthy(value: Value) -> Truthy:
    """Whether a value is truthy as JSON reads it: not null, false, 0, "", [] or {}."""
    return Truthy(value=as_expr(value, "truthy(): its value"))


def all_of(*conditions: Condition) -> AllOf:
    """Every condition holds (true when there are none)."""
    return AllOf(
        conditions=tuple(
            as_condition(c, f"all_of(): condition {i}") for i, c in enumerate(conditions)
        )
    )


def any_of(*conditions: Condition) -> AnyOf:
    """At least one condition holds (false when there are none)."""
    return AnyOf(
        conditions=tuple(
            as_condition(c, f"any_of(): condition {i}") for i, c in enumerate(conditions)
        )
    )


def not_(condition: Condition) -> Not:
    """The condition does not hold."""
    return Not(condition=as_condition(condition, "not_()"))

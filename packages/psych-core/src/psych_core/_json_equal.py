"""Equality of JSON data as JSON means it: 1 and 1.0 are equal, True and 1 are not."""

from __future__ import annotations

from typing import Any


def json_equal(a: Any, b: Any) -> bool:
    """Whether `a` and `b` (JSON data: dicts, lists, strings, numbers, booleans, None) are the
    same JSON value: numbers by value, booleans only to booleans, objects whatever their key
    order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)

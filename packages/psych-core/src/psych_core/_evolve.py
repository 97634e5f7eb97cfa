"""A copy of a frozen dataclass with some fields changed, at the cost of one dict copy.

The fold makes several copies of `RunState` (33 fields) per record; `dataclasses.replace`
calls the generated `__init__`, which sets every field again through `object.__setattr__`,
and was a fifth of the runtime's CPU per durable step. `evolve` copies the instance's
`__dict__` instead (a dataclass with slots gets `dataclasses.replace`). Call sites import it as
`replace` under a `TYPE_CHECKING` switch, so mypy still checks each change's name and type as
it does for `dataclasses.replace`; at run time a misspelt name raises `TypeError` here.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

_FIELD_NAMES: dict[type, frozenset[str]] = {}


def evolve[T](obj: T, /, **changes: Any) -> T:
    """`obj` with `changes` applied; `obj` itself is left as it is."""
    cls = type(obj)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))  # type: ignore[arg-type]
    if not changes.keys() <= names:
        unknown = ", ".join(sorted(changes.keys() - names))
        raise TypeError(f"{cls.__name__} has no field {unknown}")
    try:
        state = obj.__dict__.copy()
    except AttributeError:  # a dataclass with slots
        return replace(obj, **changes)  # type: ignore[type-var]
    copy = object.__new__(cls)
    state.update(changes)
    object.__setattr__(copy, "__dict__", state)
    return copy

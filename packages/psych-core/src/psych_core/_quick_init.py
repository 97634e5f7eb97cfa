"""`quick_init`: a frozen dataclass's ``__init__``, at a fraction of its cost.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__(self,
name, value)``, which looks the attribute up through the class on every call: about 110 ns a
field, four times what the same class costs unfrozen. The runtime builds some fifteen frozen
values per durable step (the batch, its checks and fence, the conversation's node, the model's
request and answer, the call's state and outcome, ...), so those lookups were a tenth of its
CPU per step. `quick_init` writes the same ``__init__`` (same parameters, defaults, factories,
keyword-only fields, ``__post_init__``) that sets each slot through its descriptor, bound once
when the class is made, or a class without slots's ``__dict__`` in one assignment, as
`psych_core._evolve` does. Nothing else about the class changes: it stays frozen, and
``dataclasses.replace`` goes through the new ``__init__``. Exported for the runtime's and the
adapters' own values on a step's path (`ToolContext`).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
from typing import Any

_MISSING: Any = dataclasses.MISSING


class _Factory:
    """The default of a field made by a factory, in the signature (as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def quick_init[C: type](cls: C) -> C:
    """Give the frozen dataclass `cls` a faster ``__init__`` that does what its own did.

    Apply it above ``@dataclass(frozen=True, ...)``. Raises `TypeError` for a class it cannot
    serve: not a frozen dataclass, or one whose ``__init__`` the new one would not match
    parameter for parameter (an ``InitVar``, which no class here has, is one).
    """
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"quick_init serves frozen dataclasses, not {cls.__qualname__}")
    own = vars(cls).get("__init__")
    if own is None:
        raise TypeError(f"quick_init: {cls.__qualname__} has no __init__ of its own to replace")
    slotted = "__slots__" in cls.__dict__
    names: dict[str, Any] = {"_FACTORY": _FACTORY, "_set_dict": object.__setattr__}
    positional: list[str] = []
    keyword: list[str] = []
    lines: list[str] = []
    values: list[tuple[str, str]] = []  # (field, the expression of its value)
    for field in dataclasses.fields(cls):
        name = field.name
        if field.default is not _MISSING:
            names[f"_default_{name}"] = field.default
        if field.default_factory is not _MISSING:
            names[f"_factory_{name}"] = field.default_factory
        if field.init:
            if field.default is not _MISSING:
                parameter = f"{name}=_default_{name}"
            elif field.default_factory is not _MISSING:
                parameter = f"{name}=_FACTORY"
                lines.append(f"    if {name} is _FACTORY: {name} = _factory_{name}()")
            else:
                parameter = name
            (keyword if field.kw_only else positional).append(parameter)
            values.append((name, name))
        elif field.default is not _MISSING:
            values.append((name, f"_default_{name}"))
        elif field.default_factory is not _MISSING:
            values.append((name, f"_factory_{name}()"))
    if slotted:
        for name, value in values:
            slot = getattr(cls, name)
            if not isinstance(slot, types.MemberDescriptorType):
                raise TypeError(f"quick_init: {cls.__qualname__}.{name} is not a slot")
            names[f"_set_{name}"] = slot.__set__
            lines.append(f"    _set_{name}(self, {value})")
    elif values:
        items = ", ".join(f"{name!r}: {value}" for name, value in values)
        lines.append(f"    _set_dict(self, '__dict__', {{{items}}})")
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    parameters = ["self", *positional, *(["*", *keyword] if keyword else [])]
    body = "\n".join(f"    {line}" for line in lines) or "        pass"
    # As dataclasses makes the __init__ it replaces: from the class's own field names, in the
    # class's module (so its annotations resolve there), with the values it needs passed in.
    source = (
        f"def __make__({', '.join(names)}):\n"
        f"    def __init__({', '.join(parameters)}):\n{body}\n"
        "    return __init__\n"
    )
    made: dict[str, Any] = {}
    exec(source, sys.modules[cls.__module__].__dict__, made)
    init = made["__make__"](**names)
    init.__annotations__ = dict(own.__annotations__)
    if str(inspect.signature(init)) != str(inspect.signature(own)):
        raise TypeError(
            f"quick_init: {cls.__qualname__}'s __init__{inspect.signature(own)} would become "
            f"__init__{inspect.signature(init)}"
        )
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = own.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls

"""Claiming the exports of a public module: each object reports the module users import it from."""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections.abc import Iterable, Mapping


def claim_exports(module: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Set ``__module__`` of every exported class and function to `module`.

    Users then see one public name for each (in reprs, tracebacks, pickles and the docs), and
    it is the name they can import. A class's string annotations are resolved first, in the
    module that defined them: afterwards they would be looked up in `module`, where their
    names are not (and FastAPI, TypeAdapter or typing.get_type_hints on a RunView would fail).
    A dataclass's fields get the resolved types too: pydantic reads those.
    """
    for name in names:
        obj = namespace[name]
        if isinstance(obj, type):
            own = inspect.get_annotations(obj)
            if own:
                params = {p.__name__: p for p in getattr(obj, "__type_params__", ())}
                hints = typing.get_type_hints(obj, localns=params or None, include_extras=True)
                obj.__annotations__ = {key: hints[key] for key in own if key in hints}
                # pydantic reads a dataclass's fields, not its annotations.
                for field in getattr(obj, "__dataclass_fields__", {}).values():
                    field.type = hints.get(field.name, field.type)
        if isinstance(obj, type) or callable(obj):
            with contextlib.suppress(AttributeError, TypeError):  # aliases of typing forms
                obj.__module__ = module

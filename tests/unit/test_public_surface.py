"""`psych_runtime.__all__` is the whole public surface, and it is closed."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator
from typing import Any

import pydantic

import psych_runtime

EXPORTED = {name: getattr(psych_runtime, name) for name in psych_runtime.__all__}


def _psych_types(annotation: Any) -> Iterator[type]:
    """Every psych class an annotation mentions, however deeply nested."""
    if isinstance(annotation, type):
        if annotation.__module__.startswith("psych_"):
            yield annotation
        return
    if isinstance(annotation, typing.TypeAliasType):
        yield from _psych_types(annotation.__value__)
        return
    for arg in typing.get_args(annotation):
        yield from _psych_types(arg)


def _annotations_of(obj: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel):
        for field_name, field in obj.model_fields.items():
            yield f"{obj.__name__}.{field_name}", field.annotation
    targets: list[tuple[str, Any]] = []
    if isinstance(obj, type):
        for attr_name, attr in vars(obj).items():
            if attr_name.startswith("_") and attr_name != "__init__":
                continue
            if isinstance(attr, property) and attr.fget is not None:
                targets.append((f"{obj.__name__}.{attr_name}", attr.fget))
            elif isinstance(attr, classmethod | staticmethod):
                targets.append((f"{obj.__name__}.{attr_name}", attr.__func__))
            elif inspect.isfunction(attr):
                targets.append((f"{obj.__name__}.{attr_name}", attr))
        if hasattr(obj, "__dataclass_fields__") or not issubclass(obj, pydantic.BaseModel):
            for key, value in typing.get_type_hints(obj).items():
                if not key.startswith("_"):
                    yield f"{obj.__name__}.{key}", value
    elif callable(obj):
        targets.append((getattr(obj, "__name__", repr(obj)), obj))
    params = {p.__name__: p for p in getattr(obj, "__type_params__", ())}
    for label, function in targets:
        wrapped = inspect.unwrap(function)
        for key, value in typing.get_type_hints(wrapped, localns=params).items():
            yield f"{label}:{key}", value


def test_every_type_in_an_exported_signature_is_exported() -> None:
    exported_types = {obj for obj in EXPORTED.values() if isinstance(obj, type)}
    missing: set[str] = set()
    for obj in EXPORTED.values():
        if not (isinstance(obj, type) or inspect.isfunction(obj)):
            continue
        for where, annotation in _annotations_of(obj):
            for mentioned in _psych_types(annotation):
                if mentioned not in exported_types:
                    missing.add(f"{mentioned.__qualname__} (in {where})")
    assert not missing, "types users can hold but cannot import:\n" + "\n".join(sorted(missing))


def test_exports_report_the_public_module() -> None:
    wrong = [
        name
        for name, obj in EXPORTED.items()
        if (isinstance(obj, type) or inspect.isfunction(obj)) and obj.__module__ != "psych_runtime"
    ]
    assert wrong == []


def test_all_names_exist_and_are_unique() -> None:
    assert len(psych_runtime.__all__) == len(set(psych_runtime.__all__))
    for name in psych_runtime.__all__:
        assert hasattr(psych_runtime, name), name


def test_public_names_have_docstrings() -> None:
    undocumented = [
        name
        for name, obj in EXPORTED.items()
        if (isinstance(obj, type) or inspect.isfunction(obj)) and not inspect.getdoc(obj)
    ]
    assert undocumented == []


def test_the_package_docstrings_exist() -> None:
    import psych_core

    for module in (psych_runtime, psych_core):
        assert isinstance(module, types.ModuleType) and module.__doc__

"""The public surface is eight rooms, each closed: `psych_runtime` (what an app uses),
`psych_runtime.records`, `psych_runtime.ports`, `psych_runtime.errors`,
`psych_runtime.workflows`, `psych_runtime.mcp`, `psych_runtime.a2a` and
`psych_runtime.conversations`."""

from __future__ import annotations

import inspect
import re
import types
import typing
import warnings
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

import psych_core
import psych_runtime
from psych_runtime import a2a, conversations, errors, mcp, ports, records, workflows
from psych_runtime._deprecations import MOVED_FROM_THE_TOP, REMOVED_IN

ROOMS: tuple[types.ModuleType, ...] = (
    psych_runtime,
    records,
    ports,
    errors,
    workflows,
    mcp,
    a2a,
    conversations,
)
EXPORTED = {(room.__name__, name): getattr(room, name) for room in ROOMS for name in room.__all__}
# The names psych-runtime 0.1 exported at the top (workflows came later, in its own room).
MOVED = sorted(MOVED_FROM_THE_TOP)
NEWER = [
    name
    for room in (records, ports, errors)
    for name in room.__all__
    if name not in MOVED_FROM_THE_TOP
]


def _defined_names(room: types.ModuleType) -> list[str]:
    """The public names a module binds, other than modules (its subpackages among them)."""
    return [
        name
        for name, value in vars(room).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    ]


def _psych_types(annotation: Any, aliases: frozenset[Any] = frozenset()) -> Iterator[type]:
    """Every psych class an annotation mentions, however deeply nested (a recursive alias,
    like the workflow builder's `Value`, is read once)."""
    if isinstance(annotation, type):
        if annotation.__module__.startswith("psych_"):
            yield annotation
        return
    if isinstance(annotation, typing.TypeAliasType):
        if annotation not in aliases:
            yield from _psych_types(annotation.__value__, aliases | {annotation})
        return
    for arg in typing.get_args(annotation):
        yield from _psych_types(arg, aliases)


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


@pytest.mark.parametrize("room", ROOMS, ids=[room.__name__ for room in ROOMS])
def test_all_is_exactly_what_the_room_defines(room: types.ModuleType) -> None:
    assert len(room.__all__) == len(set(room.__all__)), "a name is listed twice"
    assert sorted(room.__all__) == sorted(_defined_names(room))


def test_no_name_is_in_two_rooms() -> None:
    seen: dict[str, str] = {}
    twice = []
    for room in ROOMS:
        for name in room.__all__:
            if name in seen:
                twice.append(f"{name} ({seen[name]} and {room.__name__})")
            seen[name] = room.__name__
    assert twice == []


def test_the_top_stays_small() -> None:
    # About sixty names an app needs; a name that grows it past that belongs in a room.
    assert 50 <= len(psych_runtime.__all__) <= 70, len(psych_runtime.__all__)


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


def test_exports_report_their_room() -> None:
    wrong = [
        f"{room}.{name} says {obj.__module__}"
        for (room, name), obj in EXPORTED.items()
        if (isinstance(obj, type) or inspect.isfunction(obj)) and obj.__module__ != room
    ]
    assert wrong == []


def test_string_annotations_still_resolve_after_the_move() -> None:
    # RunView and the records were defined with `from __future__ import annotations`.
    assert typing.get_type_hints(psych_runtime.RunView)["run_id"] is str
    hints = typing.get_type_hints(records.Record)
    assert hints["seq"] is int
    assert pydantic.TypeAdapter(psych_runtime.RunView).json_schema()["title"] == "RunView"


def test_public_names_have_docstrings() -> None:
    undocumented = [
        f"{room}.{name}"
        for (room, name), obj in EXPORTED.items()
        if (isinstance(obj, type) or inspect.isfunction(obj)) and not inspect.getdoc(obj)
    ]
    assert undocumented == []


def test_the_package_and_room_docstrings_exist() -> None:
    for module in (*ROOMS, psych_core):
        assert isinstance(module, types.ModuleType) and module.__doc__, module.__name__


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_name_still_resolves_at_the_top_with_a_warning(name: str) -> None:
    room = next(room for room in ROOMS[1:] if name in room.__all__)
    message = (
        f"psych_runtime.{name} moved to {room.__name__}.{name}; import it from there "
        f"(removed in {REMOVED_IN})"
    )
    with pytest.warns(DeprecationWarning, match=f"^{re.escape(message)}$") as caught:
        found = getattr(psych_runtime, name)
    assert found is getattr(room, name)
    assert {w.filename for w in caught} == {__file__}, "the warning must point at the caller"


def test_an_import_of_a_moved_name_warns_at_the_import_line() -> None:
    with pytest.warns(DeprecationWarning, match="moved to psych_runtime.ports.Batch") as caught:
        from psych_runtime import Batch  # type: ignore[attr-defined]
    assert Batch is ports.Batch
    assert {(w.filename, w.category) for w in caught} == {(__file__, DeprecationWarning)}


def test_moved_names_are_not_listed_at_the_top() -> None:
    listed = set(dir(psych_runtime)) | set(psych_runtime.__all__)
    assert listed.isdisjoint(MOVED)


def test_every_moved_name_is_in_a_room() -> None:
    rooms = {name for room in (records, ports, errors) for name in room.__all__}
    assert rooms >= MOVED_FROM_THE_TOP


@pytest.mark.parametrize("name", NEWER)
def test_a_name_added_to_a_room_later_was_never_at_the_top(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(psych_runtime, name)


def test_an_unknown_name_is_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
            psych_runtime.NoSuchName  # type: ignore[attr-defined]  # noqa: B018


def test_every_psych_error_is_in_the_errors_room() -> None:
    def subclasses(cls: type[Exception]) -> Iterator[type[Exception]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    defined = {
        cls
        for cls in subclasses(errors.PsychError)
        if cls.__module__.startswith(("psych_core", "psych_runtime"))
    }
    exported = {getattr(errors, name) for name in errors.__all__}
    assert {c.__name__ for c in defined - exported} == set()
    assert all(issubclass(cls, errors.PsychError) for cls in exported)


def test_the_errors_room_draws_its_tree_as_the_classes_are() -> None:
    assert errors.__doc__ is not None
    drawn: dict[str, str] = {}  # name -> parent, as the docstring draws it
    stack: list[tuple[int, str]] = []
    for line in errors.__doc__.splitlines():
        found = re.match(r"^ {4}([│ ]*(?:├── |└── )?)(\w+)", line)
        if found is None or found.group(2) not in errors.__all__:
            continue
        depth, name = len(found.group(1)), found.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[name] = stack[-1][1] if stack else ""
        stack.append((depth, name))
    assert sorted(drawn) == sorted(errors.__all__), "the tree must draw every error once"
    for name, parent in drawn.items():
        cls = getattr(errors, name)
        bases = [base.__name__ for base in cls.__bases__ if issubclass(base, errors.PsychError)]
        assert bases == ([parent] if parent else []), f"{name} is drawn under {parent!r}"

"""`quick_init` gives a frozen dataclass an ``__init__`` that does exactly what its own did."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any, cast

import pytest

from psych_core import AssistantMessage, Batch, RunIndex
from psych_core._quick_init import quick_init
from psych_core.ports import ModelResponse

CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1,), {}),
    ((1, ("b",)), {}),
    ((1, ("b",), "c"), {"d": 4}),
    ((), {"a": 1, "c": "c", "d": 5}),
    ((1,), {"b": ()}),
]
WRONG_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),  # a is missing
    ((1, 2, 3, 4), {}),  # d is keyword-only
    ((1,), {"e": []}),  # e is not a parameter
    ((1,), {"z": 0}),
    ((1,), {"a": 2}),
]


def every_kind_of_field(*, slots: bool, quick: bool) -> type:
    """A frozen dataclass with each kind of field, made anew (with `quick_init` or not)."""

    class Every:
        a: int
        b: tuple[str, ...] = field(default_factory=tuple)
        c: str = "x"
        d: int = field(default=3, kw_only=True)
        e: list[int] = field(default_factory=list, init=False)
        f: str = field(default="made", init=False)

        def __post_init__(self) -> None:
            self.e.append(self.a)  # runs once, after every field is set

    made: type = cast(Any, dataclass)(frozen=True, slots=slots)(Every)
    return quick_init(made) if quick else made


@pytest.mark.parametrize("slots", [True, False], ids=["slots", "dict"])
def test_the_new_init_builds_what_the_dataclass_built(slots: bool) -> None:
    own, quick = (
        every_kind_of_field(slots=slots, quick=False),
        every_kind_of_field(slots=slots, quick=True),
    )
    assert str(inspect.signature(quick)) == str(inspect.signature(own))
    for args, kwargs in CALLS:
        made, expected = quick(*args, **kwargs), own(*args, **kwargs)
        assert repr(made) == repr(expected)
        assert dataclasses.astuple(made) == dataclasses.astuple(expected)
        assert made == quick(*args, **kwargs)
    first, second = quick(1), quick(1)
    assert first.e is not second.e, "a factory makes each instance its own value"
    for args, kwargs in WRONG_CALLS:
        with pytest.raises(TypeError):
            own(*args, **kwargs)
        with pytest.raises(TypeError):
            quick(*args, **kwargs)


@pytest.mark.parametrize("slots", [True, False], ids=["slots", "dict"])
def test_it_stays_frozen_and_replace_goes_through_it(slots: bool) -> None:
    quick = every_kind_of_field(slots=slots, quick=True)
    made = quick(1, ("b",))
    with pytest.raises(FrozenInstanceError):
        made.a = 2
    changed = dataclasses.replace(made, a=7, d=9)
    assert (changed.a, changed.b, changed.d, changed.e) == (7, ("b",), 9, [7])
    assert made.a == 1


def test_fields_of_a_slotted_base_are_set_too() -> None:
    @dataclass(frozen=True, slots=True)
    class Base:
        a: int
        b: str = "b"

    @quick_init
    @dataclass(frozen=True, slots=True)
    class Child(Base):
        c: float = 0.5

    assert (
        repr(Child(1, "x", 2.0))
        == "test_fields_of_a_slotted_base_are_set_too.<locals>.Child(a=1, b='x', c=2.0)"
    )
    assert Child(1) == Child(a=1, b="b", c=0.5)


def test_a_class_it_cannot_serve_is_refused() -> None:
    @dataclass
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class WithInitVar:
        a: int
        scale: InitVar[int] = 1

        def __post_init__(self, scale: int) -> None:
            object.__setattr__(self, "a", self.a * scale)

    class Plain:
        pass

    @dataclass(frozen=True, init=False)
    class NoInit:
        a: int = 0

    for cls in (Mutable, Plain):
        with pytest.raises(TypeError, match="frozen dataclasses"):
            quick_init(cls)
    with pytest.raises(TypeError, match="no __init__ of its own"):
        quick_init(NoInit)
    with pytest.raises(TypeError, match="would become"):
        quick_init(WithInitVar)
    assert WithInitVar(2, 3).a == 6, "a refused class keeps its own __init__"


def test_the_cores_values_keep_their_signatures_and_stay_frozen() -> None:
    # quick_init compares each signature when the class is made; these are built as usual.
    batch = Batch((), "b1", RunIndex(status="running"))
    assert batch.inbox_seen == 0 and batch.notify == ()
    with pytest.raises(FrozenInstanceError):
        batch.batch_id = "b2"  # type: ignore[misc]
    assert AssistantMessage("hi").tool_calls == ()
    assert ModelResponse(model="m").tool_calls == ()
    assert "<factory>" in str(inspect.signature(ModelResponse))

"""Building a pydantic model of parts the runtime made from validated ones, without validating
them again.

The runtime builds some records' parts from values that are JSON already (a tool's result it
converted, a step's output read from a validated record); validating a `JsonValue` walks it
node by node in Python through a callable discriminator, at several times the cost of
serialising it. `unvalidated` is what `BaseModel.model_construct` does, without its per-field
loop (which costs more than the validation it skips). Each caller says in its docstring why
its parts are valid, and a test holds what it builds equal to the validated model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

# BaseModel's slots, set through their descriptors: `object.__setattr__` looks each up again.
_SET_DICT = BaseModel.__dict__["__dict__"].__set__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def unvalidated[M: BaseModel](cls: type[M], fields: dict[str, Any], given: set[str]) -> M:
    """An instance of `cls` holding `fields` (every field, in its order), `given` the ones a
    validated construction would count as set."""
    model = object.__new__(cls)
    _SET_DICT(model, fields)
    _SET_FIELDS_SET(model, given)
    _SET_EXTRA(model, None)
    _SET_PRIVATE(model, None)
    return model

"""Canonical JSON and version hashes.

A spec's version is ``"sha256:" + hex`` of its canonical JSON: keys sorted, no insignificant
whitespace, UTF-8, numbers in one stable form, and fields equal to their default left out, so
that adding a defaulted field in an upgrade changes no existing version.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from psych_core._json_equal import json_equal
from psych_core._remembered import Remembered

# Fields named here are written even when equal to their default: they say which kind of
# object this is, so two kinds with otherwise equal fields never hash alike.
ALWAYS_WRITTEN = frozenset({"kind"})


def canonical_value(value: Any) -> Any:
    """Turn a spec value into plain JSON data in its canonical form."""
    if isinstance(value, BaseModel):
        return _model_payload(value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no JSON form; use a finite number")
        # 1.0 and 1 are the same number: write both as 1.
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, got {key!r}")
            out[key] = canonical_value(item)
        return out
    if isinstance(value, list | tuple):
        return [canonical_value(item) for item in value]
    raise TypeError(f"{type(value).__name__} has no canonical JSON form")


def _model_payload(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = canonical_value(getattr(model, name))
        if name not in ALWAYS_WRITTEN and _is_default(value, field):
            continue
        out[field.alias or name] = value
    return out


def _is_default(value: Any, field: FieldInfo) -> bool:
    """Whether `value` (canonical already) is the field's default, as canonical JSON: so ()
    and [] or 1 and 1.0 count as equal, but True and 1 do not. Each subtree is made canonical
    once, on the way up, instead of again at every level that compares it."""
    if field.default is not PydanticUndefined:
        default = field.default
    elif field.default_factory is not None:
        default = field.default_factory()  # type: ignore[call-arg]
    else:
        return False
    try:
        return json_equal(value, canonical_value(default))
    except (TypeError, ValueError):
        return False


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value` (a model, mapping, sequence or scalar)."""
    return json.dumps(
        canonical_value(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def version_of(value: Any) -> str:
    """``"sha256:" + hex`` of the canonical JSON of `value`."""
    return _digest(canonical_json(value))


def spec_canonical_json(spec: object) -> str:
    """`canonical_json` of a frozen spec, remembered for that very object (`Remembered`):
    admission stores it with every run, and a workflow of a few dozen steps costs about a
    millisecond to write; a copy (`model_copy(update=...)`) is written anew."""
    return _texts(spec)


def spec_version(spec: object) -> str:
    """`version_of` a frozen spec, remembered for that very object (`Remembered`): a worker
    folds the same spec at every claim of a run, and hashing a large workflow costs
    milliseconds; a copy (`model_copy(update=...)`) is hashed anew."""
    return _versions(spec)


def _digest(text: str) -> str:
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


_texts: Remembered[object, str] = Remembered(canonical_json, kept=256)
_versions: Remembered[object, str] = Remembered(
    lambda spec: _digest(spec_canonical_json(spec)), kept=256
)

"""What changed between two versions of a spec, field by field. Pure.

The specs are compared as their canonical JSON (defaults left out, as their versions are hashed),
so a field set to a value other than its default shows as ``added``. Objects are compared key
by key; lists item by item, by position (an item put in front shows as every later item
changed, then one added at the end: what a reader of the JSON sees too).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, JsonValue

ChangeOp = Literal["added", "removed", "changed"]


class Change(BaseModel):
    """One difference: where (``tools/0/name``), what happened, and the values either side."""

    path: str
    op: ChangeOp
    before: JsonValue = None
    after: JsonValue = None


def diff_specs(before: JsonValue, after: JsonValue) -> list[Change]:
    """Every change from `before` to `after`, in document order (keys sorted)."""
    changes: list[Change] = []
    _diff(before, after, (), changes)
    return changes


def _diff(before: JsonValue, after: JsonValue, at: tuple[str, ...], out: list[Change]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            where = (*at, key)
            if key not in after:
                out.append(Change(path=_path(where), op="removed", before=before[key]))
            elif key not in before:
                out.append(Change(path=_path(where), op="added", after=after[key]))
            else:
                _diff(before[key], after[key], where, out)
    elif isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            where = (*at, str(index))
            if index >= len(after):
                out.append(Change(path=_path(where), op="removed", before=before[index]))
            elif index >= len(before):
                out.append(Change(path=_path(where), op="added", after=after[index]))
            else:
                _diff(before[index], after[index], where, out)
    elif not _same(before, after):
        out.append(Change(path=_path(at), op="changed", before=before, after=after))


def _same(before: JsonValue, after: JsonValue) -> bool:
    # JSON has one number type: 1 and 1.0 are the same value, but true is not 1.
    if isinstance(before, bool) or isinstance(after, bool):
        return before is after
    return before == after


def _path(at: tuple[str, ...]) -> str:
    # Keys are escaped as in a JSON Pointer, so a key holding "/" cannot be read as two.
    return "/".join(part.replace("~", "~0").replace("/", "~1") for part in at)

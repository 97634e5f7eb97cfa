"""The diff of two specs: every change, where it is, what it was and what it became."""

from __future__ import annotations

from psych_playground.catalog import canonical_data
from psych_playground.examples import SUPPORT
from psych_playground.spec_diff import diff_specs
from psych_runtime import CodeTool


def _changes(before: object, after: object) -> list[tuple[str, str, object, object]]:
    return [
        (change.path, change.op, change.before, change.after)
        for change in diff_specs(before, after)  # type: ignore[arg-type]
    ]


def test_equal_specs_have_no_changes() -> None:
    assert diff_specs(canonical_data(SUPPORT), canonical_data(SUPPORT)) == []


def test_a_renamed_tool_and_an_added_field_are_named_by_their_paths() -> None:
    edited = SUPPORT.model_copy(
        update={
            "tools": (CodeTool(name="lookup"), *SUPPORT.tools[1:]),
            "deadline": 60.0,
        }
    )
    assert _changes(canonical_data(SUPPORT), canonical_data(edited)) == [
        ("deadline", "added", None, 60),
        ("tools/0/name", "changed", "lookup_order", "lookup"),
        ("tools/0/safe_to_retry", "removed", True, None),
    ]


def test_lists_are_compared_item_by_item() -> None:
    assert _changes({"l": [1, 2]}, {"l": [1, 3, 4]}) == [
        ("l/1", "changed", 2, 3),
        ("l/2", "added", None, 4),
    ]
    assert _changes({"l": [1, 2, 3]}, {"l": [1]}) == [
        ("l/1", "removed", 2, None),
        ("l/2", "removed", 3, None),
    ]


def test_a_value_of_another_kind_is_changed_whole() -> None:
    assert _changes({"a": {"b": 1}}, {"a": [1]}) == [("a", "changed", {"b": 1}, [1])]
    assert _changes({"a": 1}, {"a": True}) == [("a", "changed", 1, True)]
    assert _changes({"a": 1}, {"a": 1.0}) == []


def test_keys_with_a_slash_cannot_be_read_as_two() -> None:
    assert _changes({"a/b": 1, "a~": 1}, {"a/b": 2, "a~": 2}) == [
        ("a~1b", "changed", 1, 2),
        ("a~0", "changed", 1, 2),
    ]

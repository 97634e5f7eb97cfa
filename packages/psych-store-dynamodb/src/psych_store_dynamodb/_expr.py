"""Update and condition expressions, with placeholders for every name and value.

Every attribute name goes through a placeholder (``#n0``), so no name ever collides with one of
DynamoDB's several hundred reserved words (``status`` is one).
"""

from __future__ import annotations

from typing import Any


class Expression:
    """The placeholders of one request, and the condition it writes under."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._placeholders: dict[str, str] = {}
        self._values: dict[str, Any] = {}
        self._conditions: list[str] = []

    def name(self, attribute: str) -> str:
        """The placeholder of an attribute name."""
        placeholder = self._placeholders.get(attribute)
        if placeholder is None:
            placeholder = f"#n{len(self._placeholders)}"
            self._placeholders[attribute] = placeholder
            self._names[placeholder] = attribute
        return placeholder

    def value(self, value: Any) -> str:
        """The placeholder of an attribute value (``{"S": ...}`` or ``{"N": ...}``)."""
        placeholder = f":v{len(self._values)}"
        self._values[placeholder] = value
        return placeholder

    # -- conditions -------------------------------------------------------------------------

    def require(self, condition: str) -> None:
        """Add a condition, written with `name` and `value` placeholders; all must hold."""
        self._conditions.append(condition)

    def equal(self, attribute: str, value: Any) -> None:
        """Require the attribute to have this value."""
        self.require(f"{self.name(attribute)} = {self.value(value)}")

    def exists(self, attribute: str) -> None:
        """Require the attribute to be present."""
        self.require(f"attribute_exists({self.name(attribute)})")

    def absent(self, attribute: str) -> None:
        """Require the attribute to be absent (for the key: the item does not exist)."""
        self.require(f"attribute_not_exists({self.name(attribute)})")

    def fields(self) -> dict[str, Any]:
        """The request fields: condition, names and values (only those in use)."""
        out: dict[str, Any] = {}
        if self._conditions:
            out["ConditionExpression"] = " AND ".join(f"({c})" for c in self._conditions)
        if self._names:
            out["ExpressionAttributeNames"] = dict(self._names)
        if self._values:
            out["ExpressionAttributeValues"] = dict(self._values)
        return out


class Update(Expression):
    """An update expression (SET and REMOVE), and its condition."""

    def __init__(self) -> None:
        super().__init__()
        self._sets: list[str] = []
        self._removes: list[str] = []

    def set(self, attribute: str, value: Any) -> None:
        """Set an attribute to a value."""
        self._sets.append(f"{self.name(attribute)} = {self.value(value)}")

    def set_expression(self, assignment: str) -> None:
        """Add a SET clause written with `name` and `value` placeholders (``#n0 = ...``)."""
        self._sets.append(assignment)

    def set_or_remove(self, attribute: str, value: Any | None) -> None:
        """Set the attribute, or remove it when `value` is None (sparse attributes)."""
        if value is None:
            self.remove(attribute)
        else:
            self.set(attribute, value)

    def remove(self, *attributes: str) -> None:
        """Remove attributes (no error when absent)."""
        self._removes.extend(self.name(attribute) for attribute in attributes)

    def fields(self) -> dict[str, Any]:
        """The request fields, the update expression among them."""
        clauses = []
        if self._sets:
            clauses.append("SET " + ", ".join(self._sets))
        if self._removes:
            clauses.append("REMOVE " + ", ".join(self._removes))
        return {"UpdateExpression": " ".join(clauses), **super().fields()}

"""A small, exact JSON Schema validator for tools' parameters and agents' structured output.

Http and sandbox tools declare their parameters as JSON Schema, and the model's arguments are
checked against it before the call is recorded as started; an agent's `output_type` is a JSON
Schema its final answer is checked against before the run completes. This module validates
the subset of JSON Schema (draft 2020-12 semantics) that these schemas use, and says which
keywords a schema uses outside it (`schema_problems`), so a constraint is never silently
ignored: a tool's schema with such a keyword is refused.

Assertions for tool parameters: ``type`` (a name or a list), ``enum``, ``const``,
``properties``, ``required``, ``additionalProperties`` (a boolean or a schema), ``items``,
``minItems``, ``maxItems``, ``minLength``, ``maxLength``, ``pattern`` (Python `re` syntax,
searched), ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``anyOf``,
``oneOf``, ``allOf``, and ``$ref`` to ``#/$defs/NAME`` (or ``#/definitions/NAME``), as pydantic
writes them. Output schemas may also use the rest of what pydantic writes for a model:
``prefixItems`` (tuples), ``uniqueItems`` (sets), ``multipleOf``, ``minProperties``,
``maxProperties``, ``patternProperties``, ``propertyNames``, ``not``, and ``discriminator`` (an
annotation: its ``oneOf`` does the checking).
Annotations, accepted and not checked: ``title``, ``description``, ``default``, ``examples``,
``format``, ``deprecated``, ``readOnly``, ``writeOnly``, ``$comment``, ``$schema``, ``$id``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from psych_core._json_equal import json_equal

ASSERTIONS = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
    }
)
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$schema",
        "$id",
    }
)
SUPPORTED_KEYWORDS = ASSERTIONS | ANNOTATIONS
"""Every keyword a tool's parameter schema may use."""

OUTPUT_KEYWORDS = SUPPORTED_KEYWORDS | {
    "prefixItems",
    "uniqueItems",
    "multipleOf",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "not",
    "discriminator",
}
"""Every keyword an `output_type` schema is checked with: all that pydantic writes for a model."""

_NOT_CHECKED = ANNOTATIONS | {"$defs", "definitions", "discriminator"}
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_REF = re.compile(r"^#/(\$defs|definitions)/([^/]+)$")


def schema_problems(schema: Any, *, keywords: frozenset[str] = SUPPORTED_KEYWORDS) -> list[str]:
    """What is wrong with `schema`; empty when `validation_errors` can check values against it.

    Args:
        schema: the schema, as parsed JSON.
        keywords: the keywords it may use: `SUPPORTED_KEYWORDS` (a tool's parameters, the
            default) or `OUTPUT_KEYWORDS` (an agent's `output_type`).
    """
    problems: list[str] = []
    if not isinstance(schema, Mapping):
        return [f"the schema must be a JSON object, not {type(schema).__name__}"]
    _Check(schema, keywords, problems).run(schema, "#")
    if not problems:
        problems.extend(_ref_cycles(schema))
    return problems


_IN_PLACE = ("allOf", "anyOf", "oneOf")


def _refs_in_place(schema: Any) -> list[str]:
    """The `$ref`s that `schema` applies to the same value, not to a part of it."""
    found: list[str] = []
    stack = [schema]
    while stack:
        current = stack.pop()
        if not isinstance(current, Mapping):
            continue
        if isinstance(current.get("$ref"), str):
            found.append(current["$ref"])
        for key in _IN_PLACE:
            stack.extend(current.get(key, []))
        if "not" in current:
            stack.append(current["not"])
    return found


def _ref_cycles(root: Mapping[str, Any]) -> list[str]:
    # A definition that reaches itself without descending into the value would never stop
    # validating: refuse it here rather than overflow the stack later.
    done: set[str] = set()

    def visit(ref: str, path: tuple[str, ...]) -> str | None:
        if ref in path:
            return " -> ".join((*path[path.index(ref) :], ref))
        if ref in done:
            return None
        for target in _refs_in_place(_resolve(root, ref)):
            cycle = visit(target, (*path, ref))
            if cycle is not None:
                return cycle
        done.add(ref)
        return None

    for start in _refs_in_place(root):
        cycle = visit(start, ())
        if cycle is not None:
            return [f"#: {cycle} refers to itself without descending into the value"]
    for key in ("$defs", "definitions"):
        for name in root.get(key, {}):
            cycle = visit(f"#/{key}/{name}", ())
            if cycle is not None:
                return [f"#: {cycle} refers to itself without descending into the value"]
    return []


class _Check:
    def __init__(
        self, root: Mapping[str, Any], keywords: frozenset[str], problems: list[str]
    ) -> None:
        self.root = root
        self.keywords = keywords
        self.problems = problems

    def run(self, schema: Any, where: str) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, Mapping):
            self.problems.append(f"{where}: a schema must be an object or a boolean")
            return
        unknown = sorted(set(schema) - self.keywords)
        if unknown:
            allowed = ", ".join(sorted(self.keywords - _NOT_CHECKED))
            what = "tool schemas" if self.keywords == SUPPORTED_KEYWORDS else "this schema"
            self.problems.append(
                f"{where}: unsupported keyword(s) {', '.join(unknown)} ({what} may use: {allowed})"
            )
        kind = schema.get("type")
        names = kind if isinstance(kind, list) else [kind] if kind is not None else []
        for name in names:
            if not isinstance(name, str) or name not in _TYPES:
                self.problems.append(f"{where}: unknown type {name!r}")
        for key in ("properties", "patternProperties", "$defs", "definitions"):
            children = schema.get(key, {})
            if not isinstance(children, Mapping):
                self.problems.append(f"{where}/{key}: must be an object")
                continue
            for name, child in children.items():
                if key == "patternProperties":
                    self._pattern(name, f"{where}/{key}/{name}")
                self.run(child, f"{where}/{key}/{name}")
        for key in ("items", "additionalProperties", "propertyNames", "not"):
            if key in schema:
                self.run(schema[key], f"{where}/{key}")
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if key in schema:
                options = schema[key]
                if not isinstance(options, list) or not options:
                    self.problems.append(f"{where}/{key}: must be a non-empty list of schemas")
                    continue
                for index, option in enumerate(options):
                    self.run(option, f"{where}/{key}/{index}")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            self.problems.append(f"{where}/required: must be a list of property names")
        if "enum" in schema and not isinstance(schema["enum"], list):
            self.problems.append(f"{where}/enum: must be a list of values")
        for key in _LIMITS:
            if key in schema and not _is_number(schema[key]):
                self.problems.append(f"{where}/{key}: must be a number")
        if "multipleOf" in schema and not (
            _is_number(schema["multipleOf"]) and schema["multipleOf"] > 0
        ):
            self.problems.append(f"{where}/multipleOf: must be a number above 0")
        if "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
            self.problems.append(f"{where}/uniqueItems: must be true or false")
        if "pattern" in schema:
            self._pattern(schema["pattern"], f"{where}/pattern")
        if "$ref" in schema and _resolve(self.root, schema["$ref"]) is None:
            self.problems.append(
                f"{where}/$ref: {schema['$ref']!r} does not name an entry of $defs"
            )

    def _pattern(self, pattern: Any, where: str) -> None:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            self.problems.append(f"{where}: not a valid regular expression ({exc})")


_LIMITS = (
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _resolve(root: Mapping[str, Any], ref: Any) -> Any:
    match = _REF.match(ref) if isinstance(ref, str) else None
    if match is None:
        return None
    defs = root.get(match.group(1), {})
    return defs.get(match.group(2)) if isinstance(defs, Mapping) else None


def validation_errors(
    schema: Mapping[str, Any],
    value: Any,
    *,
    root: str = "arguments",
    member: str = "parameter",
) -> list[str]:
    """Where `value` (parsed JSON) breaks `schema`, as ``"path: problem"``; empty when valid.

    `schema` must have passed `schema_problems` (with the keywords it may use).

    Args:
        schema: the schema.
        value: the parsed JSON value.
        root: what the path of the whole value is called in an error (``arguments``).
        member: what a key of an object is called (``parameter``, ``property``).
    """
    errors: list[str] = []
    _Validate(schema, root, member, errors).run(schema, value, "")
    return errors


def _is_type(value: Any, name: str) -> bool:
    match name:
        case "object":
            return isinstance(value, dict)
        case "array":
            return isinstance(value, list)
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "null":
            return value is None
        case "integer":
            if isinstance(value, bool):
                return False
            return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
    return False


class _Validate:
    def __init__(
        self, schema: Mapping[str, Any], root: str, member: str, errors: list[str]
    ) -> None:
        self.schema = schema
        self.root = root
        self.member = member
        self.errors = errors

    def where(self, path: str) -> str:
        return path or self.root

    def run(self, schema: Any, value: Any, path: str) -> None:
        where = self.where(path)
        if schema is True:
            return
        if schema is False:
            self.errors.append(f"{where}: no value is allowed here")
            return
        if "$ref" in schema:
            self.run(_resolve(self.schema, schema["$ref"]), value, path)
        kind = schema.get("type")
        if kind is not None:
            names = kind if isinstance(kind, list) else [kind]
            if not any(_is_type(value, name) for name in names):
                self.errors.append(
                    f"{where}: expected {' or '.join(names)}, got {_json_type(value)}"
                )
                return
        if "enum" in schema and not any(json_equal(value, option) for option in schema["enum"]):
            self.errors.append(f"{where}: must be one of {schema['enum']!r}")
        if "const" in schema and not json_equal(value, schema["const"]):
            self.errors.append(f"{where}: must be {schema['const']!r}")
        if isinstance(value, str):
            self.string(schema, value, where)
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.number(schema, value, where)
        if isinstance(value, list):
            self.array(schema, value, path)
        if isinstance(value, dict):
            self.object(schema, value, path)
        self.combinations(schema, value, path)

    def string(self, schema: Mapping[str, Any], value: str, where: str) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            self.errors.append(f"{where}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.errors.append(f"{where}: longer than {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            self.errors.append(f"{where}: does not match the pattern {schema['pattern']!r}")

    def number(self, schema: Mapping[str, Any], value: float, where: str) -> None:
        if "minimum" in schema and value < schema["minimum"]:
            self.errors.append(f"{where}: less than the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            self.errors.append(f"{where}: more than the maximum {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            self.errors.append(f"{where}: must be more than {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            self.errors.append(f"{where}: must be less than {schema['exclusiveMaximum']}")
        if "multipleOf" in schema and not _multiple(value, schema["multipleOf"]):
            self.errors.append(f"{where}: not a multiple of {schema['multipleOf']}")

    def array(self, schema: Mapping[str, Any], value: list[Any], path: str) -> None:
        where = self.where(path)
        if "minItems" in schema and len(value) < schema["minItems"]:
            self.errors.append(f"{where}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            self.errors.append(f"{where}: more than {schema['maxItems']} items")
        prefix: list[Any] = schema.get("prefixItems", [])
        for index, item in enumerate(value):
            # Draft 2020-12: `items` governs only the items after those `prefixItems` names.
            if index < len(prefix):
                self.run(prefix[index], item, _join(path, str(index)))
            elif "items" in schema:
                self.run(schema["items"], item, _join(path, str(index)))
        if schema.get("uniqueItems") is True:
            for index, item in enumerate(value):
                if any(json_equal(item, earlier) for earlier in value[:index]):
                    self.errors.append(f"{where}: item {index} repeats an earlier item")
                    break

    def object(self, schema: Mapping[str, Any], value: dict[str, Any], path: str) -> None:
        where = self.where(path)
        properties: Mapping[str, Any] = schema.get("properties", {})
        patterns: Mapping[str, Any] = schema.get("patternProperties", {})
        for name in schema.get("required", []):
            if name not in value:
                self.errors.append(f"{_join(path, name)}: required")
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            self.errors.append(f"{where}: fewer than {schema['minProperties']} properties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            self.errors.append(f"{where}: more than {schema['maxProperties']} properties")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            child = _join(path, name)
            if "propertyNames" in schema and _Validate.failures(
                self.schema, schema["propertyNames"], name
            ):
                self.errors.append(f"{child}: not an allowed {self.member} name")
            matched = [p for p in patterns if re.search(p, name) is not None]
            for pattern in matched:
                self.run(patterns[pattern], item, child)
            if name in properties:
                self.run(properties[name], item, child)
            elif matched:
                continue
            elif extra is False:
                known = ", ".join(properties) or "none"
                self.errors.append(f"{child}: not a known {self.member} (known: {known})")
            elif isinstance(extra, Mapping):
                self.run(extra, item, child)

    def combinations(self, schema: Mapping[str, Any], value: Any, path: str) -> None:
        where = self.where(path)
        for option in schema.get("allOf", []):
            self.run(option, value, path)
        if "anyOf" in schema and all(
            _Validate.failures(self.schema, option, value) for option in schema["anyOf"]
        ):
            self.errors.append(f"{where}: matches none of the allowed forms (anyOf)")
        if "oneOf" in schema:
            matching = sum(not _Validate.failures(self.schema, o, value) for o in schema["oneOf"])
            if matching != 1:
                self.errors.append(
                    f"{where}: must match exactly one allowed form (oneOf), not {matching}"
                )
        if "not" in schema and not _Validate.failures(self.schema, schema["not"], value):
            self.errors.append(f"{where}: matches a form that is not allowed (not)")

    @staticmethod
    def failures(root: Mapping[str, Any], schema: Any, value: Any) -> list[str]:
        errors: list[str] = []
        _Validate(root, "", "", errors).run(schema, value, "")
        return errors


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _multiple(value: float, step: float) -> bool:
    # Decimal arithmetic on the written forms: 0.3 is a multiple of 0.1, which floats deny.
    try:
        return Decimal(str(value)) % Decimal(str(step)) == 0
    except InvalidOperation:
        return False


def _json_type(value: Any) -> str:
    match value:
        case bool():
            return "boolean"
        case None:
            return "null"
        case int() | float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "object"
    return type(value).__name__

"""A small, exact JSON Schema validator for declared tools' parameters.

Http and sandbox tools declare their parameters as JSON Schema, and the model's arguments are
checked against it before the call is recorded as started. This module validates the subset
of JSON Schema (draft 2020-12 semantics) that tool parameters use, and refuses a schema that
uses any other keyword (`schema_problems`), so a constraint is never silently ignored.

Assertions: ``type`` (a name or a list), ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties`` (a boolean or a schema), ``items``, ``minItems``, ``maxItems``,
``minLength``, ``maxLength``, ``pattern`` (Python `re` syntax, searched), ``minimum``,
``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``anyOf``, ``oneOf``, ``allOf``, and
``$ref`` to ``#/$defs/NAME`` (or ``#/definitions/NAME``), as pydantic writes them.
Annotations, accepted and not checked: ``title``, ``description``, ``default``, ``examples``,
``format``, ``deprecated``, ``readOnly``, ``writeOnly``, ``$comment``, ``$schema``, ``$id``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_REF = re.compile(r"^#/(\$defs|definitions)/([^/]+)$")


def schema_problems(schema: Any) -> list[str]:
    """What is wrong with `schema` as a tool's parameter schema; empty when it is usable."""
    problems: list[str] = []
    if not isinstance(schema, Mapping):
        return [f"the schema must be a JSON object, not {type(schema).__name__}"]
    _check(schema, schema, "#", problems)
    return problems


def _check(schema: Any, root: Mapping[str, Any], where: str, problems: list[str]) -> None:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, Mapping):
        problems.append(f"{where}: a schema must be an object or a boolean")
        return
    unknown = sorted(set(schema) - SUPPORTED_KEYWORDS)
    if unknown:
        problems.append(
            f"{where}: unsupported keyword(s) {', '.join(unknown)} (tool schemas may use: "
            f"{', '.join(sorted(ASSERTIONS - {'$defs', 'definitions'}))})"
        )
    kind = schema.get("type")
    names = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for name in names:
        if name not in _TYPES:
            problems.append(f"{where}: unknown type {name!r}")
    for key in ("properties", "$defs", "definitions"):
        children = schema.get(key, {})
        if not isinstance(children, Mapping):
            problems.append(f"{where}/{key}: must be an object")
            continue
        for name, child in children.items():
            _check(child, root, f"{where}/{key}/{name}", problems)
    for key in ("items", "additionalProperties"):
        if key in schema:
            _check(schema[key], root, f"{where}/{key}", problems)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = schema[key]
            if not isinstance(options, list) or not options:
                problems.append(f"{where}/{key}: must be a non-empty list of schemas")
                continue
            for index, option in enumerate(options):
                _check(option, root, f"{where}/{key}/{index}", problems)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        problems.append(f"{where}/required: must be a list of property names")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except (re.error, TypeError) as exc:
            problems.append(f"{where}/pattern: not a valid regular expression ({exc})")
    if "$ref" in schema and _resolve(root, schema["$ref"]) is None:
        problems.append(f"{where}/$ref: {schema['$ref']!r} does not name an entry of $defs")


def _resolve(root: Mapping[str, Any], ref: Any) -> Any:
    match = _REF.match(ref) if isinstance(ref, str) else None
    if match is None:
        return None
    return root.get(match.group(1), {}).get(match.group(2))


def validation_errors(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Where `value` (parsed JSON) breaks `schema`, as ``"path: problem"``; empty when valid.

    `schema` must have passed `schema_problems`.
    """
    errors: list[str] = []
    _validate(schema, schema, value, "", errors)
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


def _same(a: Any, b: Any) -> bool:
    # JSON equality: 1 and 1.0 are equal, True and 1 are not.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _validate(
    schema: Any, root: Mapping[str, Any], value: Any, path: str, errors: list[str]
) -> None:
    where = path or "arguments"
    if schema is True:
        return
    if schema is False:
        errors.append(f"{where}: no value is allowed here")
        return
    if "$ref" in schema:
        _validate(_resolve(root, schema["$ref"]), root, value, path, errors)
    kind = schema.get("type")
    if kind is not None:
        names = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, name) for name in names):
            errors.append(f"{where}: expected {' or '.join(names)}, got {_json_type(value)}")
            return
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        errors.append(f"{where}: must be one of {schema['enum']!r}")
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"{where}: must be {schema['const']!r}")
    if isinstance(value, str):
        _string(schema, value, where, errors)
    if isinstance(value, int | float) and not isinstance(value, bool):
        _number(schema, value, where, errors)
    if isinstance(value, list):
        _array(schema, root, value, path, errors)
    if isinstance(value, dict):
        _object(schema, root, value, path, errors)
    _combinations(schema, root, value, path, errors)


def _string(schema: Mapping[str, Any], value: str, where: str, errors: list[str]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{where}: shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{where}: longer than {schema['maxLength']} characters")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        errors.append(f"{where}: does not match the pattern {schema['pattern']!r}")


def _number(schema: Mapping[str, Any], value: float, where: str, errors: list[str]) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{where}: less than the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{where}: more than the maximum {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        errors.append(f"{where}: must be more than {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        errors.append(f"{where}: must be less than {schema['exclusiveMaximum']}")


def _array(
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    value: list[Any],
    path: str,
    errors: list[str],
) -> None:
    where = path or "arguments"
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"{where}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{where}: more than {schema['maxItems']} items")
    if "items" in schema:
        for index, item in enumerate(value):
            _validate(
                schema["items"], root, item, f"{path}.{index}" if path else str(index), errors
            )


def _object(
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    value: dict[str, Any],
    path: str,
    errors: list[str],
) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            errors.append(f"{f'{path}.' if path else ''}{name}: required")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        child = f"{path}.{name}" if path else name
        if name in properties:
            _validate(properties[name], root, item, child, errors)
        elif extra is False:
            errors.append(f"{child}: not a known parameter (known: {', '.join(properties)})")
        elif isinstance(extra, Mapping):
            _validate(extra, root, item, child, errors)


def _combinations(
    schema: Mapping[str, Any], root: Mapping[str, Any], value: Any, path: str, errors: list[str]
) -> None:
    where = path or "arguments"
    for option in schema.get("allOf", []):
        _validate(option, root, value, path, errors)
    if "anyOf" in schema and not any(
        not _errors_at(option, root, value) for option in schema["anyOf"]
    ):
        errors.append(f"{where}: matches none of the allowed forms (anyOf)")
    if "oneOf" in schema:
        matching = sum(not _errors_at(o, root, value) for o in schema["oneOf"])
        if matching != 1:
            errors.append(f"{where}: must match exactly one allowed form (oneOf), not {matching}")


def _errors_at(schema: Any, root: Mapping[str, Any], value: Any) -> list[str]:
    errors: list[str] = []
    _validate(schema, root, value, "", errors)
    return errors


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

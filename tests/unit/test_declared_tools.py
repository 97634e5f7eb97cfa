"""Declared tools' parameter schemas and templates: what is accepted, what is refused, and how
arguments are checked and rendered."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from psych_core import UrlTemplate, placeholders, schema_problems, validation_errors
from psych_runtime import AgentSpec, HttpTool, ModelRef, SandboxTool, SubprocessSandbox
from psych_runtime.tools._http import HttpTools
from psych_runtime.tools._sandboxed import exec_request

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[A-Z]"},
        "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100},
        "price": {"type": "number", "exclusiveMinimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "kind": {"enum": ["a", "b"]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "ship": {"$ref": "#/$defs/Ship"},
    },
    "required": ["id"],
    "additionalProperties": False,
    "$defs": {
        "Ship": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    },
}


def test_a_valid_value_has_no_errors() -> None:
    value = {
        "id": "A12",
        "count": 3.0,
        "price": 9.5,
        "tags": ["x"],
        "kind": "a",
        "note": None,
        "ship": {"city": "Oslo"},
    }
    assert schema_problems(ORDER) == []
    assert validation_errors(ORDER, value) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({}, "id: required"),
        ({"id": "a1"}, "id: does not match the pattern '^[A-Z]'"),
        ({"id": "A"}, "id: shorter than 2 characters"),
        ({"id": "A123456789"}, "id: longer than 8 characters"),
        ({"id": "A1", "count": 0}, "count: less than the minimum 1"),
        ({"id": "A1", "count": 100}, "count: must be less than 100"),
        ({"id": "A1", "count": 1.5}, "count: expected integer, got number"),
        ({"id": "A1", "count": True}, "count: expected integer, got boolean"),
        ({"id": "A1", "price": 0}, "price: must be more than 0"),
        ({"id": "A1", "tags": ["a", "b", "c"]}, "tags: more than 2 items"),
        ({"id": "A1", "tags": ["a", 1]}, "tags.1: expected string, got number"),
        ({"id": "A1", "kind": "c"}, "kind: must be one of ['a', 'b']"),
        ({"id": "A1", "note": 3}, "note: matches none of the allowed forms (anyOf)"),
        ({"id": "A1", "ship": {}}, "ship.city: required"),
        ({"id": "A1", "colour": "red"}, "colour: not a known parameter"),
    ],
)
def test_each_broken_constraint_is_named(value: dict[str, Any], problem: str) -> None:
    errors = validation_errors(ORDER, value)
    assert any(error.startswith(problem) for error in errors), errors


def test_a_schema_with_keywords_the_validator_does_not_check_is_refused() -> None:
    problems = schema_problems({"type": "object", "properties": {"a": {"uniqueItems": True}}})
    assert problems and "unsupported keyword(s) uniqueItems" in problems[0]
    assert schema_problems({"type": "thing"}) == ["#: unknown type 'thing'"]
    assert "does not name an entry" in schema_problems({"$ref": "#/$defs/Nope"})[0]
    assert "not a valid regular expression" in schema_problems({"pattern": "("})[0]


def test_a_pydantic_models_schema_is_accepted() -> None:
    class Refund(pydantic.BaseModel):
        order_id: str
        amount: float = pydantic.Field(gt=0)
        reason: str | None = None

    schema = Refund.model_json_schema()
    assert schema_problems(schema) == []
    assert validation_errors(schema, {"order_id": "A1", "amount": 5}) == []
    assert validation_errors(schema, {"order_id": "A1", "amount": -5}) == [
        "amount: must be more than 0"
    ]


def test_placeholders_are_plain_names_and_braces_can_be_escaped() -> None:
    assert placeholders("{a}-{b}-{a} {{literal}}", "argv") == ("a", "b")
    for bad in ("{a.b}", "{a[0]}", "{a!r}", "{a:>4}", "{", "{}"):
        with pytest.raises(ValueError, match="argv"):
            placeholders(bad, "argv")


def test_a_url_template_keeps_placeholders_out_of_the_origin() -> None:
    url = UrlTemplate.parse("https://api.example.com:8443/v1/{shop}/orders?q={q}&page=2")
    assert url.origin == "https://api.example.com:8443"
    assert (url.host, url.path_names, url.query_names) == ("api.example.com", ("shop",), ("q",))
    assert UrlTemplate.parse("http://[::1]:8080/x").host == "::1"


def test_an_http_tool_fills_and_encodes_its_url_and_body() -> None:
    tool = HttpTool(
        name="refund",
        method="POST",
        url="https://pay.example.com/orders/{order_id}/refunds?notify={notify}",
        parameters={
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "notify": {"type": "boolean"},
                "amount": {"type": "number"},
            },
            "required": ["order_id", "amount"],
        },
    )
    call = HttpTools().bind(tool)
    arguments = call.validate('{"order_id": "A 1?2", "notify": true, "amount": 12.5}')
    assert call.target(arguments) == (
        "https://pay.example.com/orders/A%201%3F2/refunds?notify=true"
    )
    assert call.body(arguments) == {"amount": 12.5}
    without = call.validate('{"order_id": "B", "amount": 1}')
    assert call.target(without) == "https://pay.example.com/orders/B/refunds"


def test_a_sandbox_tool_renders_its_arguments_into_argv_and_stdin() -> None:
    tool = SandboxTool(
        name="grep",
        argv=("grep", "-c", "{pattern}"),
        stdin="{text}\n{{not a placeholder}}",
        parameters={
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "text": {"type": "object"}},
            "required": ["pattern", "text"],
        },
        require_level="limited",
        timeout=5,
        memory_bytes=None,
    )
    request = exec_request(tool, {"pattern": "a b", "text": {"k": "v"}})
    assert request.argv == ("grep", "-c", "a b")
    assert request.stdin == b'{"k":"v"}\n{not a placeholder}'
    assert (request.limits.wall_seconds, request.limits.memory_bytes) == (5, None)
    assert request.require_level == "limited"
    SubprocessSandbox().check(request)


def test_sandbox_tool_declarations_are_checked_when_made() -> None:
    with pytest.raises(pydantic.ValidationError, match="must be a relative path"):
        SandboxTool(name="t", argv=("sh",), files={"../escape.sh": ""})
    with pytest.raises(pydantic.ValidationError, match="not parameters"):
        SandboxTool(name="t", argv=("echo", "{x}"), parameters={"type": "object"})
    with pytest.raises(pydantic.ValidationError, match="must be required parameters"):
        SandboxTool(
            name="t",
            argv=("echo", "{x}"),
            parameters={"type": "object", "properties": {"x": {"type": "string"}}},
        )
    with pytest.raises(pydantic.ValidationError):
        SandboxTool(name="t", argv=())


def test_declared_tools_hash_into_the_spec_version() -> None:
    http = HttpTool(name="get", url="https://api.example.com/{id}")
    spec = AgentSpec(name="a", model=ModelRef(model="m"), tools=(http,))
    moved = http.model_copy(update={"url": "https://api.example.com/v2/{id}"})
    assert spec.version != spec.model_copy(update={"tools": (moved,)}).version
    again = AgentSpec.model_validate_json(spec.model_dump_json())
    assert again == spec and again.version == spec.version

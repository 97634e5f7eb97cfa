"""Version hashing: canonical, stable across processes, sensitive to every field."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from psych_runtime import AgentSpec, ArgRule, CodeTool, ModelRef, Skill
from psych_runtime.errors import SpecError

names = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=12)
tool_names = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)
json_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)

tools = st.builds(
    CodeTool,
    name=tool_names,
    safe_to_retry=st.booleans(),
    requires_approval=st.booleans()
    | st.builds(ArgRule, path=names, op=st.just("gt"), value=st.integers()),
    timeout=st.none() | st.floats(0.5, 100, allow_nan=False),
    description=st.none() | st.text(max_size=20),
)
specs = st.builds(
    AgentSpec,
    name=names,
    instructions=st.text(max_size=40),
    model=st.builds(
        ModelRef,
        model=names,
        fallbacks=st.lists(names, max_size=2).map(tuple),
        temperature=st.none() | st.floats(0, 2, allow_nan=False),
        max_output_tokens=st.none() | st.integers(1, 10_000),
    ),
    tools=st.lists(tools, max_size=3, unique_by=lambda t: t.name).map(tuple),
    skills=st.lists(
        st.builds(Skill, name=names, instructions=st.text(max_size=10)), max_size=2
    ).map(tuple),
    output_type=st.none() | st.dictionaries(names, json_scalars, max_size=3),
    max_turns=st.integers(1, 50),
)


def _shuffled(value: Any, seed: int) -> Any:
    """The same JSON data with every object's keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        items = items[seed % max(len(items), 1) :] + items[: seed % max(len(items), 1)]
        return {key: _shuffled(item, seed + 1) for key, item in reversed(items)}
    if isinstance(value, list):
        return [_shuffled(item, seed) for item in value]
    return value


@settings(max_examples=200)
@given(specs, st.integers(0, 50))
def test_field_order_does_not_change_the_version(spec: AgentSpec, seed: int) -> None:
    data = json.loads(spec.model_dump_json())
    again = AgentSpec.model_validate(_shuffled(data, seed))
    assert again.version == spec.version
    assert AgentSpec.model_validate_json(spec.canonical_json()).version == spec.version


@settings(max_examples=200)
@given(specs, st.data())
def test_any_change_changes_the_version(spec: AgentSpec, data: st.DataObject) -> None:
    field = data.draw(st.sampled_from(["name", "instructions", "model", "max_turns", "tools"]))
    if field == "name":
        changed = spec.model_copy(update={"name": spec.name + "x"})
    elif field == "instructions":
        changed = spec.model_copy(update={"instructions": spec.instructions + "."})
    elif field == "model":
        changed = spec.model_copy(
            update={"model": spec.model.model_copy(update={"model": spec.model.model + "2"})}
        )
    elif field == "max_turns":
        changed = spec.model_copy(update={"max_turns": spec.max_turns + 1})
    else:
        changed = spec.model_copy(update={"tools": (*spec.tools, CodeTool(name="added_tool_zz"))})
    changed = AgentSpec.model_validate(changed.model_dump())
    assert changed.version != spec.version


def test_a_changed_tool_flag_changes_the_version() -> None:
    base = AgentSpec(name="a", model=ModelRef(model="m"), tools=(CodeTool(name="t"),))
    for tool in (
        CodeTool(name="t", safe_to_retry=True),
        CodeTool(name="t", requires_approval=True),
        CodeTool(name="t", requires_approval=ArgRule("amount", "gt", 100)),
        CodeTool(name="t", timeout=5),
    ):
        assert base.model_copy(update={"tools": (tool,)}).version != base.version


def test_fields_equal_to_their_default_are_left_out() -> None:
    spec = AgentSpec(name="a", model=ModelRef(model="m"))
    explicit = AgentSpec(name="a", model=ModelRef(model="m", fallbacks=()), max_turns=10, tools=())
    assert spec.canonical_json() == '{"model":{"model":"m"},"name":"a"}'
    assert explicit.version == spec.version
    assert spec.version.startswith("sha256:") and len(spec.version) == 71


def test_integral_floats_hash_like_integers() -> None:
    a = AgentSpec(name="a", model=ModelRef(model="m", temperature=1.0))
    b = AgentSpec(name="a", model=ModelRef(model="m", temperature=1))
    assert a.version == b.version


def test_a_pydantic_output_type_is_stored_as_its_schema() -> None:
    class Answer(BaseModel):
        city: str

    spec = AgentSpec(name="a", model=ModelRef(model="m"), output_type=Answer)
    assert spec.output_type is not None
    assert spec.output_type["properties"] == {"city": {"title": "City", "type": "string"}}


def support_spec() -> AgentSpec:
    """A spec with a bit of everything: non-ASCII text, a float, fallbacks, a tool, a schema."""
    return AgentSpec(
        name="support",
        instructions="Help. ünïcödé ✓",
        model=ModelRef(model="m", temperature=0.7, fallbacks=("n",)),
        tools=(CodeTool(name="lookup", safe_to_retry=True, timeout=2.5),),
        output_type={
            "type": "object",
            "properties": {"b": {"type": "string"}, "a": {"type": "integer"}},
        },
    )


_VERSION_IN_CHILD = """
import json, sys
from psych_runtime import AgentSpec
print(AgentSpec.model_validate_json(sys.stdin.read()).version)
"""


@pytest.mark.parametrize("hashseed", ["0", "12345"])
def test_the_version_is_equal_in_another_process(hashseed: str) -> None:
    spec = support_spec()
    child = subprocess.run(
        [sys.executable, "-c", _VERSION_IN_CHILD],
        input=spec.model_dump_json(),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": hashseed, "PATH": ""},
        timeout=60,
    )
    assert child.stdout.strip() == spec.version


def test_invalid_specs_say_what_is_wrong() -> None:
    with pytest.raises(ValidationError, match="tool name 'bad name'"):
        CodeTool(name="bad name")
    with pytest.raises(ValidationError, match="names tool 't' twice"):
        AgentSpec(
            name="a", model=ModelRef(model="m"), tools=(CodeTool(name="t"), CodeTool(name="t"))
        )
    with pytest.raises(ValidationError):
        AgentSpec(name="a", model=ModelRef(model="m"), max_turns=0)
    assert issubclass(SpecError, ValueError)


@pytest.mark.parametrize(
    ("rule", "arguments", "expected"),
    [
        (ArgRule("amount", "gt", 100), {"amount": 150}, True),
        (ArgRule("amount", "gt", 100), {"amount": 100}, False),
        (ArgRule("amount", "gt", 100), {"amount": "lots"}, False),
        (ArgRule("amount", "gt", 100), {}, False),
        (ArgRule("refund.currency", "in", ["EUR", "USD"]), {"refund": {"currency": "EUR"}}, True),
        (ArgRule("items.1", "eq", "b"), {"items": ["a", "b"]}, True),
        (ArgRule("note", "exists"), {"note": None}, True),
        (ArgRule("note", "exists", False), {}, True),
    ],
)
def test_arg_rules_match_call_arguments(rule: ArgRule, arguments: Any, expected: bool) -> None:
    assert rule.matches(arguments) is expected

"""Reading a spec to publish: each problem's `loc` is a path into the JSON as it was sent, so an
editor can point at the line; nothing the playground's worker cannot run gets through."""

from __future__ import annotations

import math

import pytest

from psych_playground.catalog import canonical_data
from psych_playground.examples import ORDER_CHECK, SUPPORT
from psych_playground.spec_check import SpecRejected, read_spec


def _problems(kind: str, data: object) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(SpecRejected) as rejected:
        read_spec(kind, data)  # type: ignore[arg-type]
    return [(problem.loc, problem.type) for problem in rejected.value.problems]


def _agent(**fields: object) -> dict[str, object]:
    return {"name": "a", "model": {"model": "m"}, **fields}


def test_the_examples_read_back_as_themselves() -> None:
    assert read_spec("agent", canonical_data(SUPPORT)) == SUPPORT
    assert read_spec("workflow", canonical_data(ORDER_CHECK)) == ORDER_CHECK


def test_a_union_members_tag_is_left_out_of_the_path() -> None:
    # pydantic says ("tools", 0, "code", "name"): "code" names the CodeTool it tried.
    assert _problems("agent", _agent(tools=[{"kind": "code", "name": ""}])) == [
        (("tools", 0, "name"), "value_error")
    ]
    assert _problems("agent", _agent(tools=[{"kind": "code"}])) == [
        (("tools", 0, "name"), "missing")
    ]
    assert _problems("agent", _agent(tools=[{"kind": "nope", "name": "x"}])) == [
        (("tools", 0), "union_tag_invalid")
    ]


def test_missing_and_extra_fields_and_whole_spec_problems() -> None:
    assert _problems("agent", {"name": "a", "model": {}}) == [(("model", "model"), "missing")]
    assert _problems("agent", _agent(colour="red")) == [(("colour",), "extra_forbidden")]
    twice = [{"kind": "code", "name": "refund"}] * 2
    assert _problems("agent", _agent(tools=twice)) == [((), "value_error")]
    assert _problems("agent", ["not", "an", "object"]) == [((), "dict_type")]
    assert _problems("workflow", {"kind": "workflow", "name": "w"}) == [(("steps",), "missing")]


def test_a_value_with_no_json_form_is_refused() -> None:
    assert _problems("agent", _agent(instructions="x", max_turns=math.nan)) == [
        (("max_turns",), "finite_number")
    ]
    assert _problems("agent", _agent(output_type={"x": math.inf})) == [((), "value_error")]


def test_tools_the_worker_cannot_run_are_refused_where_they_are() -> None:
    assert _problems("agent", _agent(tools=[{"kind": "code", "name": "send_mail"}])) == [
        (("tools", 0, "name"), "unserved_tool")
    ]
    sandboxed = {"kind": "sandbox", "name": "sh", "argv": ["sh"]}
    assert _problems("agent", _agent(tools=[sandboxed])) == [(("tools", 0), "unserved_tool")]
    nested = {
        "kind": "agent",
        "name": "helper",
        "spec": _agent(tools=[{"kind": "mcp", "name": "gh"}]),
    }
    assert _problems("agent", _agent(tools=[nested])) == [
        (("tools", 0, "spec", "tools", 0), "unserved_tool")
    ]
    step = {"kind": "tool", "name": "s", "tool": {"kind": "code", "name": "charge"}}
    flow = {"kind": "workflow", "name": "w", "steps": [step]}
    assert _problems("workflow", flow) == [(("steps", 0, "tool", "name"), "unserved_tool")]

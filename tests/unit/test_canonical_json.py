"""A spec's canonical JSON is what its definition says, and the versions of specs written
before stay what they were: `canonical_json` makes each subtree canonical once (it used to
again at every level that compared a field with its default), and a spec's text is
remembered for that very object, as its version is."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from psych_core import (
    AgentSpec,
    AgentStep,
    BranchStep,
    Case,
    CodeTool,
    Compare,
    ForeachStep,
    HumanStep,
    Lit,
    LoopStep,
    MapStep,
    ModelRef,
    ParallelStep,
    Ref,
    Retry,
    SetStateStep,
    SleepStep,
    ToolStep,
    Truthy,
    WaitStep,
    WorkflowSpec,
    canonical_json,
)
from tests.unit._workflow_strategies import workflows
from tests.unit.test_spec_version import specs, support_spec

# -- the definition, written plainly (and slowly): fields equal to their default are left out,
# -- compared as canonical JSON text, so () and [] or 1 and 1.0 are equal, True and 1 are not.


def _defined(value: Any) -> str:
    return json.dumps(
        _value(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        out: dict[str, Any] = {}
        for name, field in type(value).model_fields.items():
            item = getattr(value, name)
            if name != "kind":
                if field.default is not PydanticUndefined and _same(item, field.default):
                    continue
                if field.default_factory is not None and _same(item, field.default_factory()):  # type: ignore[call-arg]
                    continue
            out[field.alias or name] = _value(item)
        return out
    if isinstance(value, float):
        assert math.isfinite(value)
        return int(value) if value.is_integer() else value
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, Mapping):
        return {key: _value(item) for key, item in value.items()}
    assert isinstance(value, list | tuple)
    return [_value(item) for item in value]


def _same(value: Any, default: Any) -> bool:
    try:
        return _defined(value) == _defined(default)
    except (TypeError, ValueError, AssertionError):
        return False


PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTIES
@given(specs)
def test_an_agent_spec_is_written_as_defined(spec: AgentSpec) -> None:
    assert canonical_json(spec) == _defined(spec)
    assert spec.canonical_json() == _defined(spec)


@PROPERTIES
@given(workflows())
def test_a_workflow_spec_is_written_as_defined(spec: WorkflowSpec) -> None:
    assert canonical_json(spec) == _defined(spec)
    assert spec.canonical_json() == _defined(spec)


# -- versions written before this way of computing them, pinned.


_M = ModelRef(model="m")


def _workflow() -> WorkflowSpec:
    lookup = CodeTool(name="lookup", safe_to_retry=True)
    big = Compare(left=Ref("steps.fetch.output.total"), op="gt", right=Lit(100))
    return WorkflowSpec(
        name="orders",
        steps=(
            ToolStep(
                name="fetch",
                tool=lookup,
                arguments={"id": Ref("input.id"), "n": Lit(1.0), "flag": Lit(True)},
                retry=Retry(attempts=3, backoff=0),
            ),
            BranchStep(
                name="route",
                cases=(
                    Case(
                        when=big,
                        steps=(
                            HumanStep(
                                name="ask", question="ok?", answer_schema={"type": "boolean"}
                            ),
                        ),
                    ),
                ),
                otherwise=(SetStateStep(name="note", values={"small": Lit(True)}),),
            ),
            ForeachStep(
                name="each",
                items=Ref("steps.fetch.output.items"),
                steps=(ToolStep(name="charge", tool=lookup, arguments={"item": Ref("item")}),),
            ),
            LoopStep(
                name="poll",
                max_iterations=5,
                steps=(SleepStep(name="nap", seconds=1),),
                until=Truthy(value=Ref("iteration")),
            ),
            ParallelStep(
                name="both",
                branches={
                    "pay": (WaitStep(name="paid", event="paid"),),
                    "map": (MapStep(name="shape", output=Ref("input.id")),),
                },
            ),
            AgentStep(
                name="help",
                agent=AgentSpec(name="helper", model=ModelRef(model="m")),
                input=Lit("hi"),
            ),
        ),
    )


def test_versions_written_before_stay_the_same() -> None:
    agent, workflow = support_spec(), _workflow()
    assert (
        agent.version == "sha256:9fd329846958b4dbc66f9e58276a4e4157323aa1f78133f3f6ad7561e0f9e2fd"
    )
    assert workflow.version == (
        "sha256:5738e362264ecceb549d43be0cff16f3299d99972fefd2ec92cfe840b1a39645"
    )
    assert '"retry":{"backoff":0}' in workflow.canonical_json()
    assert '"value":1}' in workflow.canonical_json()  # Lit(1.0), written as 1


def test_the_text_is_remembered_for_the_object_and_made_anew_for_a_copy() -> None:
    spec = _workflow()
    assert spec.canonical_json() is spec.canonical_json()
    renamed = spec.model_copy(update={"name": "renamed"})
    assert '"name":"renamed"' in renamed.canonical_json()
    assert renamed.version != spec.version
    assert renamed.version == WorkflowSpec.model_validate_json(renamed.model_dump_json()).version

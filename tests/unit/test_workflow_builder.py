"""The workflow builder gives exactly the spec of the dict and JSON forms, with the same version,
for every step kind and option; specs hold names, and the functions are in `Workflow.tools`."""

from __future__ import annotations

import datetime as dt
import json
import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from psych_runtime import (
    AgentSpec,
    ArgRule,
    CodeFunction,
    CodeTool,
    HttpTool,
    ModelRef,
    Runtime,
    SandboxTool,
    WorkflowSpec,
    session,
)
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import ToolRegistry
from psych_runtime.workflows import (
    Case,
    CompareOp,
    LeafHandle,
    Lit,
    MapStep,
    Retry,
    Step,
    StepHandle,
    Steps,
    Workflow,
    all_of,
    any_of,
    contains,
    eq,
    exists,
    gt,
    gte,
    in_,
    lit,
    lt,
    lte,
    ne,
    not_,
    ref,
    truthy,
)

STEP_CLASSES: tuple[type[BaseModel], ...] = typing.get_args(typing.get_args(Step)[0])


def R(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


def L(value: Any) -> dict[str, Any]:
    return {"kind": "lit", "value": value}


def code(name: str, **flags: Any) -> dict[str, Any]:
    return {"kind": "code", "name": name, **flags}


def create_user(email: str, limit: int = 10) -> dict[str, Any]:
    """Create a user."""
    return {"id": "u1", "email": email, "orders": [], "limit": limit}


def charge(order: dict[str, Any]) -> str:
    """Charge an order."""
    return "charged"


def notify(to: str, text: str = "") -> None:
    """Tell someone."""


class Answer(BaseModel):
    approved: bool
    note: str = ""


AGENT = AgentSpec(
    name="drafter",
    instructions="Draft a welcome mail.",
    model=ModelRef(model="m"),
    tools=(CodeTool(name="lookup"),),
)
HTTP = HttpTool(name="crm", method="POST", url="https://crm.example/users/{id}", safe_to_retry=True)
SANDBOX = SandboxTool(name="report", argv=("python", "report.py", "{month}"), timeout=60)


def _forms(flow: Workflow, data: dict[str, Any]) -> WorkflowSpec:
    """The builder's spec, checked equal to the dict form's and the JSON form's."""
    built = flow.build()
    from_dict = WorkflowSpec.model_validate(data)
    from_json = WorkflowSpec.model_validate_json(json.dumps(data))
    assert built == from_dict == from_json
    assert built.canonical_json() == from_dict.canonical_json() == from_json.canonical_json()
    assert built.version == from_dict.version == from_json.version
    return built


# -- one case per step kind and option: (the builder form, the dict form) ------------------------


def tool_with_a_function() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("onboard")
    flow.tool(
        "create",
        create_user,
        email=ref("input.email"),
        limit=10,
        ratio=0.5,
        active=True,
        note=None,
        label="new",
        meta={"source": ref("input.source"), "tags": ["a", ref("input.tag")], "n": 2},
        raw=lit({"kept": ["as", "is"]}),
        pair=("x", 1),
    )
    return flow, {
        "name": "onboard",
        "steps": [
            {
                "kind": "tool",
                "name": "create",
                "tool": code("create_user"),
                "arguments": {
                    "email": R("input.email"),
                    "limit": L(10),
                    "ratio": L(0.5),
                    "active": L(True),
                    "note": L(None),
                    "label": L("new"),
                    "meta": {
                        "kind": "obj",
                        "fields": {
                            "source": R("input.source"),
                            "tags": {"kind": "arr", "items": [L("a"), R("input.tag")]},
                            "n": L(2),
                        },
                    },
                    "raw": L({"kept": ["as", "is"]}),
                    "pair": {"kind": "arr", "items": [L("x"), L(1)]},
                },
            }
        ],
    }


def tool_options_of_a_function() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("w")
    flow.tool("charge", charge, order=ref("input.order")).tool_options(
        safe_to_retry=True,
        requires_approval=ArgRule("order.cents", "gt", 10_000),
        timeout=5,
        description="Charge the order once.",
    )
    flow.tool("notify", notify, to="ops").tool_options(requires_approval="big_refund")
    # A tool is one declaration: the flags hold for every step that calls the function.
    flow.tool("charge_again", charge, order=ref("input.order")).tool_options(safe_to_retry=True)
    tool = code(
        "charge",
        safe_to_retry=True,
        requires_approval={"path": "order.cents", "op": "gt", "value": 10_000},
        timeout=5.0,
        description="Charge the order once.",
    )
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "tool",
                "name": "charge",
                "tool": tool,
                "arguments": {"order": R("input.order")},
            },
            {
                "kind": "tool",
                "name": "notify",
                "tool": code("notify", requires_approval="big_refund"),
                "arguments": {"to": L("ops")},
            },
            {
                "kind": "tool",
                "name": "charge_again",
                "tool": tool,
                "arguments": {"order": R("input.order")},
            },
        ],
    }


def tool_given_as_a_code_function() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("w")
    flow.tool("mail", CodeFunction.of(notify, name="send_mail"), to=ref("input.email"))
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "tool",
                "name": "mail",
                "tool": code("send_mail"),
                "arguments": {"to": R("input.email")},
            }
        ],
    }


def tools_given_as_declarations() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("w")
    flow.tool("lookup", CodeTool(name="lookup", safe_to_retry=True), id=ref("input.id"))
    flow.tool("crm", HTTP, id=ref("input.id"))
    flow.tool("report", SANDBOX, month="2026-01")
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "tool",
                "name": "lookup",
                "tool": code("lookup", safe_to_retry=True),
                "arguments": {"id": R("input.id")},
            },
            {
                "kind": "tool",
                "name": "crm",
                "tool": {
                    "kind": "http",
                    "name": "crm",
                    "method": "POST",
                    "url": "https://crm.example/users/{id}",
                    "safe_to_retry": True,
                },
                "arguments": {"id": R("input.id")},
            },
            {
                "kind": "tool",
                "name": "report",
                "tool": {
                    "kind": "sandbox",
                    "name": "report",
                    "argv": ["python", "report.py", "{month}"],
                    "timeout": 60,
                },
                "arguments": {"month": L("2026-01")},
            },
        ],
    }


def every_common_option() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("w")
    (
        flow.tool("create", create_user, email=ref("input.email"))
        .when(exists("input.email"))
        .retry(attempts=5, backoff=0.5, multiplier=3, cap=60, on=("error", "outcome_unknown"))
        .timeout(30)
        .on_failure("continue")
        .output_schema({"type": "object", "required": ["id"]})
    )
    flow.map("shape", ref("steps.create.output.id")).retry().on_failure("fail").output_schema(
        Answer
    )
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "tool",
                "name": "create",
                "tool": code("create_user"),
                "arguments": {"email": R("input.email")},
                "when": {"kind": "exists", "ref": R("input.email")},
                "retry": {
                    "attempts": 5,
                    "backoff": 0.5,
                    "multiplier": 3,
                    "cap": 60,
                    "on": ["error", "outcome_unknown"],
                },
                "timeout": 30,
                "on_failure": "continue",
                "output_schema": {"type": "object", "required": ["id"]},
            },
            {
                "kind": "map",
                "name": "shape",
                "output": R("steps.create.output.id"),
                "retry": {},
                "output_schema": Answer.model_json_schema(),
            },
        ],
    }


def agent_and_workflow_steps() -> tuple[Workflow, dict[str, Any]]:
    child = Workflow("child", max_steps=5)
    child.tool("mail", notify, to=ref("input.to"))
    child_spec = WorkflowSpec.model_validate(
        {"name": "fixed", "steps": [{"kind": "map", "name": "m", "output": L(1)}]}
    )
    flow = Workflow("w")
    flow.agent("draft", AGENT, {"user": ref("input.email"), "tone": "warm"})
    flow.workflow("welcome", child, input={"to": ref("input.email")})
    flow.workflow("fixed", child_spec)
    flow.workflow("fixed_null", child_spec, input=None)
    child_dict = {
        "name": "child",
        "max_steps": 5,
        "steps": [
            {
                "kind": "tool",
                "name": "mail",
                "tool": code("notify"),
                "arguments": {"to": R("input.to")},
            }
        ],
    }
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "agent",
                "name": "draft",
                "agent": json.loads(AGENT.model_dump_json()),
                "input": {"kind": "obj", "fields": {"user": R("input.email"), "tone": L("warm")}},
            },
            {
                "kind": "workflow",
                "name": "welcome",
                "workflow": {"kind": "workflow", **child_dict},
                "input": {"kind": "obj", "fields": {"to": R("input.email")}},
            },
            {"kind": "workflow", "name": "fixed", "workflow": child_spec.model_dump()},
            {"kind": "workflow", "name": "fixed_null", "workflow": child_spec.model_dump()},
        ],
    }


def parallel_in_both_styles() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("w")
    with flow.parallel("checks") as p:
        p.branch("credit").tool("score", create_user, email=ref("input.email"))
        with p.branch("fraud") as fraud:
            fraud.map("signals", ref("input.ip"))
            fraud.map("verdict", ref("steps.signals.output"))
    flow.parallel(
        "notify_all",
        branches={
            "ops": lambda b: b.tool("ops", notify, to="ops"),
            "user": lambda b: b.sleep("pause", 1),
        },
    ).timeout(10)
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "parallel",
                "name": "checks",
                "branches": {
                    "credit": [
                        {
                            "kind": "tool",
                            "name": "score",
                            "tool": code("create_user"),
                            "arguments": {"email": R("input.email")},
                        }
                    ],
                    "fraud": [
                        {"kind": "map", "name": "signals", "output": R("input.ip")},
                        {"kind": "map", "name": "verdict", "output": R("steps.signals.output")},
                    ],
                },
            },
            {
                "kind": "parallel",
                "name": "notify_all",
                "timeout": 10,
                "branches": {
                    "ops": [
                        {
                            "kind": "tool",
                            "name": "ops",
                            "tool": code("notify"),
                            "arguments": {"to": L("ops")},
                        }
                    ],
                    "user": [{"kind": "sleep", "name": "pause", "seconds": 1}],
                },
            },
        ],
    }


def branch_in_both_styles() -> tuple[Workflow, dict[str, Any]]:
    big = gt(ref("input.cents"), 10_000)
    flow = Workflow("w")
    with flow.branch("route") as b:
        b.case(big).human("approve", "Approve this charge?", answer_schema=Answer)
        b.case(eq(ref("input.cents"), 0))  # nothing to do: stops a first-mode branch here
        b.otherwise().tool("auto", charge, order=ref("input"))
    flow.branch(
        "fan_out",
        mode="all",
        cases=[(truthy(ref("input.mail")), lambda s: s.tool("mail", notify, to="a"))],
        otherwise=lambda s: s.map("none", None),
    )
    big_dict = {"kind": "compare", "left": R("input.cents"), "op": "gt", "right": L(10_000)}
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "branch",
                "name": "route",
                "cases": [
                    {
                        "when": big_dict,
                        "steps": [
                            {
                                "kind": "human",
                                "name": "approve",
                                "question": "Approve this charge?",
                                "answer_schema": Answer.model_json_schema(),
                            }
                        ],
                    },
                    {
                        "when": {
                            "kind": "compare",
                            "left": R("input.cents"),
                            "op": "eq",
                            "right": L(0),
                        },
                        "steps": [],
                    },
                ],
                "otherwise": [
                    {
                        "kind": "tool",
                        "name": "auto",
                        "tool": code("charge"),
                        "arguments": {"order": R("input")},
                    }
                ],
            },
            {
                "kind": "branch",
                "name": "fan_out",
                "mode": "all",
                "cases": [
                    {
                        "when": {"kind": "truthy", "value": R("input.mail")},
                        "steps": [
                            {
                                "kind": "tool",
                                "name": "mail",
                                "tool": code("notify"),
                                "arguments": {"to": L("a")},
                            }
                        ],
                    }
                ],
                "otherwise": [{"kind": "map", "name": "none", "output": L(None)}],
            },
        ],
    }


def foreach_and_loop() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("w")
    with flow.foreach("orders", ref("input.orders"), concurrency=2).timeout(600) as body:
        body.tool("charge", charge, order=ref("item"), position=ref("index")).retry(attempts=2)
        body.map("receipt", {"order": ref("item.id"), "result": ref("steps.charge.output")})
    flow.foreach("again", [1, 2, ref("input.n")], steps=lambda b: b.map("double", ref("item")))
    flow.loop(
        "poll",
        until=eq(ref("steps.check.output.status"), "done"),
        repeat_while=lt(ref("iteration"), 50),
        max_iterations=20,
        exhausted="stop",
        steps=lambda b: (b.sleep("wait_a_bit", 5), b.tool("check", create_user, email="x")),
    )
    with flow.loop("plain") as body:
        body.map("tick", ref("iteration"))
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "foreach",
                "name": "orders",
                "items": R("input.orders"),
                "concurrency": 2,
                "timeout": 600,
                "steps": [
                    {
                        "kind": "tool",
                        "name": "charge",
                        "tool": code("charge"),
                        "arguments": {"order": R("item"), "position": R("index")},
                        "retry": {"attempts": 2},
                    },
                    {
                        "kind": "map",
                        "name": "receipt",
                        "output": {
                            "kind": "obj",
                            "fields": {"order": R("item.id"), "result": R("steps.charge.output")},
                        },
                    },
                ],
            },
            {
                "kind": "foreach",
                "name": "again",
                "items": {"kind": "arr", "items": [L(1), L(2), R("input.n")]},
                "steps": [{"kind": "map", "name": "double", "output": R("item")}],
            },
            {
                "kind": "loop",
                "name": "poll",
                "until": {
                    "kind": "compare",
                    "left": R("steps.check.output.status"),
                    "op": "eq",
                    "right": L("done"),
                },
                "repeat_while": {
                    "kind": "compare",
                    "left": R("iteration"),
                    "op": "lt",
                    "right": L(50),
                },
                "max_iterations": 20,
                "exhausted": "stop",
                "steps": [
                    {"kind": "sleep", "name": "wait_a_bit", "seconds": 5},
                    {
                        "kind": "tool",
                        "name": "check",
                        "tool": code("create_user"),
                        "arguments": {"email": L("x")},
                    },
                ],
            },
            {
                "kind": "loop",
                "name": "plain",
                "steps": [{"kind": "map", "name": "tick", "output": R("iteration")}],
            },
        ],
    }


def data_and_waiting_steps() -> tuple[Workflow, dict[str, Any]]:
    at = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    flow = Workflow("w")
    flow.set_state("counters", seen=0, last=ref("input.id"))
    flow.map("summary", [ref("state.seen"), {"id": ref("state.last")}])
    flow.sleep("nap", 0.25)
    flow.sleep("until_text", until="2026-03-01T09:30:00+02:00")
    flow.sleep("until_time", until=at)
    flow.sleep("until_ref", until=ref("input.deadline"))
    flow.wait("paid", "payment.received", payload_schema={"type": "object"}).timeout(3600)
    flow.wait("any_event", "ping")
    flow.human("ok", "Is this fine?")
    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "set_state",
                "name": "counters",
                "values": {"seen": L(0), "last": R("input.id")},
            },
            {
                "kind": "map",
                "name": "summary",
                "output": {
                    "kind": "arr",
                    "items": [R("state.seen"), {"kind": "obj", "fields": {"id": R("state.last")}}],
                },
            },
            {"kind": "sleep", "name": "nap", "seconds": 0.25},
            {"kind": "sleep", "name": "until_text", "until": L("2026-03-01T09:30:00+02:00")},
            {"kind": "sleep", "name": "until_time", "until": L("2026-03-01T09:30:00+02:00")},
            {"kind": "sleep", "name": "until_ref", "until": R("input.deadline")},
            {
                "kind": "wait",
                "name": "paid",
                "event": "payment.received",
                "payload_schema": {"type": "object"},
                "timeout": 3600,
            },
            {"kind": "wait", "name": "any_event", "event": "ping"},
            {"kind": "human", "name": "ok", "question": "Is this fine?"},
        ],
    }


def workflow_fields() -> tuple[Workflow, dict[str, Any]]:
    flow = Workflow("signup", input_schema=Answer, max_steps=50)
    flow.map("echo", ref("input"))
    flow.output({"approved": ref("steps.echo.output.approved"), "by": "signup"})
    return flow, {
        "kind": "workflow",
        "name": "signup",
        "input_schema": Answer.model_json_schema(),
        "max_steps": 50,
        "steps": [{"kind": "map", "name": "echo", "output": R("input")}],
        "output": {
            "kind": "obj",
            "fields": {"approved": R("steps.echo.output.approved"), "by": L("signup")},
        },
    }


def every_condition() -> tuple[Workflow, dict[str, Any]]:
    x = ref("input.x")
    helpers = [eq(x, 1), ne(x, "a"), gt(x, 1.5), gte(x, 2), lt(x, 3), lte(x, 4)]
    helpers += [in_(x, [1, 2]), contains(ref("input.tags"), "vip")]
    flow = Workflow("w")
    flow.map("check", True).when(
        all_of(
            *helpers,
            any_of(exists("input.y"), exists(ref("input.z")), truthy(ref("input.flag"))),
            not_(any_of()),
            all_of(),
        )
    )

    def compare(op: str, right: Any) -> dict[str, Any]:
        return {"kind": "compare", "left": R("input.x"), "op": op, "right": right}

    return flow, {
        "name": "w",
        "steps": [
            {
                "kind": "map",
                "name": "check",
                "output": L(True),
                "when": {
                    "kind": "all_of",
                    "conditions": [
                        compare("eq", L(1)),
                        compare("ne", L("a")),
                        compare("gt", L(1.5)),
                        compare("gte", L(2)),
                        compare("lt", L(3)),
                        compare("lte", L(4)),
                        compare("in", {"kind": "arr", "items": [L(1), L(2)]}),
                        {
                            "kind": "compare",
                            "left": R("input.tags"),
                            "op": "contains",
                            "right": L("vip"),
                        },
                        {
                            "kind": "any_of",
                            "conditions": [
                                {"kind": "exists", "ref": R("input.y")},
                                {"kind": "exists", "ref": R("input.z")},
                                {"kind": "truthy", "value": R("input.flag")},
                            ],
                        },
                        {"kind": "not", "condition": {"kind": "any_of", "conditions": []}},
                        {"kind": "all_of", "conditions": []},
                    ],
                },
            }
        ],
    }


CASES: list[Callable[[], tuple[Workflow, dict[str, Any]]]] = [
    tool_with_a_function,
    tool_options_of_a_function,
    tool_given_as_a_code_function,
    tools_given_as_declarations,
    every_common_option,
    agent_and_workflow_steps,
    parallel_in_both_styles,
    branch_in_both_styles,
    foreach_and_loop,
    data_and_waiting_steps,
    workflow_fields,
    every_condition,
]


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_the_builder_and_the_dict_form_give_the_same_spec_and_version(
    case: Callable[[], tuple[Workflow, dict[str, Any]]],
) -> None:
    flow, data = case()
    spec = _forms(flow, data)
    assert flow.build() == spec, "building again gives the same spec"


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in canonical JSON data, depth first."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def test_the_cases_set_every_field_of_every_step_kind() -> None:
    # A field the spec gains (the engine's, or a later one) fails here until the builder sets it
    # and a case above shows it equal to its dict form.
    set_fields: dict[str, set[str]] = {}
    ops: set[str] = set()
    for case in CASES:
        spec = case()[0].build()
        data = json.loads(spec.canonical_json())
        set_fields.setdefault("WorkflowSpec", set()).update(data)
        for obj in _objects(data):
            kind = obj.get("kind")
            if kind == "compare":
                ops.add(obj["op"])
            for cls in STEP_CLASSES:
                if kind == cls.model_fields["kind"].default and "name" in obj:
                    set_fields.setdefault(cls.__name__, set()).update(obj)
                    if isinstance(obj.get("retry"), dict):
                        set_fields.setdefault("Retry", set()).update(obj["retry"])
                    for case_data in obj.get("cases", ()) if kind == "branch" else ():
                        set_fields.setdefault("Case", set()).update(case_data)
    classes: tuple[type[BaseModel], ...] = (WorkflowSpec, Retry, Case, *STEP_CLASSES)
    unset = [
        f"{cls.__name__}.{field}"
        for cls in classes
        for field in cls.model_fields
        if field not in set_fields.get(cls.__name__, set())
        and not (cls in STEP_CLASSES and field in COMMON)  # every kind's: the test below
    ]
    assert unset == []
    assert ops == set(typing.get_args(CompareOp))


# -- every option on every step kind -------------------------------------------------------------

COMMON = set.intersection(*(set(cls.model_fields) for cls in STEP_CLASSES)) - {"kind", "name"}
"""The fields every step kind has: its guard, retry, timeout, on_failure and output schema."""


def _one_map(name: str) -> Workflow:
    flow = Workflow(name)
    flow.map("m", 1)
    return flow


ONE_STEP: dict[str, tuple[Callable[[Steps], StepHandle], dict[str, Any]]] = {
    "tool": (
        lambda s: s.tool("it", charge, order={}),
        {"tool": code("charge"), "arguments": {"order": {"kind": "obj", "fields": {}}}},
    ),
    "agent": (
        lambda s: s.agent("it", AGENT, "hi"),
        {"agent": json.loads(AGENT.model_dump_json()), "input": L("hi")},
    ),
    "workflow": (
        lambda s: s.workflow("it", _one_map("child")),
        {"workflow": {"name": "child", "steps": [{"kind": "map", "name": "m", "output": L(1)}]}},
    ),
    "parallel": (
        lambda s: s.parallel("it", branches={"a": lambda b: b.map("m", 1)}),
        {"branches": {"a": [{"kind": "map", "name": "m", "output": L(1)}]}},
    ),
    "branch": (
        lambda s: s.branch("it", cases=[(truthy(1), lambda b: b.map("m", 1))]),
        {
            "cases": [
                {
                    "when": {"kind": "truthy", "value": L(1)},
                    "steps": [{"kind": "map", "name": "m", "output": L(1)}],
                }
            ]
        },
    ),
    "foreach": (
        lambda s: s.foreach("it", [1], steps=lambda b: b.map("m", ref("item"))),
        {
            "items": {"kind": "arr", "items": [L(1)]},
            "steps": [{"kind": "map", "name": "m", "output": R("item")}],
        },
    ),
    "loop": (
        lambda s: s.loop("it", steps=lambda b: b.map("m", 1)),
        {"steps": [{"kind": "map", "name": "m", "output": L(1)}]},
    ),
    "map": (lambda s: s.map("it", 1), {"output": L(1)}),
    "set_state": (lambda s: s.set_state("it", n=1), {"values": {"n": L(1)}}),
    "sleep": (lambda s: s.sleep("it", 2), {"seconds": 2}),
    "wait": (lambda s: s.wait("it", "ping"), {"event": "ping"}),
    "human": (lambda s: s.human("it", "Why?"), {"question": "Why?"}),
}


def test_every_step_kind_has_a_case_here() -> None:
    assert set(ONE_STEP) == {cls.model_fields["kind"].default for cls in STEP_CLASSES}


@pytest.mark.parametrize("kind", sorted(ONE_STEP))
def test_every_option_on_every_step_kind_gives_the_dict_form(kind: str) -> None:
    add, fields = ONE_STEP[kind]
    flow = Workflow("w")
    handle = add(flow)
    handle.when(exists("input.go")).timeout(9).on_failure("continue").output_schema(
        {"type": "object"}
    )
    options: dict[str, Any] = {
        "when": {"kind": "exists", "ref": R("input.go")},
        "timeout": 9,
        "on_failure": "continue",
        "output_schema": {"type": "object"},
    }
    if isinstance(handle, LeafHandle):
        handle.retry(attempts=4, on=["error"])
        options["retry"] = {"attempts": 4, "on": ["error"]}
    else:
        # A container takes no retry (retry the steps inside): the builder has no method for it.
        assert not hasattr(handle, "retry")
    assert set(options) | {"retry"} >= COMMON, "a new common option: set it here"
    step = {"kind": kind, "name": "it", **fields, **options}
    _forms(flow, {"name": "w", "steps": [step]})


# -- specs hold names, never callables -----------------------------------------------------------


def _python_values(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _python_values(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _python_values(item)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _python_values(item)


def test_the_spec_holds_tool_names_and_the_builder_holds_the_functions() -> None:
    mail = CodeFunction.of(notify, name="send_mail")
    child = Workflow("child")
    child.tool("child_mail", mail, to="x")
    child.tool("child_charge", charge, order={})
    flow = Workflow("w")
    flow.tool("create", create_user, email=ref("input.email"))
    flow.tool("again", create_user, email="b")
    flow.tool("lookup", CodeTool(name="lookup"))
    with flow.foreach("orders", ref("steps.create.output.orders")) as body:
        body.tool("charge", charge, order=ref("item"))
    flow.workflow("welcome", child)
    spec = flow.build()

    assert not [v for v in _python_values(spec) if callable(v) and not isinstance(v, type)]
    text = spec.canonical_json()
    assert "<function" not in text and "0x" not in text
    assert flow.tools == (create_user, charge, mail), "once each, as given, in order"
    assert child.tools == (mail, charge)
    # What the worker needs: every code tool the spec names has its function.
    named = {v.name for v in _python_values(spec) if isinstance(v, CodeTool) and v.name != "lookup"}
    assert named == set(ToolRegistry(flow.tools).names)
    assert Runtime(model=FakeModel(), tools=flow.tools).tools == flow.tools


def test_a_code_function_and_its_plain_function_count_as_one() -> None:
    flow = Workflow("w")
    flow.tool("a", charge, order={})
    flow.tool("b", CodeFunction.of(charge), order={})
    assert flow.tools == (charge,)
    first, second = flow.build().steps
    assert first.tool == second.tool == CodeTool(name="charge")  # type: ignore[union-attr]


def test_a_body_is_a_sequence_of_steps_and_building_does_not_consume_the_builder() -> None:
    flow = Workflow("w")
    with flow.foreach("each", [1]) as body:
        assert isinstance(body, Steps) and not isinstance(body, Workflow)
        body.map("m", ref("item"))
    first = flow.build()
    handle = flow.parallel("p").branch("a").map("pm", 1)
    assert handle.name == "pm"
    second = flow.build()
    assert [s.name for s in first.steps] == ["each"]
    assert [s.name for s in second.steps] == ["each", "p"]
    assert second.step("pm") == MapStep(name="pm", output=Lit(1))


async def test_a_built_workflow_runs_with_the_functions_the_builder_was_handed() -> None:
    calls: list[tuple[str, Any]] = []

    def create(email: str) -> dict[str, Any]:
        calls.append(("create", email))
        return {"id": "u1", "orders": [{"cents": 5}, {"cents": 0}, {"cents": 7}]}

    async def bill(order: dict[str, Any]) -> str:
        calls.append(("bill", order["cents"]))
        return f"billed {order['cents']}"

    flow = Workflow("onboard")
    flow.tool("create", create, email=ref("input.email")).tool_options(safe_to_retry=True)
    with flow.foreach("orders", ref("steps.create.output.orders"), concurrency=2) as body:
        body.tool("bill", bill, order=ref("item")).when(gt(ref("item.cents"), 0))
    flow.output({"user": ref("steps.create.output.id"), "billed": ref("steps.orders.output")})

    async with session(FakeModel(), tools=flow.tools) as s:
        view = await s.ask(flow.build(), json.dumps({"email": "a@example.com"}))
    assert view.status == "completed"
    assert view.output == {"user": "u1", "billed": ["billed 5", None, "billed 7"]}
    assert calls == [("create", "a@example.com"), ("bill", 5), ("bill", 7)]

"""Random workflow trees built both ways (the builder, the dict form) give equal specs and
versions, and a builder's version is the same in another process."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from psych_runtime import AgentSpec, CodeTool, HttpTool, ModelRef, WorkflowSpec
from psych_runtime.workflows import (
    CompareOp,
    FailureKind,
    LeafHandle,
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


def lookup(key: str) -> str:
    """Look something up."""
    return key


def send(to: str, body: Any = None) -> None:
    """Send something."""


TOOLS: dict[str, tuple[Any, dict[str, Any]]] = {
    "lookup": (lookup, {"kind": "code", "name": "lookup"}),
    "send": (send, {"kind": "code", "name": "send"}),
    "declared": (
        CodeTool(name="declared", safe_to_retry=True),
        {"kind": "code", "name": "declared", "safe_to_retry": True},
    ),
    "http": (
        HttpTool(name="crm", url="https://crm.example/{id}"),
        {"kind": "http", "name": "crm", "url": "https://crm.example/{id}"},
    ),
}
AGENT = AgentSpec(name="helper", model=ModelRef(model="m"))
NESTED = WorkflowSpec.model_validate(
    {
        "name": "nested",
        "steps": [{"kind": "map", "name": "m", "output": {"kind": "ref", "path": "input"}}],
    }
)
BUILDERS = {
    "eq": eq,
    "ne": ne,
    "gt": gt,
    "gte": gte,
    "lt": lt,
    "lte": lte,
    "in": in_,
    "contains": contains,
}

# -- descriptions of trees, read by both interpreters ------------------------------------------

keys = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=6)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
json_data = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=5,
)
ref_paths = st.sampled_from(["input", "input.email", "input.order.cents", "input.items.0"])
values = st.recursive(
    json_scalars.map(lambda v: ("scalar", v))
    | ref_paths.map(lambda p: ("ref", p))
    | json_data.map(lambda v: ("lit", v)),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda xs: ("list", xs))
        | st.lists(inner, max_size=3).map(lambda xs: ("tuple", xs))
        | st.dictionaries(keys, inner, max_size=3).map(lambda d: ("dict", d))
    ),
    max_leaves=6,
)
conditions = st.recursive(
    st.tuples(st.just("cmp"), st.sampled_from(sorted(BUILDERS)), values, values)
    | st.tuples(st.just("exists"), ref_paths, st.booleans())
    | st.tuples(st.just("truthy"), values),
    lambda inner: (
        st.tuples(st.sampled_from(["all", "any"]), st.lists(inner, max_size=3))
        | st.tuples(st.just("not"), inner)
    ),
    max_leaves=4,
)
failure_kinds = st.sampled_from(typing.get_args(FailureKind))
retries = st.fixed_dictionaries(
    {},
    optional={
        "attempts": st.integers(1, 5),
        "backoff": st.floats(0, 60, allow_nan=False),
        "multiplier": st.floats(1, 4, allow_nan=False),
        "cap": st.floats(0, 600, allow_nan=False),
        "on": st.lists(failure_kinds, max_size=3, unique=True),
    },
)
common = {
    "when": conditions,
    "timeout": st.floats(0.01, 1000, allow_nan=False),
    "on_failure": st.sampled_from(["fail", "continue"]),
    "output_schema": st.sampled_from([{"type": "object"}, {"type": "array", "items": {}}]),
}
leaf_options = st.fixed_dictionaries({}, optional={**common, "retry": retries})
container_options = st.fixed_dictionaries({}, optional=common)
schemas = st.none() | st.just({"type": "object", "properties": {"ok": {"type": "boolean"}}})

LEAF_KINDS = ("tool", "map", "set_state", "sleep", "wait", "human", "agent", "workflow")
leaves = st.one_of(
    st.tuples(
        st.just("tool"),
        leaf_options,
        st.sampled_from(sorted(TOOLS)),
        st.dictionaries(keys, values, max_size=3),
    ),
    st.tuples(st.just("map"), leaf_options, values),
    st.tuples(st.just("set_state"), leaf_options, st.dictionaries(keys, values, max_size=3)),
    st.tuples(
        st.just("sleep"),
        leaf_options,
        st.floats(0, 1e5, allow_nan=False)
        | ref_paths.map(lambda p: ("ref", p))
        | st.text(max_size=25).map(lambda t: ("scalar", t)),  # None: neither seconds nor until
    ),
    st.tuples(st.just("wait"), leaf_options, st.text(min_size=1, max_size=8), schemas),
    st.tuples(st.just("human"), leaf_options, st.text(min_size=1, max_size=8), schemas),
    st.tuples(st.just("agent"), leaf_options, values),
    st.tuples(st.just("workflow"), leaf_options, st.none() | values),
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    body = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        st.tuples(
            st.just("parallel"),
            container_options,
            st.booleans(),
            st.dictionaries(keys, body, min_size=1, max_size=3),
        ),
        st.tuples(
            st.just("branch"),
            container_options,
            st.booleans(),
            st.none() | st.sampled_from(["first", "all"]),
            st.lists(st.tuples(conditions, st.lists(inner, max_size=2)), min_size=1, max_size=3),
            st.none() | body,
        ),
        st.tuples(
            st.just("foreach"),
            container_options,
            st.booleans(),
            values,
            st.none() | st.integers(1, 8),
            body,
        ),
        st.tuples(
            st.just("loop"),
            container_options,
            st.booleans(),
            st.fixed_dictionaries(
                {},
                optional={
                    "until": conditions,
                    "repeat_while": conditions,
                    "max_iterations": st.integers(1, 500),
                    "exhausted": st.sampled_from(["fail", "stop"]),
                },
            ),
            body,
        ),
    )


trees = st.recursive(leaves, _containers, max_leaves=10)
workflows = st.tuples(
    st.fixed_dictionaries(
        {},
        optional={
            "input_schema": st.just({"type": "object"}),
            "max_steps": st.integers(1, 10_000),
            "output": values,
        },
    ),
    st.lists(trees, min_size=1, max_size=4),
)

# -- the builder form --------------------------------------------------------------------------


def py_value(value: Any) -> Any:
    match value:
        case ("scalar", v):
            return v
        case ("lit", v):
            return lit(v)
        case ("ref", path):
            return ref(path)
        case ("list", items):
            return [py_value(item) for item in items]
        case ("tuple", items):
            return tuple(py_value(item) for item in items)
        case ("dict", fields):
            return {key: py_value(item) for key, item in fields.items()}
    raise AssertionError(value)


def py_condition(condition: Any) -> Any:
    match condition:
        case ("cmp", op, left, right):
            return BUILDERS[op](py_value(left), py_value(right))
        case ("exists", path, as_text):
            return exists(path if as_text else ref(path))
        case ("truthy", value):
            return truthy(py_value(value))
        case ("all", inner):
            return all_of(*(py_condition(c) for c in inner))
        case ("any", inner):
            return any_of(*(py_condition(c) for c in inner))
        case ("not", inner):
            return not_(py_condition(inner))
    raise AssertionError(condition)


def with_options(handle: StepHandle, options: dict[str, Any]) -> None:
    if "when" in options:
        handle.when(py_condition(options["when"]))
    if "timeout" in options:
        handle.timeout(options["timeout"])
    if "on_failure" in options:
        handle.on_failure(options["on_failure"])
    if "output_schema" in options:
        handle.output_schema(options["output_schema"])
    if "retry" in options:
        assert isinstance(handle, LeafHandle)
        handle.retry(**options["retry"])


def add_all(steps: Steps, nodes: list[Any], names: Iterator[int]) -> None:
    for node in nodes:
        add(steps, node, names)


def _filler(nodes: list[Any], names: Iterator[int]) -> Callable[[Steps], None]:
    """A body callback (``steps=...``) that adds `nodes`."""
    return lambda steps: add_all(steps, nodes, names)


def add(steps: Steps, node: Any, names: Iterator[int]) -> None:
    name = f"s{next(names)}"
    handle: StepHandle
    match node:
        case ("tool", options, tool, arguments):
            args = {key: py_value(value) for key, value in arguments.items()}
            handle = steps.tool(name, TOOLS[tool][0], **args)
        case ("map", options, value):
            handle = steps.map(name, py_value(value))
        case ("set_state", options, given):
            handle = steps.set_state(name, **{key: py_value(v) for key, v in given.items()})
        case ("sleep", options, float() as seconds):
            handle = steps.sleep(name, seconds)
        case ("sleep", options, until):
            handle = steps.sleep(name, until=py_value(until))
        case ("wait", options, event, schema):
            handle = steps.wait(name, event, payload_schema=schema)
        case ("human", options, question, schema):
            handle = steps.human(name, question, answer_schema=schema)
        case ("agent", options, value):
            handle = steps.agent(name, AGENT, py_value(value))
        case ("workflow", options, None):
            handle = steps.workflow(name, NESTED)
        case ("workflow", options, value):
            handle = steps.workflow(name, NESTED, input=py_value(value))
        case ("parallel", options, True, branches):
            with steps.parallel(name) as p:
                for branch, inner in branches.items():
                    add_all(p.branch(branch), inner, names)
            handle = p
        case ("parallel", options, False, branches):
            handle = steps.parallel(
                name,
                branches={branch: _filler(inner, names) for branch, inner in branches.items()},
            )
        case ("branch", options, True, mode, cases, otherwise):
            with steps.branch(name, mode=mode) as b:
                for when, inner in cases:
                    add_all(b.case(py_condition(when)), inner, names)
                if otherwise is not None:
                    add_all(b.otherwise(), otherwise, names)
            handle = b
        case ("branch", options, False, mode, cases, otherwise):
            handle = steps.branch(
                name,
                mode=mode,
                cases=[(py_condition(when), _filler(inner, names)) for when, inner in cases],
                otherwise=None if otherwise is None else _filler(otherwise, names),
            )
        case ("foreach", options, style, items, concurrency, inner):
            if style:
                foreach = steps.foreach(name, py_value(items), concurrency=concurrency)
                with foreach as body:
                    add_all(body, inner, names)
                handle = foreach
            else:
                handle = steps.foreach(
                    name,
                    py_value(items),
                    concurrency=concurrency,
                    steps=_filler(inner, names),
                )
        case ("loop", options, style, given, inner):
            loop_options = {
                key: py_condition(v) if key in ("until", "repeat_while") else v
                for key, v in given.items()
            }
            if style:
                loop = steps.loop(name, **loop_options)
                with loop as body:
                    add_all(body, inner, names)
                handle = loop
            else:
                handle = steps.loop(name, **loop_options, steps=_filler(inner, names))
        case _:
            raise AssertionError(node)
    with_options(handle, options)


def builder_form(description: Any) -> Workflow:
    top, nodes = description
    flow = Workflow("random", input_schema=top.get("input_schema"), max_steps=top.get("max_steps"))
    add_all(flow, nodes, itertools.count())
    if "output" in top:
        flow.output(py_value(top["output"]))
    return flow


# -- the dict form -----------------------------------------------------------------------------


def dict_value(value: Any) -> dict[str, Any]:
    match value:
        case ("scalar", v) | ("lit", v):
            return {"kind": "lit", "value": v}
        case ("ref", path):
            return {"kind": "ref", "path": path}
        case ("list", items) | ("tuple", items):
            return {"kind": "arr", "items": [dict_value(item) for item in items]}
        case ("dict", fields):
            return {"kind": "obj", "fields": {k: dict_value(v) for k, v in fields.items()}}
    raise AssertionError(value)


def dict_condition(condition: Any) -> dict[str, Any]:
    match condition:
        case ("cmp", op, left, right):
            return {
                "kind": "compare",
                "left": dict_value(left),
                "op": op,
                "right": dict_value(right),
            }
        case ("exists", path, _):
            return {"kind": "exists", "ref": {"kind": "ref", "path": path}}
        case ("truthy", value):
            return {"kind": "truthy", "value": dict_value(value)}
        case ("all", inner):
            return {"kind": "all_of", "conditions": [dict_condition(c) for c in inner]}
        case ("any", inner):
            return {"kind": "any_of", "conditions": [dict_condition(c) for c in inner]}
        case ("not", inner):
            return {"kind": "not", "condition": dict_condition(inner)}
    raise AssertionError(condition)


def dict_options(options: dict[str, Any]) -> dict[str, Any]:
    out = dict(options)
    if "when" in out:
        out["when"] = dict_condition(out["when"])
    return out


def dict_steps(nodes: list[Any], names: Iterator[int]) -> list[dict[str, Any]]:
    return [dict_step(node, names) for node in nodes]


def dict_step(node: Any, names: Iterator[int]) -> dict[str, Any]:
    step: dict[str, Any] = {"kind": node[0], "name": f"s{next(names)}"}
    match node:
        case ("tool", _, tool, arguments):
            step["tool"] = TOOLS[tool][1]
            step["arguments"] = {key: dict_value(value) for key, value in arguments.items()}
        case ("map", _, value):
            step["output"] = dict_value(value)
        case ("set_state", _, given):
            step["values"] = {key: dict_value(value) for key, value in given.items()}
        case ("sleep", _, float() as seconds):
            step["seconds"] = seconds
        case ("sleep", _, until):
            step["until"] = dict_value(until)
        case ("wait", _, event, schema):
            step["event"] = event
            if schema is not None:
                step["payload_schema"] = schema
        case ("human", _, question, schema):
            step["question"] = question
            if schema is not None:
                step["answer_schema"] = schema
        case ("agent", _, value):
            step["agent"] = json.loads(AGENT.model_dump_json())
            step["input"] = dict_value(value)
        case ("workflow", _, value):
            step["workflow"] = json.loads(NESTED.model_dump_json())
            if value is not None:
                step["input"] = dict_value(value)
        case ("parallel", _, _, branches):
            step["branches"] = {b: dict_steps(inner, names) for b, inner in branches.items()}
        case ("branch", _, _, mode, cases, otherwise):
            if mode is not None:
                step["mode"] = mode
            step["cases"] = [
                {"when": dict_condition(when), "steps": dict_steps(inner, names)}
                for when, inner in cases
            ]
            if otherwise is not None:
                step["otherwise"] = dict_steps(otherwise, names)
        case ("foreach", _, _, items, concurrency, inner):
            step["items"] = dict_value(items)
            if concurrency is not None:
                step["concurrency"] = concurrency
            step["steps"] = dict_steps(inner, names)
        case ("loop", _, _, given, inner):
            for key, value in given.items():
                step[key] = dict_condition(value) if key in ("until", "repeat_while") else value
            step["steps"] = dict_steps(inner, names)
        case _:
            raise AssertionError(node)
    step.update(dict_options(node[1]))
    return step


def dict_form(description: Any) -> dict[str, Any]:
    top, nodes = description
    data: dict[str, Any] = {"name": "random", "steps": dict_steps(nodes, itertools.count())}
    for key in ("input_schema", "max_steps"):
        if key in top:
            data[key] = top[key]
    if "output" in top:
        data["output"] = dict_value(top["output"])
    return data


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows)
def test_random_trees_built_both_ways_are_the_same_spec(description: Any) -> None:
    built = builder_form(description).build()
    data = dict_form(description)
    from_dict = WorkflowSpec.model_validate(data)
    from_json = WorkflowSpec.model_validate_json(json.dumps(_reversed_keys(data)))
    assert built == from_dict == from_json
    assert built.version == from_dict.version == from_json.version
    assert WorkflowSpec.model_validate_json(built.canonical_json()).version == built.version


def test_the_trees_can_hold_every_step_kind_and_compare_op() -> None:
    # The property says less about a kind or op the descriptions cannot reach.
    kinds = {cls.model_fields["kind"].default for cls in typing.get_args(typing.get_args(Step)[0])}
    assert kinds == {*LEAF_KINDS, "parallel", "branch", "foreach", "loop"}
    assert set(BUILDERS) == set(typing.get_args(CompareOp))


# -- the version in another process ------------------------------------------------------------

FLOW = """
from psych_runtime.workflows import Workflow, all_of, eq, exists, gt, ref, truthy

def create_user(email: str) -> dict: ...
def charge(order: dict, attempt: int = 0) -> str: ...

def build():
    flow = Workflow("onboard ✓", input_schema={"type": "object", "properties": {"b": {}, "a": {}}})
    flow.tool("create", create_user, email=ref("input.email")).retry(attempts=3, backoff=0.5)
    with flow.foreach("orders", ref("steps.create.output.orders"), concurrency=2) as body:
        body.tool("charge", charge, order=ref("item"), meta={"z": 1, "a": [1.0, 2.5, "é"]}).when(
            all_of(gt(ref("item.cents"), 0), exists("item.id"))
        ).tool_options(safe_to_retry=True, timeout=2.5)
    with flow.branch("route") as b:
        b.case(truthy(ref("input.vip"))).human("ask", "Approve? ünïcödé")
        b.otherwise().wait("paid", "payment.received").timeout(3600)
    flow.set_state("seen", count=ref("steps.orders.output"), tags={"y": True, "x": None})
    flow.output({"orders": ref("steps.orders.output"), "n": ref("state.count")})
    return flow.build()
"""

_IN_CHILD = (
    FLOW
    + """
import sys
from psych_runtime.workflows import Workflow
from psych_core import WorkflowSpec
print(build().version)
print(WorkflowSpec.model_validate_json(sys.stdin.read()).version)
"""
)


@pytest.mark.parametrize("hashseed", ["0", "12345"])
def test_a_builders_version_is_the_same_in_another_process(hashseed: str) -> None:
    namespace: dict[str, Any] = {}
    exec(FLOW, namespace)
    spec: WorkflowSpec = namespace["build"]()
    child = subprocess.run(
        [sys.executable, "-c", _IN_CHILD],
        input=spec.model_dump_json(),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": hashseed, "PATH": ""},
        timeout=60,
    )
    assert child.stdout.split() == [spec.version, spec.version]

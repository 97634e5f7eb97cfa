"""The workflow builder's errors: each names the workflow and the step, and says what to do;
what the builder can tell before a run (a name used twice, a reference that can never resolve,
an empty container) it refuses at once."""

from __future__ import annotations

import datetime as dt
import types
from collections.abc import Callable
from typing import Any

import pytest

from psych_core import walk
from psych_runtime import AgentSpec, AgentTool, CodeTool, HttpTool, ModelRef
from psych_runtime.errors import SpecError
from psych_runtime.workflows import Workflow, all_of, eq, exists, lit, ref, truthy


def charge(order: dict[str, Any]) -> str:
    """Charge an order."""
    return "charged"


def _refused(build: Callable[[Workflow], object], match: str) -> None:
    """`build` on a new workflow, then building it, is refused (by either) with `match`."""

    def add_then_build() -> None:
        flow = Workflow("shop")
        build(flow)
        flow.build()

    with pytest.raises(SpecError, match=match):
        add_then_build()


# -- names ---------------------------------------------------------------------------------------


def test_a_name_used_twice_is_refused_where_it_is_added_naming_both_places() -> None:
    flow = Workflow("shop")
    flow.map("total", 1)
    body = flow.foreach("orders", [1]).body
    with pytest.raises(SpecError) as raised:
        body.map("total", 2)
    assert str(raised.value) == (
        "workflow 'shop': step name 'total' is used twice, by a map step in the workflow's "
        "steps and by a map step in the body of foreach step 'orders'; a name is its step's "
        "key in the log, so each must be unique in the whole workflow: rename one"
    )
    body.map("per_order", ref("item"))
    assert [step.name for step in walk(flow.build().steps)] == ["total", "orders", "per_order"]


def test_a_bad_step_name_is_refused_naming_the_step() -> None:
    _refused(lambda f: f.map("1st", 1), r"workflow 'shop', map step '1st': name: step name")


# -- references ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda f: f.map("a", ref("steps.nope.output")),
            r"map step 'a': reference 'steps.nope.output' names no step of this workflow",
        ),
        (
            lambda f: (f.map("a", ref("steps.b.output.x")), f.map("b", 1)),
            r"map step 'a': reference 'steps.b.output.x' uses step 'b', which comes later; a step "
            r"can use the output of steps before it",
        ),
        (
            lambda f: f.map("a", 1).when(truthy(ref("steps.a.output"))),
            r"map step 'a': reference 'steps.a.output' uses its own step's output",
        ),
        (
            lambda f: f.foreach(
                "each", ref("steps.inner.output"), steps=lambda b: b.map("inner", 1)
            ),
            r"foreach step 'each': reference 'steps.inner.output' uses step 'inner', which is "
            r"inside it",
        ),
        (
            lambda f: f.foreach("each", [1], steps=lambda b: b.map("m", ref("steps.each.output"))),
            r"map step 'm': reference 'steps.each.output' uses step 'each', which contains it",
        ),
        (
            lambda f: f.parallel(
                "checks",
                branches={
                    "a": lambda b: b.map("x", 1),
                    "b": lambda b: b.map("y", ref("steps.x.output")),
                },
            ),
            r"map step 'y': reference 'steps.x.output' uses step 'x', which is in another branch "
            r"of parallel step 'checks': they run at the same time or instead of each other",
        ),
        (
            lambda f: f.branch(
                "route",
                cases=[(truthy(ref("input.a")), lambda b: b.map("x", 1))],
                otherwise=lambda b: b.map("y", ref("steps.x.output")),
            ),
            r"map step 'y': reference 'steps.x.output' uses step 'x', which is in another case "
            r"of branch step 'route'",
        ),
        (
            lambda f: (
                f.foreach("orders", [1], steps=lambda b: b.map("charge_one", ref("item"))),
                f.map("after", ref("steps.charge_one.output")),
            ),
            r"map step 'after': reference 'steps.charge_one.output' uses step 'charge_one', which "
            r"is inside foreach step 'orders': from outside it, a step inside names no single "
            r"item; read the foreach's own output \('steps.orders.output'",
        ),
        (
            lambda f: f.map("a", ref("item.id")),
            r"map step 'a': reference 'item.id' is only defined inside a foreach step's body",
        ),
        (
            lambda f: f.foreach("each", ref("index"), steps=lambda b: b.map("m", 1)),
            r"foreach step 'each': reference 'index' is only defined inside a foreach",
        ),
        (
            lambda f: f.map("a", ref("iteration")),
            r"map step 'a': reference 'iteration' is only defined inside a loop step's body",
        ),
        (
            lambda f: f.map("a", ref("state.count")),
            r"map step 'a': reference 'state.count' names state 'count', which no set_state step "
            r"of this workflow sets",
        ),
        (
            lambda f: (f.map("a", 1), f.output(ref("steps.zz.output"))),
            r"workflow 'shop', its output: reference 'steps.zz.output' names no step",
        ),
        (
            lambda f: f.branch("route").case(eq(ref("steps.inside.output"), 1)).map("inside", 1),
            r"branch step 'route': reference 'steps.inside.output' uses step 'inside', which is "
            r"inside it",
        ),
    ],
    ids=[
        "missing",
        "later",
        "itself",
        "inside",
        "its-container",
        "another-branch",
        "another-case",
        "inside-a-foreach-from-outside",
        "item-outside-foreach",
        "index-in-its-own-items",
        "iteration-outside-loop",
        "state-never-set",
        "output",
        "case-condition-reads-its-steps",
    ],
)
def test_a_reference_that_can_never_resolve_is_refused_naming_its_step(
    build: Callable[[Workflow], object], match: str
) -> None:
    _refused(build, r"workflow 'shop', " + match if not match.startswith("workflow") else match)


def test_every_bad_reference_is_named_at_once() -> None:
    flow = Workflow("shop")
    flow.map("a", [ref("steps.b.output"), ref("item")])
    flow.map("b", 1)
    with pytest.raises(SpecError) as raised:
        flow.build()
    message = str(raised.value)
    assert "reference 'steps.b.output' uses step 'b', which comes later" in message
    assert "reference 'item' is only defined inside a foreach" in message
    assert message.count("a step can use the output of steps before it") == 1


def test_references_that_can_resolve_are_accepted() -> None:
    flow = Workflow("shop")
    flow.set_state("init", count=0)
    flow.tool("create", charge, order=ref("input.order"))
    with flow.parallel("checks") as p:
        p.branch("a").map("a1", ref("steps.create.output"))
        with p.branch("b") as b:
            b.map("b1", ref("state.count"))
            b.map("b2", ref("steps.b1.output"))
    with flow.foreach("orders", ref("steps.create.output.orders")) as body:
        body.map("first", {"item": ref("item"), "at": ref("index"), "b": ref("steps.b2.output")})
        with body.foreach("lines", ref("item.lines")) as lines:
            lines.map("line", [ref("item"), ref("steps.first.output")])
        body.map("second", ref("steps.lines.output")).when(exists("steps.first.output.item"))
    with flow.loop("poll", until=eq(ref("steps.check.output"), "done")) as body:
        body.map("check", ref("iteration"))
        body.map("seen", ref("steps.check.output"))
    flow.map("after_loop", ref("steps.check.output"))  # a loop's step: its last iteration's
    flow.map("after_branch", ref("steps.a1.output"))
    flow.output({"orders": ref("steps.orders.output"), "last": ref("steps.after_loop.output")})
    assert flow.build().step("line") is not None


# -- empty containers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda f: f.foreach("each", [1]), r"foreach step 'each' has no steps: add them"),
        (lambda f: f.loop("again"), r"loop step 'again' has no steps"),
        (lambda f: f.parallel("checks"), r"parallel step 'checks' has no branches: add one"),
        (
            lambda f: f.parallel("checks").branch("a"),
            r"parallel step 'checks': branch 'a' has no steps; add some",
        ),
        (lambda f: f.branch("route"), r"branch step 'route' has no cases: add one"),
        (
            lambda f: f.branch("route", cases=[(truthy(1), lambda b: b.map("m", 1))]).otherwise(),
            r"branch step 'route': otherwise\(\) has no steps; add some or drop it",
        ),
        (
            lambda f: f.foreach("outer", [1], steps=lambda b: b.loop("inner")),
            r"loop step 'inner' has no steps",
        ),
    ],
    ids=["foreach", "loop", "parallel", "parallel-branch", "branch", "otherwise", "nested"],
)
def test_an_empty_container_is_refused_naming_it(
    build: Callable[[Workflow], object], match: str
) -> None:
    _refused(build, r"workflow 'shop', " + match)


def test_a_workflow_with_no_steps_says_how_to_add_one() -> None:
    with pytest.raises(SpecError, match=r"workflow 'shop' has no steps: add one \(flow.tool"):
        Workflow("shop").build()


def test_a_case_with_no_steps_is_a_choice_to_do_nothing() -> None:
    flow = Workflow("shop")
    with flow.branch("route") as b:
        b.case(eq(ref("input.cents"), 0))
        b.case(truthy(True)).map("charge_it", 1)
    assert flow.build().steps[0].cases[0].steps == ()  # type: ignore[union-attr]


def test_a_branch_or_otherwise_declared_twice_is_refused() -> None:
    flow = Workflow("shop")
    p = flow.parallel("checks")
    p.branch("a").map("m", 1)
    with pytest.raises(SpecError, match=r"parallel step 'checks': branch 'a' is declared twice"):
        p.branch("a")
    b = flow.branch("route")
    b.otherwise().map("n", 1)
    with pytest.raises(SpecError, match=r"branch step 'route': otherwise\(\) is called twice"):
        b.otherwise()


# -- tools ---------------------------------------------------------------------------------------


def test_a_function_without_a_usable_name_is_refused() -> None:
    _refused(lambda f: f.tool("a", lambda: 1), r"tool step 'a': .* has no usable name")


def test_two_functions_under_one_tool_name_are_refused_and_nothing_is_added() -> None:
    other = types.FunctionType(charge.__code__, {}, "charge")
    flow = Workflow("shop")
    flow.tool("first", charge, order={})
    with pytest.raises(SpecError) as raised:
        flow.tool("second", other, order={})
    assert str(raised.value).startswith(
        "workflow 'shop': tool 'charge' is given two different functions, "
    )
    assert "by tool step 'first' and " in str(raised.value)
    assert "rename one (CodeFunction.of(function, name=...))" in str(raised.value)
    assert [step.name for step in flow.build().steps] == ["first"]
    assert flow.tools == (charge,)
    flow.tool("second", charge, order={})  # the name is still free


def test_two_functions_under_one_name_across_a_nested_workflow_are_refused() -> None:
    other = types.FunctionType(charge.__code__, {}, "charge")
    child = Workflow("child")
    child.tool("inner", other, order={})
    flow = Workflow("shop")
    flow.tool("outer", charge, order={})
    flow.workflow("sub", child)
    with pytest.raises(SpecError, match=r"by tool step 'inner' of workflow 'child'"):
        flow.build()


def test_tool_flags_set_twice_must_agree() -> None:
    flow = Workflow("shop")
    flow.tool("a", charge, order={}).tool_options(safe_to_retry=True)
    flow.tool("b", charge, order={}).tool_options(safe_to_retry=True, timeout=5)
    with pytest.raises(SpecError, match=r"tool step 'c': tool 'charge' already has timeout=5"):
        flow.tool("c", charge, order={}).tool_options(timeout=6)


def test_a_tool_declared_two_ways_is_refused_by_the_spec() -> None:
    flow = Workflow("shop")
    flow.tool("a", charge, order={})
    flow.tool("b", CodeTool(name="charge", safe_to_retry=True), order={})
    with pytest.raises(SpecError, match=r"declares tool 'charge' differently"):
        flow.build()


def test_tool_options_are_for_a_function_only() -> None:
    flow = Workflow("shop")
    handle = flow.tool("crm", HttpTool(name="crm", url="https://crm.example/x"))
    with pytest.raises(SpecError, match=r"tool step 'crm': tool_options\(\) sets the flags of a"):
        handle.tool_options(safe_to_retry=True)


def test_an_agent_or_a_non_tool_is_not_a_tool_steps_tool() -> None:
    agent = AgentTool(name="helper", spec=AgentSpec(name="h", model=ModelRef(model="m")))
    _refused(
        lambda f: f.tool("a", agent),  # type: ignore[arg-type]
        r"tool step 'a': a step's tool is a function, .* not AgentTool; run an agent with agent",
    )
    _refused(lambda f: f.tool("a", "charge"), r"tool step 'a': 'charge' is not a tool")  # type: ignore[arg-type]


# -- values, conditions, options -----------------------------------------------------------------


def test_a_value_that_is_not_json_is_refused_naming_the_argument() -> None:
    _refused(
        lambda f: f.tool("a", charge, order={"when": dt.date(2026, 1, 1)}),  # type: ignore[dict-item]
        r"tool step 'a', argument 'order'.when: date datetime.date\(2026, 1, 1\) is not a "
        r"workflow value",
    )
    _refused(lambda f: f.map("a", float("nan")), r"map step 'a', its output: nan has no JSON")
    _refused(lambda f: f.map("a", {1: "x"}), r"object keys must be strings")  # type: ignore[dict-item]
    _refused(lambda f: f.map("a", eq(1, 1)), r"a condition is not a value")  # type: ignore[arg-type]


def test_a_condition_that_is_not_one_is_refused() -> None:
    _refused(
        lambda f: f.map("a", 1).when(ref("input.go")),  # type: ignore[arg-type]
        r"map step 'a': when\(\): Ref .* is not a condition; build one with eq",
    )
    with pytest.raises(SpecError, match=r"all_of\(\): condition 1: bool True is not a condition"):
        all_of(truthy(1), True)  # type: ignore[arg-type]


def test_a_bad_reference_path_says_what_is_wrong() -> None:
    with pytest.raises(SpecError, match=r"reference 'user.email' must start with one of: input"):
        ref("user.email")
    with pytest.raises(SpecError, match=r"a step's value is 'steps.NAME.output'"):
        ref("steps.create.id")
    with pytest.raises(SpecError, match=r"exists\(\) takes a reference"):
        exists(3)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"lit\(\{1, 2\}\)"):
        lit({1, 2})  # type: ignore[arg-type]


def test_options_out_of_range_are_refused_naming_the_step() -> None:
    _refused(lambda f: f.map("a", 1).retry(attempts=0), r"map step 'a': retry\(\): attempts:")
    _refused(lambda f: f.map("a", 1).timeout(0), r"map step 'a': timeout: Input should be greater")
    _refused(
        lambda f: f.foreach("e", [1], concurrency=0, steps=lambda b: b.map("m", 1)), "concurrency"
    )
    _refused(lambda f: f.sleep("nap"), r"sleep step 'nap': sleep step 'nap' takes seconds or until")
    _refused(lambda f: f.sleep("nap", until=dt.datetime(2026, 1, 1)), r"has no time zone")
    _refused(
        lambda f: f.map("a", 1).output_schema({"type": "nope"}), r"map step 'a': output_schema"
    )
    flow = Workflow("w", max_steps=0)
    flow.map("m", 1)
    with pytest.raises(SpecError, match=r"workflow 'w': max_steps: Input should be greater"):
        flow.build()


def test_a_workflow_cannot_contain_itself() -> None:
    flow = Workflow("shop")
    flow.map("a", 1)
    with pytest.raises(SpecError, match=r"workflow step 'me': a workflow cannot run itself"):
        flow.workflow("me", flow)
    a, b = Workflow("a"), Workflow("b")
    a.workflow("to_b", b)
    b.workflow("to_a", a)
    with pytest.raises(SpecError, match=r"workflow 'a' contains itself"):
        a.build()
    with pytest.raises(SpecError, match=r"workflow 'a' contains itself"):
        _ = a.tools

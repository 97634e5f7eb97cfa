"""Hypothesis strategies for workflow specs: random trees of every step kind, with guards,
retries and ``on_failure``, and scripts whose outcomes depend on the call id alone."""

from __future__ import annotations

import random
from itertools import count
from typing import Any

from hypothesis import strategies as st

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
    Step,
    ToolStep,
    Truthy,
    WaitStep,
    WorkflowSpec,
)
from tests.unit._simulate_workflow import Fail, Ok, Outcome, Script

SAFE = CodeTool(name="safe", safe_to_retry=True)
UNSAFE = CodeTool(name="unsafe")
AGENT = AgentSpec(name="helper", model=ModelRef(model="m"))


@st.composite
def workflows(draw: st.DrawFn, *, unsafe: bool = True, max_depth: int = 3) -> WorkflowSpec:
    """A random workflow of up to `max_depth` levels of containers."""
    names = count()
    tools = (SAFE, UNSAFE) if unsafe else (SAFE,)

    def name(kind: str) -> str:
        return f"{kind}{next(names)}"

    def common(step_kind: str) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if draw(st.integers(0, 5)) == 0:
            options["when"] = Truthy(value=Lit(draw(st.booleans())))
        if draw(st.integers(0, 3)) == 0:
            options["on_failure"] = "continue"
        if step_kind == "leaf" and draw(st.integers(0, 3)) == 0:
            options["retry"] = Retry(
                attempts=draw(st.integers(2, 3)), backoff=draw(st.sampled_from([0, 5]))
            )
        return options

    def leaf() -> Step:
        kind = draw(
            st.sampled_from(
                ["tool", "tool", "tool", "map", "state", "wait", "sleep", "human", "agent"]
            )
        )
        match kind:
            case "tool":
                return ToolStep(
                    name=name("t"),
                    tool=draw(st.sampled_from(tools)),
                    arguments={"x": Lit(draw(st.integers(0, 3)))},
                    **common("leaf"),
                )
            case "map":
                return MapStep(
                    name=name("m"), output=Lit(draw(st.integers(0, 9))), **common("leaf")
                )
            case "state":
                return SetStateStep(name=name("s"), values={"v": Lit(1)}, **common("leaf"))
            case "wait":
                return WaitStep(
                    name=name("w"),
                    event=draw(st.sampled_from(["a", "b"])),
                    timeout=draw(st.sampled_from([None, 30.0])),
                    **common("leaf"),
                )
            case "sleep":
                return SleepStep(
                    name=name("z"), seconds=draw(st.sampled_from([0, 10])), **common("leaf")
                )
            case "human":
                return HumanStep(name=name("h"), question="ok?", **common("leaf"))
            case _:
                return AgentStep(name=name("g"), agent=AGENT, input=Lit("go"), **common("leaf"))

    def sequence(depth: int) -> tuple[Step, ...]:
        return tuple(step(depth) for _ in range(draw(st.integers(1, 3))))

    def step(depth: int) -> Step:
        if depth <= 0 or draw(st.integers(0, 2)) > 0:
            return leaf()
        kind = draw(st.sampled_from(["parallel", "foreach", "loop", "branch"]))
        match kind:
            case "parallel":
                branches = {f"b{i}": sequence(depth - 1) for i in range(draw(st.integers(1, 3)))}
                return ParallelStep(name=name("p"), branches=branches, **common("container"))
            case "foreach":
                return ForeachStep(
                    name=name("f"),
                    items=Lit(list(range(draw(st.integers(0, 4))))),
                    concurrency=draw(st.integers(1, 3)),
                    steps=sequence(depth - 1),
                    **common("container"),
                )
            case "loop":
                return LoopStep(
                    name=name("l"),
                    max_iterations=draw(st.integers(1, 3)),
                    until=Compare(
                        left=Ref("iteration"), op="gte", right=Lit(draw(st.integers(0, 3)))
                    ),
                    exhausted="stop",
                    steps=sequence(depth - 1),
                    **common("container"),
                )
            case _:
                return BranchStep(
                    name=name("r"),
                    mode=draw(st.sampled_from(["first", "all"])),
                    cases=(
                        Case(
                            when=Truthy(value=Lit(draw(st.booleans()))), steps=sequence(depth - 1)
                        ),
                        Case(
                            when=Truthy(value=Lit(draw(st.booleans()))), steps=sequence(depth - 1)
                        ),
                    ),
                    otherwise=sequence(depth - 1) if draw(st.booleans()) else (),
                    **common("container"),
                )

    return WorkflowSpec(name="random", steps=sequence(max_depth), max_steps=500)


def seeded_script(seed: int, failures: int = 5) -> Script:
    """Outcomes that depend on the seed and the call id only (never on when a call runs): about
    one call in `failures` fails, every wait and question is answered."""

    def script(call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
        chance = random.Random(f"{seed}:{call_id}:{name}")
        if name in ("psych:wait", "psych:human", "approval"):
            return Ok({"answer": call_id})
        if chance.randrange(failures) == 0:
            return Fail(error=f"{call_id} failed")
        return Ok({"call": call_id, "n": chance.randrange(100)})

    return script

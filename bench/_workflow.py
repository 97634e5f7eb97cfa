"""The benchmark workflows: a chain of tool steps, and a loop whose body is one tool step.

Both call one fast async code tool, `add_one`, so what a run costs is the runtime's and the
store's work, not the tool's. The worker's model is a `FakeModel` with nothing scripted: a
workflow never asks a model, and one that did would fail its run instead of hiding in the time.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from pydantic import JsonValue

from bench._listing import listing, with_listing
from psych_runtime import CodeTool, Runtime, WorkflowSpec
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.workflows import LoopStep, Ref, ToolStep

ADD_ONE = CodeTool(name="add_one")
LOOP = "poll"
"""The long loop's name: its calls are ``poll[ITERATION].check``."""


async def add_one(value: int) -> dict[str, int]:
    """One unit of work: the value after `value`."""
    return {"value": value + 1}


def add_one_returning(result_bytes: int) -> Callable[[int], Awaitable[object]]:
    """An `add_one` tool whose result also carries about `result_bytes` of JSON (rows of a
    listing), for what a step costs with a result of that size; 0: `add_one` itself."""
    return with_listing(add_one, result_bytes)


def chain_spec(steps: int) -> WorkflowSpec:
    """`steps` tool steps in sequence, each adding one to the previous step's output."""
    chain = [ToolStep(name="s0", tool=ADD_ONE, arguments={"value": Ref("input.start")})]
    chain += [
        ToolStep(
            name=f"s{index}",
            tool=ADD_ONE,
            arguments={"value": Ref(f"steps.s{index - 1}.output.value")},
        )
        for index in range(1, steps)
    ]
    return WorkflowSpec(name=f"chain-{steps}", steps=tuple(chain))


CHAIN_INPUT = json.dumps({"start": 0})


def chain_output(steps: int, result_bytes: int = 0) -> dict[str, JsonValue]:
    """What a run of `chain_spec(steps)` on `CHAIN_INPUT` answers, its tool
    `add_one_returning(result_bytes)`."""
    rows = listing(result_bytes)
    return {"value": steps, "rows": rows} if rows else {"value": steps}


def loop_spec(iterations: int) -> WorkflowSpec:
    """A loop of exactly `iterations` iterations (it has no condition), each one tool step."""
    body = ToolStep(name="check", tool=ADD_ONE, arguments={"value": Ref("iteration")})
    return WorkflowSpec(
        name=f"loop-{iterations}",
        steps=(LoopStep(name=LOOP, max_iterations=iterations, steps=(body,)),),
        # Each iteration starts one step (its tool step; the loop's start is not counted).
        max_steps=iterations,
    )


def loop_output(iterations: int) -> dict[str, int]:
    """What a run of `loop_spec(iterations)` answers: its last iteration's step's output."""
    return {"value": iterations}


def bench_runtime(result_bytes: int = 0) -> Runtime:
    """What the benchmark's workers run workflows with, each result about `result_bytes` of
    JSON (0: a few bytes)."""
    return Runtime(model=FakeModel(), tools=[add_one_returning(result_bytes)])

"""The workflow benchmark still works: on the memory store with tiny sizes, its workflows answer
what they should, a run makes the durable steps its docstring says, and every measure comes back
as a positive number. No time is compared with a goal here (timed tests flake): the goals live
in bench/workflow_steps.py."""

from __future__ import annotations

import gc
import json
import re
import sys

import pytest

from bench import workflow_steps
from bench._gc_time import gc_timed
from bench._stores import count_appends, fresh_store
from bench._workflow import CHAIN_INPUT, bench_runtime, chain_output, chain_spec
from psych_runtime import Scope, Worker, dispatch, read_log
from psych_runtime.ports import Batch


async def _batches_of_one_chain(steps: int) -> tuple[list[Batch], list[str]]:
    async with fresh_store("memory:") as store:
        scoped = store.scoped(Scope(tenant="bench"))
        run_id = await dispatch(scoped, chain_spec(steps), CHAIN_INPUT)
        stamps: list[float] = []
        batches: list[Batch] = []
        count_appends(store, stamps, batches)
        await Worker(store, bench_runtime(), poll_interval=0.01).run_until_idle()
        await workflow_steps.check_outputs(scoped, [run_id], chain_output(steps))
        kinds = [type(record.body).__name__ for record in await read_log(scoped, run_id)]
    assert len(stamps) == len(batches)
    return batches, kinds


async def test_a_chain_run_makes_the_durable_steps_the_docstring_says():
    batches, kinds = await _batches_of_one_chain(3)
    shapes = [tuple(type(record.body).__name__ for record in batch.records) for batch in batches]
    assert shapes == [
        *[("StepsPlanned", "ToolCallStarted"), ("ToolCallFinished",)] * 3,
        ("StepsPlanned", "RunCompleted"),
    ]
    assert kinds[:2] == ["RunAdmitted", "AttemptStarted"]

    batches, _ = await _batches_of_one_chain(workflow_steps.CHAIN_STEPS)
    assert len(batches) == 41
    assert "41 durable steps" in " ".join((workflow_steps.__doc__ or "").split())


async def test_per_step_counts_the_appends_of_each_run():
    ms, steps, cpu_us, gc_us = await workflow_steps.per_step("memory:", runs=2)
    assert ms > 0
    assert steps == 41
    assert cpu_us > 0
    assert 0 <= gc_us < cpu_us


async def test_results_of_a_real_size_are_what_each_step_outputs():
    # per_step stops the benchmark unless every run answers chain_output(steps, 4000): the
    # last step's output, listing and all.
    _, steps, _, _ = await workflow_steps.per_step("memory:", runs=1, steps=3, result_bytes=4000)
    assert steps == 7
    rows = chain_output(3, 4000)["rows"]
    assert isinstance(rows, list)
    assert 3500 < len(json.dumps(rows)) < 4500
    assert chain_output(3) == {"value": 3}


async def test_the_long_loop_is_timed_at_both_ends():
    early, late = await workflow_steps.late_step_ratio("memory:", late=30)
    assert early > 0
    assert late > 0


async def test_a_run_that_does_not_answer_as_expected_stops_the_benchmark():
    async with fresh_store("memory:") as store:
        scoped = store.scoped(Scope(tenant="bench"))
        run_id = await dispatch(scoped, chain_spec(2), CHAIN_INPUT)
        with pytest.raises(SystemExit, match="ended queued"):
            await workflow_steps.check_outputs(scoped, [run_id], chain_output(2))
        await Worker(store, bench_runtime(), poll_interval=0.01).run_until_idle()
        with pytest.raises(SystemExit, match="expected completed"):
            await workflow_steps.check_outputs(scoped, [run_id], chain_output(3))


async def test_the_command_prints_its_table_and_a_machine_readable_line(monkeypatch, capsys):
    arguments = ["--store", "memory", "--rounds", "2", "--runs", "2", "--long", "20"]
    monkeypatch.setattr(sys, "argv", ["workflow_steps", *arguments, "--rps-runs", "4"])
    await workflow_steps.main()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    found = dict(re.findall(r"(\w+)=(\S+)", last))
    assert found["store"] == "memory"
    assert found["steps_per_run"] == "41"
    measures = ("per_step_ms", "cpu_us_per_step", "ratio", "loop_20_over_10", "runs_per_s_32")
    for key in (*measures, "admit_cpu_us"):
        assert float(found[key]) > 0, key
    assert found["result_bytes"] == "0"
    assert float(found["gc_us_per_step"]) >= 0
    # A list append, the memory store's floor, can round to 0.000 ms.
    assert float(found["floor_ms"]) >= 0


def test_the_collector_is_timed_while_the_block_runs():
    with gc_timed() as collecting:
        garbage = []
        for _ in range(3):
            cycle: list[object] = []
            cycle.append(cycle)
            garbage.append(cycle)
        gc.collect()
    assert collecting.collections >= 1
    assert collecting.seconds >= 0
    assert collecting not in gc.callbacks

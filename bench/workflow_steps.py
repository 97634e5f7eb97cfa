"""What a durable workflow step costs, against the raw floor of the same store, measured in one run.

    python -m bench.workflow_steps --store memory|sqlite|postgres|mysql|dynamodb

The benchmark workflow is 20 tool steps in sequence, each calling one fast async code tool on
the previous step's output (``steps.sN.output.value``). A run of it makes 41 durable steps
(appends, counted as `bench.durable_steps` counts them): the planner works in rounds, and each
round is one append, its `StepsPlanned` committed with the `ToolCallStarted` of the call it
plans; each call's result is another. 20 rounds start the 20 steps and 20 appends record their
results; a 21st round settles the last step and is committed with the run's `RunCompleted`.
(The claim writes the `AttemptStarted`; it is not an append.) The step, the floor (one INSERT
and COMMIT per step with the same durability settings, `bench._stores.floor_ms`) and a bare
`store.append` are measured in alternating rounds (`--rounds`), each figure the median over
the rounds, so load from elsewhere on the machine moves them alike.

Each round also runs one long loop: a `LoopStep` of ``--long`` + 10 iterations whose body is
one tool step (two appends an iteration: the round that starts it, then its result). The time
of each append (since the one before it) around iteration 10 and around iteration ``--long``
of the same run gives a ratio that should be about 1: a step's cost must not grow with the log.

With ``--result-bytes N`` each call's result also carries about N bytes of JSON (rows of a
listing), which every step of the chain (not the loop) outputs: what a step costs with results
of a real size.
The CPU per step is this process's, as in `bench.durable_steps`, and the part of it spent in
Python's cyclic garbage collector is timed by the collector's callbacks (`bench._gc_time`).

The admission's CPU per run is what `dispatch` of the 20-step workflow costs the app's
handler (the same spec object each time), in this process.

Last, one worker drives 96 runs (`--rps-runs`) of the 20-step workflow, 32 at once. The last line is
machine-readable:

    store=NAME steps_per_run=41 per_step_ms=X cpu_us_per_step=C gc_us_per_step=G
        result_bytes=B floor_ms=Y
        ratio=Z loop_1000_over_10=R runs_per_s_32=W admit_cpu_us=A   (all on one line)

Server stores find their server as `bench.durable_steps` does; each measure uses a fresh
schema (or file, or table), removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench._admission import admission_cpu_us
from bench._arguments import at_least, positive, zero_or_more
from bench._gc_time import gc_timed
from bench._stores import bench_url, count_appends, discard, floor_ms, fresh_store
from bench._workflow import (
    CHAIN_INPUT,
    LOOP,
    bench_runtime,
    chain_output,
    chain_spec,
    loop_output,
    loop_spec,
)
from bench.durable_steps import append_only
from psych_runtime import Scope, ScopedStore, Worker, dispatch, report
from psych_runtime.ports import Batch
from psych_runtime.records import ToolCallFinished, ToolCallStarted

SCOPE = Scope(tenant="bench")
STORES = ("memory", "sqlite", "postgres", "mysql", "dynamodb")
CHAIN_STEPS = 20
ITERATION = re.compile(rf"^{LOOP}\[(\d+)\]\.")
EARLY_ITERATION = 10
"""The loop iteration the late one is compared with."""
AROUND = 10
"""Iterations whose appends time each side: the ten around it."""


async def per_step(
    url: str, runs: int, steps: int = CHAIN_STEPS, result_bytes: int = 0
) -> tuple[float, float, float, float]:
    """(ms per durable step, steps per run, CPU microseconds per step, of which in the
    garbage collector) for `runs` runs of a `steps`-step chain, driven one at a time, each
    tool result about `result_bytes` of JSON (0: a few bytes). The CPU is this process's
    (`time.process_time`), as in `bench.durable_steps`: on the memory store, the runtime's
    and the planner's alone."""
    async with fresh_store(url) as store:
        scoped = store.scoped(SCOPE)
        spec = chain_spec(steps)
        run_ids = [await dispatch(scoped, spec, CHAIN_INPUT) for _ in range(runs)]
        stamps: list[float] = []
        count_appends(store, stamps)
        worker = Worker(store, bench_runtime(result_bytes), poll_interval=0.01)
        with gc_timed() as collecting:
            started, cpu = time.perf_counter(), time.process_time()
            await worker.run_until_idle()
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        await check_outputs(scoped, run_ids, chain_output(steps, result_bytes))
    count = len(stamps)
    return elapsed * 1000 / count, count / runs, cpu * 1e6 / count, collecting.seconds * 1e6 / count


async def runs_per_second(
    url: str, runs: int, concurrency: int, steps: int = CHAIN_STEPS, result_bytes: int = 0
) -> float:
    """Runs per second of a `steps`-step chain for one worker driving `concurrency` at once,
    each tool result about `result_bytes` of JSON."""
    async with fresh_store(url) as store:
        scoped = store.scoped(SCOPE)
        spec = chain_spec(steps)
        run_ids = [await dispatch(scoped, spec, CHAIN_INPUT) for _ in range(runs)]
        runtime = bench_runtime(result_bytes)
        worker = Worker(store, runtime, concurrency=concurrency, poll_interval=0.01)
        started = time.perf_counter()
        await worker.run_until_idle()
        elapsed = time.perf_counter() - started
        await check_outputs(scoped, run_ids, chain_output(steps, result_bytes))
    return runs / elapsed


async def late_step_ratio(url: str, late: int, early: int = EARLY_ITERATION) -> tuple[float, float]:
    """Median ms per append around iteration `early` and around iteration `late` of one run
    of a loop (which runs on 10 iterations past `late`, so both sides of it are measured)."""
    if late - early < AROUND:
        raise ValueError(
            f"iteration {late} is too close to iteration {early} to compare them: the "
            f"{AROUND} iterations around each would overlap"
        )
    iterations = late + 10
    async with fresh_store(url) as store:
        scoped = store.scoped(SCOPE)
        run_id = await dispatch(scoped, loop_spec(iterations), "null")
        stamps: list[float] = []
        batches: list[Batch] = []
        count_appends(store, stamps, batches)
        await Worker(store, bench_runtime(), poll_interval=0.01).run_until_idle()
        await check_outputs(scoped, [run_id], loop_output(iterations))
    # Each append's time is the one since the append before it, and it belongs to the iteration
    # whose call it starts or settles (the run's last append, which ends it, belongs to none).
    took: dict[int, list[float]] = {}
    for (before, after), batch in zip(itertools.pairwise(stamps), batches[1:], strict=True):
        iteration = _iteration_of(batch)
        if iteration is not None:
            took.setdefault(iteration, []).append((after - before) * 1000)
    return _around(took, early), _around(took, late)


def _iteration_of(batch: Batch) -> int | None:
    for record in batch.records:
        if isinstance(record.body, ToolCallStarted | ToolCallFinished):
            found = ITERATION.match(record.body.call_id)
            if found is not None:
                return int(found.group(1))
    return None


def _around(took: dict[int, list[float]], iteration: int) -> float:
    """The median over the appends of the `AROUND` iterations around `iteration`."""
    half = AROUND // 2
    times = [ms for at in range(iteration - half, iteration + half) for ms in took.get(at, [])]
    if not times:
        raise SystemExit(
            f"no append was timed around iteration {iteration} of the loop: its calls are no "
            f"longer named {LOOP}[N].STEP, or the loop did not run that far"
        )
    return statistics.median(times)


async def check_outputs(store: ScopedStore, run_ids: Sequence[str], expected: object) -> None:
    """Each run completed with `expected` as its output: the time of a run that failed or
    answered wrongly measures nothing."""
    for run_id in run_ids:
        done = await report(store, run_id)
        if done.status != "completed" or done.output != expected:
            raise SystemExit(
                f"benchmark run {run_id} ended {done.status} with output {done.output!r} "
                f"(expected completed with {expected!r}): the benchmark measures nothing"
            )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=STORES, required=True)
    parser.add_argument("--runs", type=positive, default=40, help="runs for the per-step measure")
    parser.add_argument(
        "--rounds", type=positive, default=5, help="alternating rounds of step, floor, append, loop"
    )
    parser.add_argument(
        "--long",
        type=at_least(EARLY_ITERATION + AROUND),
        default=1000,
        help=f"the late loop iteration (at least {EARLY_ITERATION + AROUND})",
    )
    parser.add_argument("--rps-runs", type=positive, default=96, help="runs for the runs/s measure")
    parser.add_argument(
        "--result-bytes",
        type=zero_or_more,
        default=0,
        help="JSON bytes of each tool result (0: a few)",
    )
    args = parser.parse_args()

    urls: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)

        def url(name: str) -> str:
            urls.append(bench_url(args.store, name, workdir))
            return urls[-1]

        try:
            # As in bench.durable_steps: alternating rounds, so that every measure sees the
            # same machine; each figure is the median over the rounds, the ratios medians of
            # per-round ratios.
            rounds = args.rounds
            per_round = max(args.runs // rounds, 1)
            steps_ms, cpus, gcs, floors, appends, ratios, append_ratios = [], [], [], [], [], [], []
            earlies, lates, loop_ratios = [], [], []
            for index in range(rounds):
                one_step, steps, one_cpu, one_gc = await per_step(
                    url(f"wsteps{index}"), per_round, result_bytes=args.result_bytes
                )
                count = int(per_round * steps)
                folder = workdir / f"round{index}"
                folder.mkdir()
                one_floor = floor_ms(url(f"wfloor{index}"), count, folder)
                one_append = await append_only(url(f"wappends{index}"), count)
                early, late = await late_step_ratio(url(f"wloop{index}"), args.long)
                steps_ms.append(one_step)
                cpus.append(one_cpu)
                gcs.append(one_gc)
                floors.append(one_floor)
                appends.append(one_append)
                ratios.append(one_step / one_floor)
                append_ratios.append(one_append / one_floor)
                earlies.append(early)
                lates.append(late)
                loop_ratios.append(late / early)
            step_ms, floor = statistics.median(steps_ms), statistics.median(floors)
            cpu_us, gc_us = statistics.median(cpus), statistics.median(gcs)
            append_ms, ratio = statistics.median(appends), statistics.median(ratios)
            loop_ratio = statistics.median(loop_ratios)
            admit_us = await admission_cpu_us(url("wadmit"), chain_spec(CHAIN_STEPS), CHAIN_INPUT)
            rps_32 = await runs_per_second(
                url("wrps"), args.rps_runs, 32, CHAIN_STEPS, args.result_bytes
            )
        finally:
            for used in urls:
                await discard(used)

    rows = [
        (f"durable step, {CHAIN_STEPS}-step workflow (ms)", f"{step_ms:.3f}"),
        ("durable steps per run", f"{steps:.0f}"),
        ("CPU per step, this process (us)", f"{cpu_us:.1f}"),
        ("of which in the garbage collector (us)", f"{gc_us:.1f}"),
        ("raw floor: INSERT + COMMIT (ms)", f"{floor:.3f}"),
        ("ratio", f"{ratio:.2f}"),
        ("store append alone, no runtime (ms)", f"{append_ms:.3f}"),
        ("store append alone / raw floor", f"{statistics.median(append_ratios):.2f}"),
        ("admission (dispatch), CPU per run (us)", f"{admit_us:.1f}"),
        ("runs/s, 1 worker, 32 runs at once", f"{rps_32:.1f}"),
        (
            f"loop step at iteration 10 / iteration {args.long} (ms)",
            f"{statistics.median(earlies):.3f} / {statistics.median(lates):.3f}",
        ),
        (f"iteration {args.long} / iteration 10", f"{loop_ratio:.2f}"),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"{'measure':<{width}}  value")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    print(
        f"store={args.store} steps_per_run={steps:.0f} per_step_ms={step_ms:.3f} "
        f"cpu_us_per_step={cpu_us:.1f} gc_us_per_step={gc_us:.1f} "
        f"result_bytes={args.result_bytes} "
        f"floor_ms={floor:.3f} ratio={ratio:.2f} loop_{args.long}_over_10={loop_ratio:.2f} "
        f"runs_per_s_32={rps_32:.1f} admit_cpu_us={admit_us:.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())

"""What a durable step costs, against the raw floor of the same store, measured in one run.

    python -m bench.durable_steps --store memory|sqlite

A run of the benchmark agent makes 10 tool calls, one per model turn, then answers: 21 durable
steps (11 model turns, each committed with the starts of its calls or with the run's end, and
10 tool results). The floor is one INSERT and COMMIT per step with the same durability settings
(`synchronous=FULL` on SQLite). The last line is machine-readable:

    store=NAME steps_per_run=21 per_step_ms=X floor_ms=Y ratio=Z runs_per_s_32=W
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._agent import StepModel, bench_spec, step
from bench._stores import floor_ms, open_bench_store
from psych_runtime import AppendResult, Batch, Scope, Store, Worker, dispatch

ROOT = Path(__file__).resolve().parents[1]
SCOPE = Scope(tenant="bench")


def _count_appends(store: Store, stamps: list[float]) -> None:
    original = store.append

    async def counted(run_id: str, attempt: int, batch: Batch) -> AppendResult:
        result = await original(run_id, attempt, batch)
        stamps.append(time.perf_counter())
        return result

    store.append = counted  # type: ignore[method-assign]


async def _fresh(url: str) -> Store:
    store = open_bench_store(url)
    await store.migrate()
    return store


async def per_step(url: str, runs: int, calls: int) -> tuple[float, float]:
    """(ms per durable step, steps per run) for `runs` runs driven one at a time."""
    store = await _fresh(url)
    scoped = store.scoped(SCOPE)
    spec = bench_spec(calls)
    for index in range(runs):
        await dispatch(scoped, spec, f"run {index}")
    stamps: list[float] = []
    _count_appends(store, stamps)
    worker = Worker(store, model=StepModel(calls), tools=[step], poll_interval=0.01)
    started = time.perf_counter()
    await worker.run_until_idle()
    elapsed = time.perf_counter() - started
    return elapsed * 1000 / len(stamps), len(stamps) / runs


async def runs_per_second(url: str, runs: int, calls: int, concurrency: int) -> float:
    """Runs per second for one in-process worker driving `concurrency` runs at once."""
    store = await _fresh(url)
    scoped = store.scoped(SCOPE)
    spec = bench_spec(calls)
    for index in range(runs):
        await dispatch(scoped, spec, f"run {index}")
    worker = Worker(
        store, model=StepModel(calls), tools=[step], concurrency=concurrency, poll_interval=0.01
    )
    started = time.perf_counter()
    await worker.run_until_idle()
    return runs / (time.perf_counter() - started)


async def late_step_ratio(url: str, calls: int) -> tuple[float, float]:
    """Median step time around turn 10 and around turn `calls` of one long run (ms)."""
    store = await _fresh(url)
    await dispatch(store.scoped(SCOPE), bench_spec(calls), "a long run")
    stamps: list[float] = []
    _count_appends(store, stamps)
    await Worker(store, model=StepModel(calls), tools=[step]).run_until_idle()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    early = statistics.median(gaps[15:35]) * 1000
    late = statistics.median(gaps[-30:-10]) * 1000
    return early, late


async def process_runs_per_second(url: str, processes: int, runs: int, calls: int) -> float:
    """Runs per second with `processes` worker processes sharing the store."""
    store = await _fresh(url)
    scoped = store.scoped(SCOPE)
    spec = bench_spec(calls)
    for index in range(runs):
        await dispatch(scoped, spec, f"run {index}")
    elapsed = await asyncio.to_thread(_run_worker_processes, url, processes, calls)
    return runs / elapsed


def _run_worker_processes(url: str, processes: int, calls: int) -> float:
    """Seconds for `processes` worker processes to drain the store."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "bench._worker_process", url, str(calls), "8"],
            cwd=ROOT,
            env=env,
        )
        for _ in range(processes)
    ]
    for worker in workers:
        if worker.wait(timeout=600) != 0:
            raise SystemExit(f"a worker process failed with exit code {worker.returncode}")
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("memory", "sqlite"), required=True)
    parser.add_argument("--runs", type=int, default=40, help="runs for the per-step measure")
    parser.add_argument("--calls", type=int, default=10, help="tool calls per run")
    parser.add_argument("--long", type=int, default=1000, help="turns of the long run")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)

        def url(name: str) -> str:
            return "memory:" if args.store == "memory" else f"sqlite:///{workdir / name}"

        step_ms, steps = await per_step(url("steps.sqlite"), args.runs, args.calls)
        floor = floor_ms(url("floor.sqlite"), int(args.runs * steps), workdir)
        rps_32 = await runs_per_second(url("rps.sqlite"), 96, args.calls, 32)
        early, late = await late_step_ratio(url("long.sqlite"), args.long)
        rows = [
            ("durable step (ms)", f"{step_ms:.3f}"),
            ("raw floor: INSERT + COMMIT (ms)", f"{floor:.3f}"),
            ("ratio", f"{step_ms / floor:.2f}"),
            ("runs/s, 1 worker, 32 runs at once", f"{rps_32:.1f}"),
            (f"step at turn 10 / turn {args.long} (ms)", f"{early:.3f} / {late:.3f}"),
            (f"turn {args.long} / turn 10", f"{late / early:.2f}"),
        ]
        if args.store == "sqlite":
            for processes in (1, 2, 4):
                rate = await process_runs_per_second(
                    url(f"procs{processes}.sqlite"), processes, 160, args.calls
                )
                rows.append((f"runs/s, {processes} worker process(es), 8 runs each", f"{rate:.1f}"))

    width = max(len(label) for label, _ in rows)
    print(f"{'measure':<{width}}  value")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    print(
        f"store={args.store} steps_per_run={steps:.0f} per_step_ms={step_ms:.3f} "
        f"floor_ms={floor:.3f} ratio={step_ms / floor:.2f} runs_per_s_32={rps_32:.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())

"""The per-step cost of this checkout against an earlier commit's, measured side by side.

    python -m bench.against_ref --ref REV --store memory [--rounds 5] [--result-bytes N]
        [--bench durable_steps|workflow_steps]

A refactor must not make a durable step dearer. This checks out `REV` into a temporary git
worktree and runs this checkout's `bench.durable_steps` (an agent's steps) or, with
``--bench workflow_steps``, `bench.workflow_steps` (a workflow's) against that tree's
packages and against these, in alternating rounds, each in a fresh process that imports one
tree's packages (its `packages/*/src` first on `PYTHONPATH`), so load from elsewhere on the
machine moves both alike and both are measured by the same code (`REV` must have the public
names the benchmark uses). It prints each side's median wall-clock and CPU cost per step and
their ratios; the last line is machine-readable:

    bench=NAME store=NAME ref=REV ref_ms=X here_ms=Y ratio=Z ref_cpu_us=A here_cpu_us=B
        cpu_ratio=C            (all on one line)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._arguments import positive, zero_or_more

ROOT = Path(__file__).resolve().parents[1]
PER_STEP = re.compile(r"per_step_ms=([0-9.]+)")
CPU = re.compile(r"cpu_us_per_step=([0-9.]+)")


BENCHES = {
    "durable_steps": ["--claims", "5", "--long", "100"],
    "workflow_steps": ["--long", "20", "--rps-runs", "8"],
}
"""Each benchmark this can run, and its arguments that keep what is not compared short."""


def _per_step(
    tree: Path, bench: str, store: str, runs: int, result_bytes: int
) -> tuple[float, float]:
    """(ms, CPU us) per durable step with `tree`'s packages, measured by this checkout's code."""
    sources = [str(path) for path in sorted((tree / "packages").glob("*/src"))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sources])}
    command = [sys.executable, "-m", f"bench.{bench}", "--store", store, "--rounds", "1"]
    command += ["--runs", str(runs), *BENCHES[bench], "--result-bytes", str(result_bytes)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    ms, cpu = PER_STEP.search(done.stdout), CPU.search(done.stdout)
    if done.returncode != 0 or ms is None or cpu is None:
        raise SystemExit(f"the benchmark failed on {tree}:\n{done.stdout}\n{done.stderr}")
    return float(ms.group(1)), float(cpu.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the commit to compare with")
    parser.add_argument("--store", default="memory")
    parser.add_argument("--bench", choices=sorted(BENCHES), default="durable_steps")
    parser.add_argument("--rounds", type=positive, default=5, help="rounds on each side")
    parser.add_argument("--runs", type=positive, default=40, help="runs a round")
    parser.add_argument(
        "--result-bytes",
        type=zero_or_more,
        default=0,
        help="JSON bytes of each tool result (0: a few)",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="psych-bench-ref-") as folder:
        tree = Path(folder) / "ref"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(tree), options.ref],
            cwd=ROOT,
            check=True,
        )
        measure = (options.bench, options.store, options.runs, options.result_bytes)
        try:
            ref_ms: list[tuple[float, float]] = []
            here_ms: list[tuple[float, float]] = []
            for round_number in range(options.rounds):
                # Alternate which side goes first, so neither always runs on a warmer machine.
                sides = [(tree, ref_ms), (ROOT, here_ms)]
                for side, into in sides if round_number % 2 == 0 else reversed(sides):
                    into.append(_per_step(side, *measure))
                (ref_step, ref_cpu), (here_step, here_cpu) = ref_ms[-1], here_ms[-1]
                print(
                    f"round {round_number + 1}: ref {ref_step:.3f} ms {ref_cpu:.1f} us CPU, "
                    f"here {here_step:.3f} ms {here_cpu:.1f} us CPU"
                )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )
    ref = statistics.median(step for step, _ in ref_ms)
    here = statistics.median(step for step, _ in here_ms)
    ref_cpu = statistics.median(cpu for _, cpu in ref_ms)
    here_cpu = statistics.median(cpu for _, cpu in here_ms)
    print(
        f"per step, median of {options.rounds}: ref {ref:.3f} ms {ref_cpu:.1f} us CPU, "
        f"here {here:.3f} ms {here_cpu:.1f} us CPU"
    )
    print(
        f"bench={options.bench} store={options.store} ref={options.ref} ref_ms={ref:.3f} "
        f"here_ms={here:.3f} ratio={here / ref:.2f} ref_cpu_us={ref_cpu:.1f} "
        f"here_cpu_us={here_cpu:.1f} cpu_ratio={here_cpu / ref_cpu:.2f}"
    )


if __name__ == "__main__":
    main()

"""The per-step cost of this checkout against an earlier commit's, measured side by side.

    python -m bench.against_ref --ref REV --store memory [--rounds 5]

A refactor must not make a durable step dearer. This checks out `REV` into a temporary git
worktree and runs `bench.durable_steps` there and here in alternating rounds, each in a fresh
process that imports its own tree's packages (its `packages/*/src` first on `PYTHONPATH`), so
load from elsewhere on the machine moves both alike. It prints each side's median per-step cost
and their ratio; the last line is machine-readable:

    store=NAME ref=REV ref_ms=X here_ms=Y ratio=Z
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

ROOT = Path(__file__).resolve().parents[1]
PER_STEP = re.compile(r"per_step_ms=([0-9.]+)")


def _per_step(tree: Path, store: str, runs: int) -> float:
    sources = [str(path) for path in sorted((tree / "packages").glob("*/src"))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), *sources])}
    command = [sys.executable, "-m", "bench.durable_steps", "--store", store, "--rounds", "1"]
    command += ["--runs", str(runs), "--claims", "5", "--long", "100"]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    found = PER_STEP.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the benchmark failed in {tree}:\n{done.stdout}\n{done.stderr}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the commit to compare with")
    parser.add_argument("--store", default="memory")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=40)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="psych-bench-ref-") as folder:
        tree = Path(folder) / "ref"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(tree), options.ref],
            cwd=ROOT,
            check=True,
        )
        try:
            ref_ms: list[float] = []
            here_ms: list[float] = []
            for round_number in range(options.rounds):
                # Alternate which side goes first, so neither always runs on a warmer machine.
                sides = [(tree, ref_ms), (ROOT, here_ms)]
                for side, into in sides if round_number % 2 == 0 else reversed(sides):
                    into.append(_per_step(side, options.store, options.runs))
                print(
                    f"round {round_number + 1}: ref {ref_ms[-1]:.3f} ms, here {here_ms[-1]:.3f} ms"
                )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )
    ref, here = statistics.median(ref_ms), statistics.median(here_ms)
    print(f"per step, median of {options.rounds}: ref {ref:.3f} ms, here {here:.3f} ms")
    print(
        f"store={options.store} ref={options.ref} ref_ms={ref:.3f} here_ms={here:.3f} "
        f"ratio={here / ref:.2f}"
    )


if __name__ == "__main__":
    main()

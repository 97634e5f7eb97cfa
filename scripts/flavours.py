"""Install flavours: the runtime alone, the runtime with one adapter, and everything, each in a
fresh environment from the wheelhouse, each running the tests that apply to it.

    uv run python scripts/flavours.py WHEELHOUSE [--only NAME] [--work DIR]
    nox -s flavours        (builds the wheelhouse with scripts/wheelhouse.sh, starts services)

A test module that needs a distribution the flavour lacks is skipped, saying which and what
installs it (`tests/conftest.py`); everything else must pass. Each flavour also states what it
must skip and what it must not: the runtime alone skips the CLI's, MCP's and A2A's tests, the
flavour with SQLite runs the SQLite store's contract suite, and the full one skips nothing for
want of one of the project's distributions. Exit code: 0 every flavour passed; 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from scripts.matrix import ROOT, TEST_TOOLS, environment, locked_versions


@dataclass(frozen=True)
class Flavour:
    """One way a user installs Psych, and what its test run must show."""

    name: str
    ours: tuple[str, ...]
    tools: tuple[str, ...]
    tests: tuple[str, ...]
    must_skip: tuple[str, ...] = ()
    must_not_skip: tuple[str, ...] = ()


FLAVOURS = (
    Flavour(
        "runtime",
        ("psych-runtime[testing]",),
        TEST_TOOLS,
        ("tests/unit",),
        must_skip=("psych-cli", "psych-runtime[mcp]", "psych-runtime[a2a]"),
    ),
    Flavour(
        "runtime-sqlite",
        ("psych-runtime[testing,sqlite]",),
        TEST_TOOLS,
        ("tests/unit", "tests/contract/test_sqlite_store.py"),
        must_skip=("psych-cli",),
        must_not_skip=("psych-runtime[sqlite]",),
    ),
    Flavour(
        "everything",
        ("psych-runtime[testing,all,mcp,a2a]", "psych-cli"),
        (*TEST_TOOLS, "opentelemetry-sdk", "genai-prices"),
        ("tests/unit",),
        must_not_skip=("psych-", "opentelemetry"),
    ),
)

_SKIP = re.compile(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", re.MULTILINE)


def run(flavour: Flavour, folders: list[Path], work: Path, locked: dict[str, str]) -> bool:
    """Make the flavour's environment, run its tests, and check what was skipped."""
    python = environment(
        work / flavour.name, folders, list(flavour.ours), list(flavour.tools), locked
    )
    if isinstance(python, str):
        print(f"flavours: {flavour.name}: {python}")
        return False
    print(f"flavours: {flavour.name}: {' '.join(flavour.ours)}", flush=True)
    env = {**os.environ, "VIRTUAL_ENV": str(python.parent.parent)}
    command = [str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, *flavour.tests], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n", flush=True)
    if done.returncode != 0:
        return False
    reasons = _SKIP.findall(done.stdout)
    missing = [want for want in flavour.must_skip if not any(want in r for r in reasons)]
    wrong = [r for r in reasons for unwanted in flavour.must_not_skip if unwanted in r]
    if missing:
        print(f"flavours: {flavour.name}: expected skips for {missing}, got {reasons}")
    if wrong:
        print(f"flavours: {flavour.name}: skipped what it has: {wrong}")
    return not missing and not wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheelhouse", type=Path, help="made by scripts/wheelhouse.sh")
    parser.add_argument("--only", action="append", default=[], help="one flavour (repeatable)")
    parser.add_argument("--work", type=Path, default=ROOT / ".cache" / "flavours")
    args = parser.parse_args(argv)
    known = {flavour.name for flavour in FLAVOURS}
    if set(args.only) - known:
        parser.error(f"unknown flavour(s) {sorted(set(args.only) - known)}; known: {sorted(known)}")
    args.work.mkdir(parents=True, exist_ok=True)
    folders = [args.wheelhouse.resolve()]
    locked = locked_versions()
    chosen = [flavour for flavour in FLAVOURS if not args.only or flavour.name in args.only]
    failed = [f.name for f in chosen if not run(f, folders, args.work.resolve(), locked)]
    if failed:
        print("flavours: failed: " + ", ".join(failed))
        return 1
    print("flavours: each ran the tests that apply and skipped the rest with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())

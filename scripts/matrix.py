"""The compatibility matrix: each adapter's wheel, in a fresh environment, with the oldest and the
newest psych-core its range admits, passing its contract suite there.

    uv run python scripts/matrix.py WHEELHOUSE [--only NAME ...] [--work DIR]
    nox -s matrix          (builds the wheelhouse with scripts/wheelhouse.sh, starts services)

For each adapter and each end of its ``psych-core`` range that a wheel exists for, this makes a
virtual environment, installs from the wheelhouse alone (``--no-index``: our names must never
come from an index) that psych-core, the adapter and ``psych-runtime[testing]``, then the test
tools the suite needs by their exact versions in uv.lock (names that are not ours, so an index
is safe for them), and runs the adapter's contract tests with that environment's Python. The
repository's tests import the installed wheels, never the workspace's sources.

The ends of a range are the oldest and the newest psych-core wheels in the wheelhouse (and in
``--released DIR``, for wheels of earlier releases) that the range admits. While psych-core has
one release, both ends are that release, and each adapter runs once. Exit code: 0 every cell
passed; 1 a cell failed or a range has no psych-core wheel at all.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

SUITES: dict[str, tuple[str, ...]] = {
    "psych-store-sqlite": ("tests/contract/test_sqlite_store.py",),
    "psych-store-postgres": (
        "tests/contract/test_postgres_store.py",
        "tests/contract/test_postgres_group.py",
    ),
    "psych-store-mysql": (
        "tests/contract/test_mysql_store.py",
        "tests/contract/test_mysql_atomicity.py",
        "tests/contract/test_mysql_group.py",
    ),
    "psych-store-dynamodb": ("tests/contract/test_dynamodb_store.py",),
    "psych-blob-s3": ("tests/contract/test_blob_s3.py",),
    "psych-sandbox-namespaces": ("tests/contract/test_sandbox_namespaces.py",),
    "psych-sandbox-docker": ("tests/contract/test_sandbox_docker.py",),
    "psych-telemetry-otel": ("tests/contract/test_telemetry_otel.py",),
}
"""Every adapter distribution, and the contract tests that certify it."""

TEST_TOOLS = ("pytest-timeout", "hypothesis")
"""What every suite's environment needs beyond ``psych-runtime[testing]`` (pytest's settings
in pyproject.toml name a timeout)."""

EXTRA_TOOLS = {"psych-telemetry-otel": ("opentelemetry-sdk",)}
"""What one suite needs beyond them: the adapter depends on the OpenTelemetry API only."""


@dataclass(frozen=True)
class Cell:
    """One adapter with one psych-core version."""

    adapter: str
    version: str
    core: Version

    @property
    def name(self) -> str:
        return f"{self.adapter} {self.version} with psych-core {self.core}"


def locked_versions() -> dict[str, str]:
    """The version uv.lock pins for each package."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return {package["name"]: package["version"] for package in lock["package"]}


def wheel_versions(folders: list[Path], distribution: str) -> list[Version]:
    """The versions of `distribution` that the wheels in `folders` hold, oldest first."""
    stem = distribution.replace("-", "_")
    pattern = re.compile(rf"^{re.escape(stem)}-([^-]+)-py3-none-any\.whl$")
    found = {
        Version(match.group(1))
        for folder in folders
        for path in folder.glob(f"{stem}-*.whl")
        if (match := pattern.match(path.name))
    }
    return sorted(found)


def cells(folders: list[Path], only: set[str]) -> list[Cell]:
    """Every adapter with the oldest and newest psych-core wheel its range admits."""
    made: list[Cell] = []
    cores = wheel_versions(folders, "psych-core")
    for path in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(path.read_text())["project"]
        name = project["name"]
        if name not in SUITES or (only and name not in only):
            continue
        needs = next(
            Requirement(text)
            for text in project["dependencies"]
            if Requirement(text).name == "psych-core"
        )
        admitted = [core for core in cores if needs.specifier.contains(core)]
        if not admitted:
            raise SystemExit(f"matrix: no psych-core wheel in {folders} admitted by {needs}")
        for core in dict.fromkeys((admitted[0], admitted[-1])):
            made.append(Cell(name, project["version"], core))
    return made


def environment(
    home: Path, folders: list[Path], ours: list[str], tools: list[str], locked: dict[str, str]
) -> Path | str:
    """A fresh virtual environment at `home` with `ours` from the wheels in `folders` alone and
    `tools` (names that are not ours) at their uv.lock versions; its Python, or what failed."""
    venv.EnvBuilder(clear=True, with_pip=True).create(home)
    python = home / "bin" / "python"
    links = [arg for folder in folders for arg in ("--find-links", str(folder))]
    quiet = ["--quiet", "--disable-pip-version-check"]
    pip = [str(python), "-m", "pip", "install", *quiet]
    steps = [[*pip, "--no-index", *links, *ours]]
    if tools:
        steps.append([*pip, "--only-binary=:all:", *(f"{t}=={locked[t]}" for t in tools)])
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"pip install {' '.join(step[len(pip) :])} failed:\n{done.stderr}"
    return python


def run(cell: Cell, folders: list[Path], work: Path, locked: dict[str, str]) -> bool:
    """Install `cell` in a fresh environment and run its contract suite there."""
    home = work / f"{cell.adapter}-core-{cell.core}"
    ours = [f"psych-core=={cell.core}", f"{cell.adapter}=={cell.version}", "psych-runtime[testing]"]
    tools = [*TEST_TOOLS, *EXTRA_TOOLS.get(cell.adapter, ())]
    python = environment(home, folders, ours, tools, locked)
    if isinstance(python, str):
        print(f"matrix: {cell.name}: {python}")
        return False
    code = "import importlib.metadata as m; print(m.version('psych-core'))"
    shown = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=False, cwd=work
    )
    if shown.stdout.strip() != str(cell.core):
        print(f"matrix: {cell.name}: installed psych-core is {shown.stdout.strip()!r}")
        return False
    env = {**os.environ, "VIRTUAL_ENV": str(home)}
    tests = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES[cell.adapter]]
    print(f"matrix: {cell.name}", flush=True)
    return subprocess.run(tests, cwd=ROOT, env=env, check=False).returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheelhouse", type=Path, help="made by scripts/wheelhouse.sh")
    parser.add_argument("--released", type=Path, action="append", default=[],
                        help="a folder of wheels of earlier releases")  # fmt: skip
    parser.add_argument("--only", action="append", default=[], help="one adapter (repeatable)")
    parser.add_argument("--work", type=Path, default=ROOT / ".cache" / "matrix")
    args = parser.parse_args(argv)
    folders = [args.wheelhouse.resolve(), *(path.resolve() for path in args.released)]
    unknown = set(args.only) - set(SUITES)
    if unknown:
        parser.error(f"no contract suite for {sorted(unknown)}; known: {', '.join(SUITES)}")
    args.work.mkdir(parents=True, exist_ok=True)
    locked = locked_versions()
    failed = [
        cell.name
        for cell in cells(folders, set(args.only))
        if not run(cell, folders, args.work.resolve(), locked)
    ]
    if failed:
        print("matrix: failed: " + "; ".join(failed))
        return 1
    print("matrix: every adapter passed its contract suite with each psych-core it admits")
    return 0


if __name__ == "__main__":
    sys.exit(main())

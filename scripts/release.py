"""Build one distribution for release, alone, and say the tag to push.

    uv run python scripts/release.py psych-store-postgres [--out DIR]
    nox -s release -- psych-store-postgres

Each distribution is released on its own (CONTRIBUTING.md, "Versions"). This:

1. finds the distribution under packages/ and reads its version;
2. checks that CHANGELOG.md has a section for that version under the distribution's heading
   (``## psych-store-postgres`` then ``### [0.1.1]``), so nothing is released unannounced;
3. builds its sdist and wheel with no workspace sources, as an index would see them (its
   dependencies on the project's other distributions are the ranges it declares);
4. checks the wheel: it carries the package and its ``py.typed``, what the distribution must
   ship (psych-cli its skills and templates, psych-runtime its price snapshot), and no tests,
   caches or compiled files;
5. prints the tag to push (``psych-store-postgres-v0.1.1``).

It pushes, tags and uploads nothing. Exit codes: 0 built and checked; 1 a check failed (the
message says which and what to do); 2 usage error.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MUST_SHIP = {
    "psych-cli": ("psych_cli/skills/psych/SKILL.md", "psych_cli/templates/"),
    "psych-runtime": ("psych_runtime/model/prices/",),
}
"""Paths (or folder prefixes) a distribution's wheel must hold beyond its package and py.typed."""

PROJECT_FILES = ("psych_cli/templates/",)
"""Where a wheel ships the files of projects it writes (a generated project's tests among
them): exempt from the check for tests and caches."""

_NEVER = re.compile(r"(^|/)(tests?|__pycache__|\.pytest_cache|\.mypy_cache)/|\.py[co]$")


class ReleaseError(Exception):
    """A check failed; the message says which and what to do."""


@dataclass(frozen=True)
class Distribution:
    """A distribution of the workspace: its name, version, folder and import package."""

    name: str
    version: str
    folder: Path

    @property
    def package(self) -> str:
        return self.name.replace("-", "_")

    @property
    def tag(self) -> str:
        return f"{self.name}-v{self.version}"


def find(name: str) -> Distribution:
    """The workspace distribution called `name`; `ReleaseError` naming the known ones."""
    known: dict[str, Distribution] = {}
    for path in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(path.read_text())["project"]
        known[project["name"]] = Distribution(project["name"], project["version"], path.parent)
    if name not in known:
        raise ReleaseError(f"no distribution {name!r} under packages/; known: {', '.join(known)}")
    return known[name]


def check_changelog(dist: Distribution, changelog: str) -> None:
    """`ReleaseError` unless CHANGELOG.md has ``### [VERSION]`` under ``## NAME``."""
    sections = re.split(r"^## ", changelog, flags=re.MULTILINE)
    own = next((s for s in sections if s.split("\n", 1)[0].strip() == dist.name), None)
    if own is None:
        raise ReleaseError(f"CHANGELOG.md has no '## {dist.name}' section; add one")
    if not re.search(rf"^### \[{re.escape(dist.version)}\]", own, flags=re.MULTILINE):
        raise ReleaseError(
            f"CHANGELOG.md has no '### [{dist.version}]' section under '## {dist.name}': move "
            f"its [Unreleased] entries under '### [{dist.version}] - YYYY-MM-DD' first"
        )


def check_wheel(dist: Distribution, wheel: Path) -> None:
    """`ReleaseError` unless `wheel` holds what `dist` must ship and nothing it must not."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    wanted: tuple[str, ...] = (f"{dist.package}/__init__.py", f"{dist.package}/py.typed")
    wanted += MUST_SHIP.get(dist.name, ())
    missing = [want for want in wanted if not any(name.startswith(want) for name in names)]
    if missing:
        raise ReleaseError(f"{wheel.name} lacks {', '.join(missing)}")
    stray = sorted(
        name for name in names if _NEVER.search(name) and not name.startswith(PROJECT_FILES)
    )
    if stray:
        raise ReleaseError(f"{wheel.name} holds what it must not: {', '.join(stray[:10])}")
    outside = sorted(
        name
        for name in names
        if not name.startswith((f"{dist.package}/", f"{dist.package}-{dist.version}.dist-info/"))
    )
    if outside:
        raise ReleaseError(f"{wheel.name} holds files outside its package: {', '.join(outside)}")


def build(dist: Distribution, out: Path) -> Path:
    """Build the sdist and the wheel of `dist` alone into `out`; return the wheel."""
    out.mkdir(parents=True, exist_ok=True)
    command = ["uv", "build", "--quiet", "--no-sources", "--out-dir", str(out), str(dist.folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ReleaseError(f"uv build of {dist.name} failed:\n{done.stderr.strip()}")
    wheel = out / f"{dist.package}-{dist.version}-py3-none-any.whl"
    if not wheel.exists():
        raise ReleaseError(f"uv build made no {wheel.name} in {out}")
    return wheel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("distribution", help="e.g. psych-store-postgres")
    parser.add_argument("--out", type=Path, help="where to build (default: dist/NAME-VERSION)")
    args = parser.parse_args(argv)
    try:
        dist = find(args.distribution)
        check_changelog(dist, (ROOT / "CHANGELOG.md").read_text())
        out = args.out or ROOT / "dist" / f"{dist.name}-{dist.version}"
        wheel = build(dist, out)
        check_wheel(dist, wheel)
    except ReleaseError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 1
    print(f"Built and checked {dist.name} {dist.version} in {out}")
    print(f"Tag to push: {dist.tag}")
    print(f"  git tag {dist.tag} && git push origin {dist.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

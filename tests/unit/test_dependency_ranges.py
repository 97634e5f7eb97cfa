"""Between the project's distributions, dependencies are ranges over one minor series, so one
distribution's patch release installs next to the released others (CONTRIBUTING.md, "Versions")."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = {
    path.parent.name: tomllib.loads(path.read_text())["project"]
    for path in sorted(ROOT.glob("packages/*/pyproject.toml"))
}
VERSIONS = {project["name"]: Version(project["version"]) for project in PROJECTS.values()}


def _internal(project: dict[str, object]) -> list[tuple[str, Requirement]]:
    """(where, requirement) for each dependency or extra on another of the project's ones."""
    found: list[tuple[str, Requirement]] = []
    for text in project.get("dependencies", []):  # type: ignore[attr-defined]
        found.append(("dependencies", Requirement(text)))
    extras: dict[str, list[str]] = project.get("optional-dependencies", {})  # type: ignore[assignment]
    for extra, texts in extras.items():
        found += [(f"[{extra}]", Requirement(text)) for text in texts]
    return [(where, req) for where, req in found if req.name in VERSIONS]


CASES = [
    (f"{folder} {where} {req.name}", project["name"], req)
    for folder, project in PROJECTS.items()
    for where, req in _internal(project)
]


def test_every_distribution_depends_on_another_of_ours() -> None:
    assert len(CASES) >= len(PROJECTS)


@pytest.mark.parametrize(("case", "owner", "requirement"), CASES, ids=[c[0] for c in CASES])
def test_a_dependency_is_a_range_over_one_minor_series(
    case: str, owner: str, requirement: Requirement
) -> None:
    current = VERSIONS[requirement.name]
    operators = sorted(spec.operator for spec in requirement.specifier)
    assert operators == ["<", ">="], f"{case}: {requirement} pins; use >=X.Y.Z,<X.(Y+1)"
    assert requirement.specifier.contains(current), f"{case}: {requirement} excludes {current}"
    patch = Version(f"{current.major}.{current.minor}.{current.micro + 1}")
    minor = Version(f"{current.major}.{current.minor + 1}.0")
    assert requirement.specifier.contains(patch), f"{case}: {requirement} excludes a patch"
    assert not requirement.specifier.contains(minor), f"{case}: {requirement} admits {minor}"


def test_the_all_extra_installs_every_adapter() -> None:
    runtime = PROJECTS["psych-runtime"]
    everything = {Requirement(text).name for text in runtime["optional-dependencies"]["all"]}
    adapters = {
        name
        for name in VERSIONS
        if name.startswith(("psych-store-", "psych-blob-", "psych-sandbox-", "psych-telemetry-"))
    }
    assert everything == adapters

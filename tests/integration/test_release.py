"""One distribution released alone: `scripts/release.py` (the `release` nox session) builds it
with no workspace sources, checks its CHANGELOG section and its wheel, and says the tag."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from scripts import release

ROOT = Path(__file__).resolve().parents[2]
NAMES = [
    tomllib.loads(path.read_text())["project"]["name"]
    for path in sorted(ROOT.glob("packages/*/pyproject.toml"))
]


def _release(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/release.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_a_released_distribution_builds_alone_and_says_its_tag(tmp_path: Path) -> None:
    done = _release("psych-store-postgres", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    version = release.find("psych-store-postgres").version
    assert f"Tag to push: psych-store-postgres-v{version}" in done.stdout
    built = sorted(path.name for path in tmp_path.iterdir() if path.name != ".gitignore")
    assert built == [
        f"psych_store_postgres-{version}-py3-none-any.whl",
        f"psych_store_postgres-{version}.tar.gz",
    ]
    with zipfile.ZipFile(tmp_path / built[0]) as wheel:
        metadata = wheel.read(f"psych_store_postgres-{version}.dist-info/METADATA").decode()
    # Built as an index sees it: the project's distributions by range, not by workspace path.
    assert "Requires-Dist: psych-core<0.2,>=0.1.0" in metadata


def test_a_version_without_its_changelog_section_is_refused(tmp_path: Path) -> None:
    dist = release.find("psych-store-sqlite")
    changelog = (ROOT / "CHANGELOG.md").read_text()
    release.check_changelog(dist, changelog)  # the released version has its section
    unannounced = release.Distribution(dist.name, "0.1.99", dist.folder)
    with pytest.raises(release.ReleaseError, match=r"no '### \[0.1.99\]' section"):
        release.check_changelog(unannounced, changelog)
    done = _release("no-such-distribution")
    assert done.returncode == 1
    assert "known: psych-adapter-kit" in done.stderr


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    command = ["uv", "build", "--quiet", "--all-packages", "--wheel", "--out-dir", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("name", NAMES)
def test_each_wheel_holds_what_it_should_and_nothing_it_should_not(wheels: Path, name: str) -> None:
    dist = release.find(name)
    wheel = wheels / f"{dist.package}-{dist.version}-py3-none-any.whl"
    release.check_wheel(dist, wheel)


def test_the_wheel_check_finds_a_stray_test_and_a_missing_marker(tmp_path: Path) -> None:
    dist = release.find("psych-store-sqlite")
    wheel = tmp_path / f"{dist.package}-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{dist.package}/__init__.py", "")
        archive.writestr(f"{dist.package}/tests/test_x.py", "")
    with pytest.raises(release.ReleaseError, match=r"lacks psych_store_sqlite/py\.typed"):
        release.check_wheel(dist, wheel)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{dist.package}/py.typed", "")
    with pytest.raises(release.ReleaseError, match="holds what it must not"):
        release.check_wheel(dist, wheel)

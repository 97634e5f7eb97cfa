"""The documentation site: docs/ built with MkDocs (Material) in strict mode, as `nox -s docs`
builds it; any warning (a broken link, a page left out of the navigation) fails it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_site_builds_in_strict_mode_with_every_page(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    pages = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md"))
    for page in pages:
        built = tmp_path / "site" / page.with_suffix("") / "index.html"
        if page.name == "index.md":
            built = tmp_path / "site" / page.parent / "index.html"
        assert built.exists(), f"{page} was not built"


def test_a_broken_link_or_a_page_left_out_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    deployment = copy / "docs" / "deployment.md"
    deployment.write_text(deployment.read_text() + "\nSee [the missing page](missing.md).\n")
    done = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "missing.md" in done.stderr
    deployment.write_text((ROOT / "docs" / "deployment.md").read_text())
    (copy / "docs" / "orphan.md").write_text("# Not in the navigation\n")
    done = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stderr

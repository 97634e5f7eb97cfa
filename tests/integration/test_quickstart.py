"""The README's quick start, run as a user runs it: a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = (
    "A1 has shipped.\n"
    "input=0 output=0 cache_read=0 cache_write=0 cache_write_1h=0 reasoning=0 None\n"
)


def test_the_quickstart_example_prints_exactly_its_two_lines() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED
    assert done.stderr == ""


def test_the_quickstart_script_runs_it_through_uv() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "quickstart.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED


def test_the_readme_shows_the_example_exactly() -> None:
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "examples" / "quickstart.py").read_text()
    assert f"```python\n{example}```" in readme

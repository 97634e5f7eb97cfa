"""Every ```python block in README.md, docs/ and the skills runs, and prints what it says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs._blocks import (
    ROOT,
    VERBATIM_COPIES,
    Block,
    all_blocks,
    markdown_files,
    python_blocks,
)

BLOCKS = all_blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_block_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block.code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stderr}"
    if block.output is not None:
        assert done.stdout == block.output, f"{block.id} printed something else"


def test_there_are_examples_to_run() -> None:
    assert len(BLOCKS) >= 5
    assert any(block.path.name == "README.md" for block in BLOCKS)


def test_every_skill_has_front_matter_and_a_runnable_example() -> None:
    skills = sorted((ROOT / ".agents" / "skills").glob("*/SKILL.md"))
    assert skills, "no skills found"
    for skill in skills:
        text = skill.read_text()
        assert text.startswith("---\n"), f"{skill}: no front matter"
        front = text.split("---\n")[1]
        assert f"name: {skill.parent.name}\n" in front, f"{skill}: name must match its folder"
        assert "description: " in front, f"{skill}: no description"
        assert python_blocks(skill), f"{skill}: no runnable ```python example"


def test_the_block_finder_pairs_outputs() -> None:
    sample = ROOT / "README.md"
    assert sample in markdown_files()
    paired = [block for block in python_blocks(sample) if block.output is not None]
    assert paired, "the README's quick start should show what it prints"


@pytest.mark.parametrize("page", VERBATIM_COPIES, ids=[page.name for page in VERBATIM_COPIES])
def test_the_sketches_in_copied_pages_parse(page: Path) -> None:
    blocks = python_blocks(page) if page.exists() else []
    for block in blocks:
        compile(block.code, block.id, "exec")  # a SyntaxError fails the test
    assert page.exists(), f"{page} is missing: run `uv run python scripts/gen_docs.py`"

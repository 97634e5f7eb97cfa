"""Finding the code blocks of the project's Markdown, and what each must print."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """A ```python block, and the ```output block right after it, if any."""

    path: Path
    line: int
    code: str
    output: str | None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


VERBATIM_COPIES = (ROOT / "docs" / "design.md", ROOT / "docs" / "changelog.md")
"""Pages that scripts/gen_docs.py copies byte for byte from DESIGN.md and CHANGELOG.md. Their
code blocks sketch the design rather than show examples, so they are checked to parse, not
run (tests/docs/test_examples.py)."""


def markdown_files() -> list[Path]:
    """README.md, every skill and docs/**/*.md (in that order)."""
    files = [ROOT / "README.md"]
    files += sorted((ROOT / ".agents" / "skills").glob("*/SKILL.md"))
    files += sorted((ROOT / "docs").rglob("*.md")) if (ROOT / "docs").exists() else []
    return [path for path in files if path.exists()]


def python_blocks(path: Path) -> list[Block]:
    """The runnable blocks of one file."""
    text = path.read_text()
    fences = list(_FENCE.finditer(text))
    blocks: list[Block] = []
    for index, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        output = None
        if index + 1 < len(fences):
            following = fences[index + 1]
            between = text[fence.end() : following.start()]
            if following.group(1) == "output" and not between.strip():
                output = following.group(2)
        line = text.count("\n", 0, fence.start()) + 1
        blocks.append(Block(path, line, fence.group(2), output))
    return blocks


def all_blocks() -> list[Block]:
    """Every block to run, once: a guide generated from a skill repeats the skill's blocks,
    which run under the skill's name."""
    seen: set[tuple[str, str | None]] = set()
    blocks: list[Block] = []
    for path in markdown_files():
        if path in VERBATIM_COPIES:
            continue
        for block in python_blocks(path):
            if (block.code, block.output) not in seen:
                seen.add((block.code, block.output))
                blocks.append(block)
    return blocks

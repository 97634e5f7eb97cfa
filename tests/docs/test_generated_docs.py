"""docs/ is what scripts/gen_docs.py generates, and the check notices when it is not.

The failing cases run on a copy of the parts of the repository the generator reads, so the
working tree is never touched.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.docgen import GENERATED_MARKER, check, generate, write
from scripts.docgen._pages import COPIES
from tests.docs._blocks import ROOT

REGENERATE = "uv run python scripts/gen_docs.py"


def test_the_committed_docs_are_what_the_code_generates() -> None:
    problems = check(ROOT)
    assert not problems, f"run `{REGENERATE}`:\n" + "\n".join(problems)


def test_the_check_command_passes_on_a_clean_tree() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/gen_docs.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "docs/ matches" in done.stdout


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """What the generator reads (sources, skills, scripts, docs, CHANGELOG and DESIGN)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for src in sorted((ROOT / "packages").glob("*/src")):
        shutil.copytree(src, tmp_path / src.relative_to(ROOT), ignore=ignore)
    for folder in (".agents/skills", "scripts/docgen", "docs"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=ignore)
    for file in ("CHANGELOG.md", "DESIGN.md", "ROADMAP.md", "scripts/gen_docs.py"):
        shutil.copy2(ROOT / file, tmp_path / file)
    write(tmp_path)  # as the working tree would be after regenerating
    assert check(tmp_path) == []
    return tmp_path


def _check_command(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "gen_docs.py"), "--check", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_changed_docstring_of_an_export_fails_the_check_until_regenerated(copy: Path) -> None:
    source = copy / "packages/psych-runtime/src/psych_runtime/runtime/_dispatch.py"
    text = source.read_text()
    old = '"""Admit a run of `spec` on `input` and return its id at once'
    assert old in text, "the test edits dispatch()'s docstring: update it to the new one"
    source.write_text(text.replace(old, '"""Admit a run (a changed sentence) of `spec` on `input`'))

    problems = check(copy)
    assert len(problems) == 1
    assert problems[0].startswith("docs/api.md differs from what the code generates")
    assert "+Admit a run (a changed sentence) of `spec` on `input`" in problems[0]

    done = _check_command(copy)
    assert done.returncode == 1
    assert "docs/api.md differs" in done.stdout
    assert REGENERATE in done.stdout

    write(copy)
    assert check(copy) == []
    assert _check_command(copy).returncode == 0


def test_a_changed_signature_fails_the_check(copy: Path) -> None:
    source = copy / "packages/psych-runtime/src/psych_runtime/_surface/_reading.py"
    text = source.read_text()
    old = "async def read_log(store: ScopedStore, run_id: str) -> list[Record]:"
    assert old in text
    source.write_text(text.replace(old, old.replace("run_id: str", "run_id: str, limit: int = 0")))
    [problem] = check(copy)
    changed = "async def read_log(store: ScopedStore, run_id: str, limit: int = 0) -> list[Record]"
    assert f"+{changed}" in problem


def test_a_changed_skill_fails_the_check_of_its_guide(copy: Path) -> None:
    skill = copy / ".agents/skills/streaming/SKILL.md"
    skill.write_text(skill.read_text() + "\nOne more sentence.\n")
    problems = check(copy)
    assert [p.splitlines()[0] for p in problems] == [
        "docs/guides/streaming.md differs from what the code generates:"
    ]


def test_a_page_nothing_generates_any_more_is_reported_and_removed(copy: Path) -> None:
    shutil.rmtree(copy / ".agents/skills/streaming")
    problems = check(copy)
    assert "docs/guides/streaming.md is stale: nothing generates it now" in problems
    write(copy)
    assert not (copy / "docs/guides/streaming.md").exists()
    assert check(copy) == []


def test_a_hand_written_page_is_left_alone_and_listed(copy: Path) -> None:
    (copy / "docs" / "operations.md").write_text("# Operations\n\nBy hand.\n")
    problems = check(copy)
    assert [p.splitlines()[0] for p in problems] == [
        "docs/index.md differs from what the code generates:"
    ]
    write(copy)
    assert (copy / "docs" / "operations.md").read_text() == "# Operations\n\nBy hand.\n"
    assert "- [Operations](operations.md)" in (copy / "docs" / "index.md").read_text()


def test_the_changelog_and_the_design_are_copied_byte_for_byte() -> None:
    pages = generate(ROOT)
    assert pages["docs/changelog.md"].encode() == (ROOT / "CHANGELOG.md").read_bytes()
    assert pages["docs/design.md"].encode() == (ROOT / "DESIGN.md").read_bytes()
    assert pages["docs/ROADMAP.md"].encode() == (ROOT / "ROADMAP.md").read_bytes()


def test_every_generated_page_says_so_and_how_to_regenerate() -> None:
    for page, text in generate(ROOT).items():
        if page in COPIES:  # byte-for-byte copies carry no marker
            continue
        assert text.startswith(GENERATED_MARKER), page
        assert REGENERATE in text.splitlines()[0], page


def test_the_reference_documents_every_export_once_in_its_room() -> None:
    import psych_runtime
    from psych_runtime import a2a, conversations, errors, mcp, ports, records, workflows

    api = generate(ROOT)["docs/api.md"]
    sections = re.split(r"^## `(psych_runtime[.\w]*)`$", api, flags=re.MULTILINE)
    by_room = dict(zip(sections[1::2], sections[2::2], strict=True))
    rooms = (psych_runtime, records, ports, errors, workflows, mcp, a2a, conversations)
    assert list(by_room) == [r.__name__ for r in rooms]
    for room in rooms:
        prefix = room.__name__.removeprefix("psych_runtime").lstrip(".")
        shown = f"{prefix}." if prefix else ""
        for name in room.__all__:
            assert api.count(f'<a id="{name}"></a>') == 1, name
            assert f"#### `{shown}{name}`\n" in by_room[room.__name__], f"{room.__name__}.{name}"


def test_a_guide_names_each_export_as_its_room_does() -> None:
    guide = generate(ROOT)["docs/guides/stores.md"]
    assert "[`ports.Batch`](../api.md#Batch)" in guide
    assert "[`MemoryStore`](../api.md#MemoryStore)" in guide
    assert "[`errors.Conflict`](../api.md#Conflict)" in guide

"""Every install command the project prints installs Psych's own wheels and never asks an index.

Other authors publish distributions under some of our names (``psych-runtime`` on PyPI is an
unrelated project), so a pip or uv that may consult an index for a Psych distribution can
install someone else's code. The only safe form is the wheelhouse one,
``pip install --no-index --find-links "$PSYCH_WHEELHOUSE" ...``, and ``uv add`` of a Psych
distribution is never safe (the next ``uv sync`` asks an index again).

The commands are found in README.md, CONTRIBUTING.md, docs/deployment.md, every package's
README.md, the skills and the files `psych new` writes: on each line (backslash continuations
joined) and in each inline code span (which may wrap across lines).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_INSTALL = re.compile(
    r"(?<![\w./-])(?:"
    r"(?:python3?(?:\.\d+)? -m )?pip3? install|uv pip install|uv add|uv tool install"
    r"|pipx install|uvx|uv tool run|uv run --with"
    r")\b"
)
_END = re.compile(r"\s(?:&&|\|\||;|\||#)|`")
_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_PSYCH = re.compile(r"^psych[-_.]", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Found:
    """An install command, and where it was written."""

    path: Path
    line: int
    command: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.command}"


def documented_files(root: Path = ROOT) -> list[Path]:
    files = [root / "README.md", root / "CONTRIBUTING.md", root / "docs" / "deployment.md"]
    files += sorted(root.glob("packages/*/README.md"))
    files += sorted(p for p in (root / ".agents" / "skills").rglob("*") if p.is_file())
    templates = root / "packages" / "psych-cli" / "src" / "psych_cli" / "templates"
    files += sorted(p for p in templates.rglob("*") if p.is_file() and p.suffix == ".tmpl")
    return [p for p in files if "__pycache__" not in p.parts]


def install_commands(path: Path) -> list[Found]:
    """Every install command in `path`: per line, and per inline code span."""
    text = path.read_text(encoding="utf-8")
    found: list[Found] = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        found += [Found(path, start, " ".join(c.split())) for c in _commands_in(pending + line)]
        pending = ""
    for span in _SPAN.finditer(text):
        number = text.count("\n", 0, span.start()) + 1
        found += [Found(path, number, c) for c in _commands_in(" ".join(span[1].split()))]
    return list(dict.fromkeys(found))


def _commands_in(text: str) -> list[str]:
    commands = []
    for match in _INSTALL.finditer(text):
        rest = text[match.start() :]
        end = _END.search(rest, len(match[0]))
        commands.append(rest[: end.start() if end else len(rest)].strip())
    return commands


def why_unsafe(command: str) -> str | None:
    """Why `command` could install a Psych distribution from an index; None when it cannot."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    options = [w for w in words if w.startswith("-")]
    names = [_NAME.match(w.strip("'\"")) for w in words if not w.startswith("-")]
    psych = [m[0] for m in names if m and _PSYCH.match(m[0])]
    if command.startswith("uv add") and psych:
        return f"`uv add` records {', '.join(psych)} for a later `uv sync` to fetch from an index"
    if "--no-index" in options:
        return None
    if psych:
        return f"it may fetch {', '.join(psych)} from an index: add --no-index and the wheelhouse"
    local = [w for w in words if w in ("-e", "--editable", "-r", "--requirement") or "/" in w]
    local += [w for w in words if w == "." or w.startswith((".[", "'.[", '".['))]
    if local:
        return (
            "what it installs may depend on a Psych distribution, which it may fetch from an "
            "index: add --no-index and the wheelhouse"
        )
    return None


_UNSAFE = [
    'pip install "psych-runtime[sqlite]"',
    'pip install --find-links dist "psych-runtime[sqlite]" psych-cli',
    "pip install psych_cli==0.1.0",
    'pip install -e ".[dev]"',
    "pip install -r requirements.txt",
    "python -m pip install psych-store-postgres",
    "uv pip install --find-links dist psych-core",
    "uv add psych-runtime",
    'uv add --no-index --find-links "$PSYCH_WHEELHOUSE" psych-runtime',
    "uv tool install psych-cli",
    "pipx install psych-cli",
    "uvx --from psych-cli psych new demo",
]
_SAFE = [
    'pip install --no-index --find-links "$PSYCH_WHEELHOUSE" "psych-runtime[sqlite]" psych-cli',
    'pip install --no-index --find-links "$PSYCH_WHEELHOUSE" -e ".[dev]"',
    'uv tool install --no-index --find-links "$PSYCH_WHEELHOUSE" psych-cli',
    "pip install uv",
    "uv add httpx",
]


@pytest.mark.parametrize("command", _UNSAFE)
def test_a_command_that_may_ask_an_index_for_a_psych_distribution_is_unsafe(command: str) -> None:
    assert why_unsafe(command) is not None


@pytest.mark.parametrize("command", _SAFE)
def test_a_wheelhouse_command_or_one_without_psych_is_safe(command: str) -> None:
    assert why_unsafe(command) is None


def test_commands_are_found_in_lines_code_spans_and_continuations(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `pip install\n"
        '"psych-runtime[sqlite]"` first, then:\n\n'
        "```\n"
        "python -m pip install \\\n"
        "    psych-cli && psych new demo   # a project\n"
        "```\n"
    )
    found = [(f.line, f.command) for f in install_commands(page)]
    assert (1, 'pip install "psych-runtime[sqlite]"') in found
    assert (5, "python -m pip install psych-cli") in found
    assert all(why_unsafe(command) for line, command in found if "psych" in command)


def test_every_install_command_installs_from_the_wheelhouse_only() -> None:
    files = documented_files()
    found = [f for path in files for f in install_commands(path)]
    unsafe = [f"{f}\n    {why}" for f in found if (why := why_unsafe(f.command))]
    assert not unsafe, "install commands that could reach an index:\n" + "\n".join(unsafe)
    # The scan finds the commands it is meant to check, in every kind of file it covers.
    where = {f.path.relative_to(ROOT).parts[0] for f in found}
    assert {"README.md", "CONTRIBUTING.md", "docs", "packages", ".agents"} <= where, where
    assert any(f.path.suffix == ".tmpl" for f in found)


def test_the_projects_psych_new_writes_turn_uvs_indexes_off() -> None:
    # `uv run` in a project resolves its dependencies, psych-runtime among them: only a project
    # that turns the indexes off keeps every uv command there to the wheelhouse.
    templates = ROOT / "packages" / "psych-cli" / "src" / "psych_cli" / "templates"
    found = sorted(templates.glob("*/pyproject.toml.tmpl"))
    assert [p.parent.name for p in found] == ["basic", "fastapi", "tour"]
    for path in found:
        project = tomllib.loads(path.read_text().replace("{{project}}", "demo"))
        assert project["tool"]["uv"]["no-index"] is True, path

"""`psych new`: write a project the user owns, from a template shipped in this package.

A template is a folder under ``psych_cli/templates``. Every file in it is written with its
``.tmpl`` suffix taken off (the suffix keeps the template's Python out of this package's own
imports and checks); ``{{project}}`` in a file becomes the project's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from psych_cli._exit import CliError, ExitCode

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


class Template(StrEnum):
    """The projects `psych new` can write."""

    basic = "basic"
    """``main.py``: one agent run in-process, on a real model when OPENAI_API_KEY is set."""
    fastapi = "fastapi"
    """A FastAPI app that admits runs and returns at once, a worker process, and tests."""
    tour = "tour"
    """``tour.py``: a thread, an approval, a question, memory, a skill on demand and a
    workflow, offline."""


@dataclass(frozen=True, slots=True)
class Written:
    """What `new_project` did."""

    folder: Path
    files: tuple[str, ...]
    replaced: tuple[str, ...]


def new_project(destination: Path, template: Template, *, force: bool) -> Written:
    """Write `template` into `destination` (created if missing).

    Raises:
        CliError: ``USAGE`` when the folder's name cannot name a project, when it is a file,
            or when it exists and is not empty and `force` is off.
    """
    folder = destination.resolve()
    name = folder.name
    if not _NAME.match(name):
        raise CliError(
            f"{name!r} cannot name a project: start with a letter, then letters, digits, "
            "'-', '_' or '.'",
            ExitCode.USAGE,
        )
    if folder.exists() and not folder.is_dir():
        raise CliError(f"{destination} exists and is a file", ExitCode.USAGE)
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise CliError(
            f"{destination} exists and is not empty; nothing was written",
            ExitCode.USAGE,
            hint="choose another name, or pass --force to write the template's files into it "
            "(files of the same name are replaced; others are left alone)",
        )
    files: list[str] = []
    replaced: list[str] = []
    for relative, source in _template_files(template):
        target = folder / relative
        if target.exists():
            replaced.append(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text(encoding="utf-8").replace("{{project}}", name))
        files.append(relative)
    return Written(folder, tuple(files), tuple(replaced))


def _template_files(template: Template) -> list[tuple[str, Traversable]]:
    root = resources.files("psych_cli") / "templates" / template.value
    found: list[tuple[str, Traversable]] = []

    def walk(folder: Traversable, prefix: str) -> None:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.is_dir():
                if entry.name != "__pycache__":
                    walk(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".tmpl"):
                found.append((prefix + entry.name.removesuffix(".tmpl"), entry))

    walk(root, "")
    return found

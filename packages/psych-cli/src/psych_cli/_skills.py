"""`psych skills`: the library's skills for coding agents, copied into a project.

An installed psych-cli carries the skills as package data (``psych_cli/skills``, copied from
the repository's ``.agents/skills`` when the wheel is built). Run from a checkout of the
repository (an editable install), it reads ``.agents/skills`` itself.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from psych_cli._exit import CliError, ExitCode

_DESCRIPTION = re.compile(r"^description:\s*(.+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its folder's name and its front matter's description."""

    name: str
    description: str
    folder: Traversable


def bundled_skills() -> list[Skill]:
    """The skills this psych-cli carries, by name.

    Raises:
        CliError: ``USAGE`` when this installation has none (a broken build).
    """
    root = _skills_root()
    skills = []
    for folder in sorted(root.iterdir(), key=lambda entry: entry.name):
        page = folder / "SKILL.md"
        if folder.is_dir() and page.is_file():
            found = _DESCRIPTION.search(page.read_text(encoding="utf-8"))
            skills.append(Skill(folder.name, found.group(1).strip() if found else "", folder))
    return skills


def _skills_root() -> Traversable:
    packaged = resources.files("psych_cli") / "skills"
    if packaged.is_dir():
        return packaged
    # An editable install in the repository: packages/psych-cli/src/psych_cli/_skills.py.
    checkout = Path(__file__).resolve().parents[4] / ".agents" / "skills"
    if checkout.is_dir():
        return checkout
    raise CliError(
        "this psych-cli carries no skills (psych_cli/skills is missing from the package)",
        ExitCode.USAGE,
        hint="reinstall psych-cli from a wheel built from the repository",
    )


@dataclass(frozen=True, slots=True)
class Installed:
    """What `install_skills` did, by skill name."""

    folder: Path
    written: tuple[str, ...]
    unchanged: tuple[str, ...]


def install_skills(project: Path, *, force: bool) -> Installed:
    """Copy every skill into ``project/.agents/skills/<name>/``.

    A skill folder that is already there with the same files is left as it is. One that
    differs (an older version, or a skill of your own with the same name) is replaced only
    with `force`; skills of other names are never touched.

    Raises:
        CliError: ``USAGE`` when `project` is not a folder, or when skills differ and `force`
            is off (nothing is written then).
    """
    if not project.is_dir():
        raise CliError(f"{project} is not a folder", ExitCode.USAGE)
    target = project / ".agents" / "skills"
    skills = bundled_skills()
    unchanged = [s.name for s in skills if _same(s.folder, target / s.name)]
    differing = [s.name for s in skills if (target / s.name).exists() and s.name not in unchanged]
    if differing and not force:
        raise CliError(
            f"{len(differing)} skill folder(s) in {target} differ from this version's: "
            f"{', '.join(differing)}; nothing was written",
            ExitCode.USAGE,
            hint="pass --force to replace them (other skills are left alone)",
        )
    written = []
    for skill in skills:
        if skill.name in unchanged:
            continue
        destination = target / skill.name
        if destination.exists():
            shutil.rmtree(destination)
        _copy(skill.folder, destination)
        written.append(skill.name)
    return Installed(target, tuple(written), tuple(unchanged))


def _files(folder: Traversable, prefix: str = "") -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in folder.iterdir():
        if entry.is_dir():
            if entry.name != "__pycache__":
                found.update(_files(entry, f"{prefix}{entry.name}/"))
        else:
            found[prefix + entry.name] = entry.read_bytes()
    return found


def _same(source: Traversable, destination: Path) -> bool:
    return destination.is_dir() and _files(source) == _files(destination)


def _copy(source: Traversable, destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.is_dir():
            if entry.name != "__pycache__":
                _copy(entry, destination / entry.name)
        else:
            (destination / entry.name).write_bytes(entry.read_bytes())

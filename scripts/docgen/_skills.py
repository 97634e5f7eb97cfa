"""The skills under ``.agents/skills``: their front matter, and which public names each covers.

A skill says which exported names it teaches in its front matter, under the Agent Skills
``metadata`` map (so the file stays valid for every skills loader)::

    ---
    name: approvals
    description: Pause a run for a person's approval ...
    metadata:
      covers: approve deny ArgRule NotAwaitingApproval
    ---

``covers`` is one string of names separated by spaces; a long list may be folded (``>-``).
A name is written plain (``Batch``, not ``ports.Batch``): no name is exported by two rooms, so
each says where it lives. Every name in the ``__all__`` of ``psych_runtime`` and of its rooms
(``records``, ``ports``, ``errors``) must be covered by at least one skill (the docs tests check
it), and the guide generated from a skill links each covered name to the API reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class SkillPage:
    """One ``SKILL.md``: its folder's name, front matter and the Markdown after it."""

    name: str
    path: Path
    front: dict[str, Any]
    body: str

    @property
    def description(self) -> str:
        return str(self.front.get("description", ""))

    @property
    def covers(self) -> tuple[str, ...]:
        """The public names this skill teaches, as its front matter lists them."""
        metadata = self.front.get("metadata") or {}
        return tuple(str(metadata.get("covers") or "").split())


def read_skill(path: Path) -> SkillPage:
    """Parse one ``SKILL.md``.

    Raises:
        ValueError: when it has no front matter, or the front matter is not a YAML mapping.
    """
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{path}: no front matter (the file must start with a line '---')")
    front_text, separator, body = text[4:].partition("\n---\n")
    if not separator:
        raise ValueError(f"{path}: the front matter has no closing line '---'")
    front = yaml.safe_load(front_text)
    if not isinstance(front, dict):
        raise ValueError(f"{path}: the front matter is not a YAML mapping")
    return SkillPage(path.parent.name, path, front, body.lstrip("\n"))


def read_skills(root: Path) -> list[SkillPage]:
    """Every skill of the repository at `root`, by name."""
    folder = root / ".agents" / "skills"
    return [read_skill(path) for path in sorted(folder.glob("*/SKILL.md"))]

"""Agent skills: which a spec inlines, which it lists for the model to load, and the links
between them (``[refunds](skill:refunds)``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psych_core._spec import Skill

LOAD_SKILL_TOOL = "load_skill"
"""The name of the built-in tool an `AgentSpec` with on-demand skills offers the model."""

SKILL_NAME = re.compile(r"^[a-z0-9_-]{1,64}$")
"""The name an on-demand skill must have: the model types it to load the skill."""

SKILL_LINK = re.compile(r"\[[^\]\n]*\]\(skill:([^)\s]*)\)")
"""A markdown link to another skill of the same spec: ``[text](skill:NAME)``."""

INDEX_HEADING = "## Skills you can load"

INDEX_HINT = (
    f"Before following one of these skills, call `{LOAD_SKILL_TOOL}` with its name to read it."
)


def skill_links(text: str) -> tuple[str, ...]:
    """The skill names `text` links to (``[text](skill:NAME)``), in order, each once."""
    return tuple(dict.fromkeys(SKILL_LINK.findall(text)))


def checks_links(context: object) -> bool:
    """Whether a spec's skill links are checked: always, except for a spec read back from a
    store (validated with ``context={"stored": True}``), which keeps the version it was
    admitted with and is never refused for what was written before links were checked."""
    return not (isinstance(context, Mapping) and context.get("stored"))


def skills_problem(spec: str, skills: Sequence[Skill], *, links: bool = True) -> str | None:
    """Why `skills` cannot serve the AgentSpec named `spec`, or None.

    An on-demand skill needs a name of lowercase letters, digits, ``-`` or ``_`` that no other
    skill of the spec has, and a description (all the model sees of it until it loads it).
    With `links`, every ``skill:NAME`` link in any skill's instructions must name a skill of
    the spec.
    """
    names = [skill.name for skill in skills]
    for skill in skills:
        if not skill.on_demand:
            continue
        where = f"AgentSpec {spec!r} skill {skill.name!r}"
        if not SKILL_NAME.match(skill.name):
            return (
                f"{where} is on demand, so its name must be 1 to 64 lowercase letters, digits, "
                "'-' or '_' (the model types it to load the skill)"
            )
        if not skill.description.strip():
            return (
                f"{where} is on demand, so it needs a description: it is all the model sees "
                "of the skill until it loads it"
            )
        if names.count(skill.name) > 1:
            return f"{where} is on demand, so no other skill of the spec may have its name"
    if links:
        known = set(names)
        for skill in skills:
            for name in skill_links(skill.instructions):
                if name not in known:
                    return (
                        f"AgentSpec {spec!r} skill {skill.name!r} links to skill {name!r}, which "
                        f"the spec does not have (its skills: {', '.join(map(repr, names))})"
                    )
    return None


def skills_prompt(skills: Sequence[Skill]) -> list[str]:
    """The system prompt's parts for `skills`: each inline skill under its name as a heading,
    then the index of the on-demand skills (name and description, in order) with the
    sentence telling the model to load one before following it."""
    parts = [skill.section for skill in skills if not skill.on_demand]
    on_demand = [skill for skill in skills if skill.on_demand]
    if on_demand:
        lines = [f"- {skill.name}: {' '.join(skill.description.split())}" for skill in on_demand]
        parts.append("\n".join([INDEX_HEADING, INDEX_HINT, *lines]))
    return parts

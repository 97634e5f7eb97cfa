"""One skill per feature: every public name is taught by a skill, and the entry point knows
every skill.

A skill lists the names it teaches in its front matter (``metadata: covers: ...``, see
scripts/docgen/_skills.py), plain (``Batch``, not ``ports.Batch``): no name is in two rooms. A
new export of any room that no skill covers fails here, as does a skill that claims a name no
room exports.
"""

from __future__ import annotations

import re

import psych_runtime
from psych_runtime import a2a, conversations, errors, mcp, ports, records, workflows
from scripts.docgen._skills import read_skills
from tests.docs._blocks import ROOT

ROOMS = (psych_runtime, records, ports, errors, workflows, mcp, a2a, conversations)
EXPORTED = {name: room.__name__ for room in ROOMS for name in room.__all__}

SKILLS = read_skills(ROOT)
HOW = (
    "add the name to the `metadata: covers:` list in the front matter of the skill that teaches "
    "it (.agents/skills/<feature>/SKILL.md; write the skill if the feature has none), then run "
    "`uv run python scripts/gen_docs.py`"
)


def test_every_exported_name_is_covered_by_a_skill() -> None:
    covered = {name for skill in SKILLS for name in skill.covers}
    missing = [f"{room}.{name}" for name, room in EXPORTED.items() if name not in covered]
    assert not missing, f"exported names no skill covers: {', '.join(missing)}; {HOW}"


def test_skills_cover_only_exported_names() -> None:
    wrong = [f"{s.name}: {n}" for s in SKILLS for n in s.covers if n not in EXPORTED]
    assert not wrong, (
        "skills cover names that neither psych_runtime nor its rooms (records, ports, errors, "
        f"workflows, mcp, a2a, conversations) export: {', '.join(wrong)}; name each plain, as its room exports it "
        "(Batch, not ports.Batch)"
    )


def test_a_skill_names_each_name_once() -> None:
    repeated = [s.name for s in SKILLS if len(set(s.covers)) != len(s.covers)]
    assert not repeated


def test_the_entry_point_skill_points_to_every_skill() -> None:
    entry = next(skill for skill in SKILLS if skill.name == "psych")
    absent = [
        skill.name
        for skill in SKILLS
        if skill.name != "psych" and not re.search(rf"`{re.escape(skill.name)}`", entry.body)
    ]
    assert not absent, (
        f".agents/skills/psych/SKILL.md does not point to: {', '.join(absent)}; "
        "name each skill in backticks in its steps"
    )


def test_the_entry_point_skill_describes_the_command() -> None:
    entry = next(skill for skill in SKILLS if skill.name == "psych").body
    for command in ("psych new", "psych skills install", "psych inspect", "psych runs"):
        assert command in entry, command


def test_every_skill_has_a_description_that_says_when_to_use_it() -> None:
    short = [s.name for s in SKILLS if len(s.description) < 40]
    assert not short, f"skills whose description is too short to choose them by: {short}"

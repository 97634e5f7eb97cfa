"""Ship the repository's skills inside the package, as ``psych_cli/skills``.

`psych skills install` copies them into a project. They are written once, in the repository's
``.agents/skills``; building the wheel or the sdist from a checkout copies them in. A wheel
built from the sdist finds them already in ``src/psych_cli/skills``, where the sdist put them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class SkillsHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        skills = Path(self.root).parent.parent / ".agents" / "skills"
        if not skills.is_dir():
            return  # building from the sdist: the skills are in the source tree already
        inside = "psych_cli/skills" if self.target_name == "wheel" else "src/psych_cli/skills"
        for path in sorted(skills.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(skills).as_posix()
                build_data["force_include"][str(path)] = f"{inside}/{relative}"

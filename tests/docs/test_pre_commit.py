"""The pre-commit hooks run exactly the ruff gates of the check's `lint` session."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _lint_commands() -> list[list[str]]:
    """The commands the nox `lint` session runs, as written in noxfile.py."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    lint = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "lint"
    )
    commands: list[list[str]] = []
    for call in ast.walk(lint):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "_uv_run":
            words = [arg.value for arg in call.args[2:] if isinstance(arg, ast.Constant)]
            commands.append([str(word) for word in words])
    return commands


def test_the_hooks_are_the_lint_sessions_gates() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    prefix = ["uv", "run", "--frozen", "--no-sync"]
    entries = []
    for hook in hooks:
        words = hook["entry"].split()
        assert words[:4] == prefix, f"hook {hook['id']} must run in the locked environment"
        assert hook["pass_filenames"] is False, "the gates run on the whole tree, as in CI"
        entries.append([*words[4:], "."])
    assert entries == _lint_commands()

"""docs/, generated from the repository: ``python scripts/gen_docs.py`` writes it and
``python scripts/gen_docs.py --check`` fails when a committed page differs from what the code,
the skills, CHANGELOG.md and DESIGN.md generate now.

- ``docs/api.md``: the ``__all__`` of ``psych_runtime`` and of its rooms ``records``, ``ports``,
  ``errors``, ``workflows``, ``mcp``, ``a2a`` and ``conversations``, one section each
  (signatures and docstrings, read with griffe), after the hand-written
  ``scripts/docgen/api_intro.md`` and its worked example.
- ``docs/guides/<skill>.md``: ``.agents/skills/<skill>/SKILL.md``.
- ``docs/changelog.md``, ``docs/design.md``, ``docs/ROADMAP.md``: ``CHANGELOG.md``, ``DESIGN.md``
  and ``ROADMAP.md``, byte for byte.
- ``docs/index.md``: the list of every page, hand-written ones (``docs/deployment.md``) too.

Pages written by hand live in ``docs/`` too; the generator never touches a page that does not
start with its marker, and reports a generated page it would no longer write as stale.
"""

from __future__ import annotations

from ._pages import GENERATED_MARKER, check, generate, write

__all__ = ["GENERATED_MARKER", "check", "generate", "main", "write"]


def main(argv: list[str] | None = None) -> int:
    """The command line: ``[--check] [--root PATH]``; returns the exit code."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="gen_docs.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument(
        "--root", type=Path, default=Path(__file__).resolve().parents[2], help="the repository"
    )
    options = parser.parse_args(argv)
    if options.check:
        problems = check(options.root)
        for problem in problems:
            print(problem)
        if problems:
            print(
                "\ndocs/ is out of date: run `uv run python scripts/gen_docs.py` and commit docs/."
            )
            return 1
        print("docs/ matches what the code, the skills, CHANGELOG.md and DESIGN.md generate.")
        return 0
    for path in write(options.root):
        print(f"wrote {path}")
    return 0

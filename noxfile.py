"""Every check, one session each. `scripts/check.sh` runs them all; `-s NAME` runs one.

Sessions run through uv in environments synced from the committed lock file: the default
`.venv` for Python 3.12, `.nox/py3.13` for the 3.13 test run.
"""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "none"
nox.options.error_on_missing_interpreters = True

PYTHONS = ("3.12", "3.13")


def _uv_run(session: nox.Session, python: str, *args: str) -> None:
    env = {"UV_PYTHON_DOWNLOADS": "never"}
    if python != "3.12":
        env["UV_PROJECT_ENVIRONMENT"] = os.path.join(".nox", f"py{python}")
    session.run(
        "uv",
        "sync",
        "--frozen",
        "--all-packages",
        "--quiet",
        "--python",
        python,
        env=env,
        external=True,
    )
    session.run(
        "uv", "run", "--frozen", "--no-sync", "--python", python, *args, env=env, external=True
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint rules and formatting."""
    _uv_run(session, "3.12", "ruff", "check", ".")
    _uv_run(session, "3.12", "ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict over every package, the examples and the tests."""
    _uv_run(session, "3.12", "mypy", "packages", "examples", "tests", "noxfile.py")


@nox.session
def imports(session: nox.Session) -> None:
    """import-linter: the dependency direction of DESIGN.md section 2."""
    _uv_run(session, "3.12", "lint-imports")


@nox.session(name="unit")
@nox.parametrize("python", PYTHONS, ids=PYTHONS)
def unit(session: nox.Session, python: str) -> None:
    """Pure core and runtime tests with the fake model and the memory store."""
    _uv_run(session, python, "pytest", "tests/unit", *session.posargs)


@nox.session
def contract(session: nox.Session) -> None:
    """The store contract suite against every store adapter."""
    _uv_run(session, "3.12", "pytest", "tests/contract", *session.posargs)


@nox.session
def integration(session: nox.Session) -> None:
    """Real processes."""
    _uv_run(session, "3.12", "pytest", "tests/integration", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Every code block in README.md, docs/ and the skills runs, and prints what it says."""
    _uv_run(session, "3.12", "pytest", "tests/docs", *session.posargs)

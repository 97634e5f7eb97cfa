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
    """mypy --strict over every package, the examples, the benchmarks and the tests."""
    _uv_run(session, "3.12", "mypy", "packages", "examples", "tests", "bench", "noxfile.py")


@nox.session
def imports(session: nox.Session) -> None:
    """import-linter: the dependency direction of DESIGN.md section 2."""
    _uv_run(session, "3.12", "lint-imports")


def _unit(python: str) -> None:
    @nox.session(name=f"unit-{python}")
    def unit(session: nox.Session) -> None:
        """Pure core and runtime tests with the fake model and the memory store."""
        _uv_run(session, python, "pytest", "tests/unit", *session.posargs)


for _python in PYTHONS:
    _unit(_python)


@nox.session
def contract(session: nox.Session) -> None:
    """The contract suites: every store adapter, and every sandbox backend this host has
    (after `scripts/sandbox-host.sh start`; a backend still missing fails, never skips)."""
    _start_sandbox_host(session)
    _start_services(session)
    _uv_run(session, "3.12", "pytest", "tests/contract", *session.posargs)


@nox.session
def integration(session: nox.Session) -> None:
    """Real processes."""
    _start_services(session)
    _uv_run(session, "3.12", "pytest", "tests/integration", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Every code block in README.md, docs/ and the skills runs, and prints what it says;
    docs/ is what `scripts/gen_docs.py` generates from the code and the skills now."""
    _uv_run(session, "3.12", "python", "scripts/gen_docs.py", "--check")
    _start_services(session)
    _uv_run(session, "3.12", "pytest", "tests/docs", *session.posargs)


@nox.session
def matrix(session: nox.Session) -> None:
    """Each adapter's wheel in a fresh environment, with the oldest and newest psych-core its
    range admits, passing its contract suite (`scripts/matrix.py`), from a wheelhouse built
    now (`scripts/wheelhouse.sh`)."""
    wheelhouse = _fresh_wheelhouse(session, "matrix")
    _start_sandbox_host(session)
    _start_services(session)
    _uv_run(session, "3.12", "python", "-m", "scripts.matrix", wheelhouse, *session.posargs)


@nox.session
def flavours(session: nox.Session) -> None:
    """The runtime alone, with SQLite, and with everything, each in a fresh environment from a
    wheelhouse built now, running the tests that apply and skipping the rest with a reason
    (`scripts/flavours.py`)."""
    wheelhouse = _fresh_wheelhouse(session, "flavours")
    _uv_run(session, "3.12", "python", "-m", "scripts.flavours", wheelhouse, *session.posargs)


def _fresh_wheelhouse(session: nox.Session, name: str) -> str:
    wheelhouse = os.path.join(".cache", name, "wheelhouse")
    session.run("rm", "-rf", wheelhouse, external=True)
    session.run("bash", "scripts/wheelhouse.sh", wheelhouse, silent=True, external=True)
    return wheelhouse


@nox.session(default=False)
def release(session: nox.Session) -> None:
    """Build one distribution alone and say its tag: `nox -s release -- psych-store-postgres`
    (`scripts/release.py`: the CHANGELOG section for its version, the wheel's contents)."""
    if len(session.posargs) != 1:
        session.error("name one distribution: nox -s release -- psych-store-postgres")
    _uv_run(session, "3.12", "python", "scripts/release.py", *session.posargs)


@nox.session(default=False)
def sandboxes(session: nox.Session) -> None:
    """The sandbox contract suite on every backend: subprocess, namespaces (bubblewrap) and
    docker (podman's Docker-compatible API). `scripts/sandbox-host.sh start` installs and starts
    what they need first; a backend that is still missing fails the run instead of skipping."""
    _start_sandbox_host(session)
    _uv_run(session, "3.12", "pytest", *(session.posargs or _SANDBOX_TESTS))


def _start_sandbox_host(session: nox.Session) -> None:
    output = session.run("bash", "scripts/sandbox-host.sh", "start", silent=True, external=True)
    settings = dict(
        line.split("=", 1) for line in str(output or "").splitlines() if line.startswith("PSYCH_")
    )
    session.env.update(settings)


_SANDBOX_TESTS = (
    "tests/contract/test_sandbox_subprocess.py",
    "tests/contract/test_sandbox_namespaces.py",
    "tests/contract/test_sandbox_docker.py",
)


def _start_services(session: nox.Session) -> None:
    """Start (or reuse) the databases the store tests need and export their settings
    (PSYCH_TEST_POSTGRES_DSN, ...): `scripts/dev-services.sh start`. A service that cannot be
    started fails the session here, so no store test runs without its server."""
    output = session.run("bash", "scripts/dev-services.sh", "start", silent=True, external=True)
    settings = dict(
        line.split("=", 1) for line in str(output or "").splitlines() if line.startswith("PSYCH_")
    )
    session.env.update(settings)

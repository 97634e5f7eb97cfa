"""Every check, one session each. `scripts/check.sh` runs them all; `-s NAME` runs one.

Sessions run through uv in environments synced from the committed lock file: the default
`.venv` for Python 3.12, `.nox/py3.13` for the 3.13 test run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.error_on_missing_interpreters = True

PYTHONS = ("3.12", "3.13")


def _uv_run(session: nox.Session, python: str, *args: str) -> None:
    env = _uv_sync(session, python)
    session.run(
        "uv", "run", "--frozen", "--no-sync", "--python", python, *args, env=env, external=True
    )


def _uv_sync(session: nox.Session, python: str) -> dict[str, str]:
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
    return env


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
def playground(session: nox.Session) -> None:
    """The example console (apps/playground): its server and worker on the real stores, and its
    containers' files, compose.yaml checked by Docker Compose itself (`scripts/compose-host.sh`
    fetches it; no container engine is needed)."""
    _start_services(session)
    _host_settings(session, "scripts/compose-host.sh")
    _uv_run(session, "3.12", "pytest", "tests/playground", *session.posargs)


@nox.session
def ui(session: nox.Session) -> None:
    """The playground's browser UI, from the npm workspace at the root: tsc (strict), ESLint, its
    unit tests and its production build."""
    _npm_ci(session)
    for script in ("typecheck", "lint", "test", "build"):
        session.run("npm", "run", script, external=True)


@nox.session
def browser(session: nox.Session) -> None:
    """The playground in Debian's Chromium: the Playwright tests (`npm run e2e`) against the built
    UI, served by the real server and worker (on SQLite, and on PostgreSQL for live text).
    `scripts/browser-host.sh start` installs Chromium first; Playwright never downloads a
    browser."""
    scripts = json.loads(Path("package.json").read_text(encoding="utf-8")).get("scripts", {})
    if "e2e" not in scripts:
        session.error(
            "package.json has no `e2e` script: the playground's browser tests are missing "
            "(add the script that runs them with Playwright)"
        )
    _host_settings(session, "scripts/browser-host.sh")
    # The chat's live words cross processes on PostgreSQL only: the tests run a second server
    # there, in a schema of its own under PSYCH_TEST_POSTGRES_DSN.
    _host_settings(session, "scripts/services/postgres.sh")
    session.env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    # The tests start `python -m psych_playground dev` from the workspace environment.
    _uv_sync(session, "3.12")
    _npm_ci(session)
    session.run("npm", "run", "build", external=True)
    session.run("npm", "run", "e2e", *session.posargs, external=True)


def _npm_ci(session: nox.Session) -> None:
    """Install the npm workspace's packages from package-lock.json when node_modules is missing
    or older than the lock (npm writes node_modules/.package-lock.json at every install)."""
    lock = Path("package-lock.json")
    installed = Path("node_modules", ".package-lock.json")
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        session.run("npm", "ci", "--no-audit", "--no-fund", external=True)


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
    _host_settings(session, "scripts/sandbox-host.sh")


_SANDBOX_TESTS = (
    "tests/contract/test_sandbox_subprocess.py",
    "tests/contract/test_sandbox_namespaces.py",
    "tests/contract/test_sandbox_docker.py",
)


def _start_services(session: nox.Session) -> None:
    """Start (or reuse) the databases the store tests need and export their settings
    (PSYCH_TEST_POSTGRES_DSN, ...): `scripts/dev-services.sh start`. A service that cannot be
    started fails the session here, so no store test runs without its server."""
    _host_settings(session, "scripts/dev-services.sh")


def _host_settings(session: nox.Session, script: str) -> None:
    """Run `script start` (install and start what it manages, or reuse it) and export the
    settings it prints (PSYCH_...=... lines); a script that fails fails the session."""
    output = session.run("bash", script, "start", silent=True, external=True)
    settings = dict(
        line.split("=", 1) for line in str(output or "").splitlines() if line.startswith("PSYCH_")
    )
    session.env.update(settings)

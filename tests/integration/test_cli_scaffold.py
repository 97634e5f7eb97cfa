"""A new user's path, from built wheels in a fresh virtual environment (not the workspace):
`psych new demo && cd demo && python main.py`, and a fastapi project whose own tests pass.

The Psych distributions are built with ``uv build`` into a temporary folder and installed
from those wheels. Their third-party dependencies are installed offline from uv's cache
(which ``uv sync`` filled), at exactly the versions uv.lock pins: ``uv export`` lists them
(psych-cli's dependencies and its ``template-fastapi`` group), ``uv pip install --offline
--no-deps`` installs them, and ``uv pip check`` proves the set complete. Nothing is fetched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = ("psych-core", "psych-runtime", "psych-store-sqlite", "psych-cli")
EXPECTED = (
    "No OPENAI_API_KEY set, so this run uses the fake model.\n"
    "\n"
    "Order A1 has shipped with DHL.\n"
    "\n"
    "completed | 1 turn, 1 tool call | 0 tokens | cost None\n"
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@dataclass(frozen=True)
class Fresh:
    """A virtual environment with the built wheels installed, and how to run in it."""

    venv: Path
    env: dict[str, str]

    def run(self, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )


def _uv() -> str:
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH: the scaffold test builds the wheels with `uv build`"
    return uv


def _call(*args: str, cwd: Path = ROOT) -> str:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    done = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Fresh:
    base = tmp_path_factory.mktemp("fresh")
    wheels = base / "wheels"
    uv = _uv()
    for distribution in DISTRIBUTIONS:
        _call(uv, "build", "--offline", "--wheel", "--package", distribution, "-o", str(wheels))
    requirements = base / "requirements.txt"
    _call(
        uv, "export", "--frozen", "--package", "psych-cli", "--group", "template-fastapi",
        "--no-dev", "--no-emit-workspace", "--no-hashes", "--no-annotate", "--no-header",
        "-o", str(requirements),
    )  # fmt: skip
    venv = base / "venv"
    _call(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python = str(venv / "bin" / "python")
    built = sorted(str(wheel) for wheel in wheels.glob("*.whl"))
    assert len(built) == len(DISTRIBUTIONS), built
    _call(uv, "pip", "install", "--offline", "--no-deps", "--python", python,
          "-r", str(requirements), *built)  # fmt: skip
    _call(uv, "pip", "check", "--python", python)

    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"OPENAI_API_KEY", "PYTHONPATH", "VIRTUAL_ENV", "PSYCH_STORE"}
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return Fresh(venv, env)


def test_the_packages_come_from_the_wheels_not_the_workspace(fresh: Fresh, tmp_path: Path) -> None:
    code = "import psych_cli, psych_runtime, psych_store_sqlite as s; print(psych_cli.__file__)"
    done = fresh.run("python", "-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(fresh.venv)


def test_psych_new_demo_then_python_main_py_prints_the_three_lines(
    fresh: Fresh, tmp_path: Path
) -> None:
    made = fresh.run("psych", "new", "demo", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    done = fresh.run("python", "main.py", cwd=tmp_path / "demo")
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED
    assert done.stderr == ""


def test_the_fastapi_projects_own_tests_pass(fresh: Fresh, tmp_path: Path) -> None:
    made = fresh.run("psych", "new", "api", "--template", "fastapi", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "api"
    done = fresh.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout, done.stdout


def test_the_wheel_carries_the_skills(fresh: Fresh, tmp_path: Path) -> None:
    done = fresh.run("psych", "skills", "install", ".", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    installed = tmp_path / ".agents" / "skills"
    source = ROOT / ".agents" / "skills"
    assert sorted(p.relative_to(installed) for p in installed.rglob("*") if p.is_file()) == sorted(
        p.relative_to(source) for p in source.rglob("*") if p.is_file()
    )


def test_the_generated_projects_pass_ruff_and_mypy_strict(tmp_path: Path) -> None:
    # Checked with the workspace's tools, which have every package the projects import.
    psych = [sys.executable, "-m", "psych_cli"]
    _call(*psych, "new", "demo", cwd=tmp_path)
    _call(*psych, "new", "api", "--template", "fastapi", cwd=tmp_path)
    rules = "E,F,W,I,B,UP,SIM,RUF,ASYNC,PT,C4,PIE,RET"
    for project in (tmp_path / "demo", tmp_path / "api"):
        ruff = [sys.executable, "-m", "ruff"]
        _call(*ruff, "check", "--isolated", "--select", rules, "--line-length", "100", ".",
              cwd=project)  # fmt: skip
        _call(*ruff, "format", "--isolated", "--line-length", "100", "--check", ".", cwd=project)
        _call(sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy"),
              ".", cwd=project)  # fmt: skip


def test_a_wheel_built_from_the_sdist_carries_the_skills(tmp_path: Path) -> None:
    # The release path: sdist first (the build hook copies .agents/skills into it), then the
    # wheel from the unpacked sdist, where the repository's skills are out of reach.
    uv = _uv()
    _call(uv, "build", "--offline", "--sdist", "--package", "psych-cli", "-o", str(tmp_path))
    [sdist] = tmp_path.glob("psych_cli-*.tar.gz")
    _call(uv, "build", "--offline", "--wheel", str(sdist), "-o", str(tmp_path / "wheel"))
    [wheel] = (tmp_path / "wheel").glob("psych_cli-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.startswith("psych_cli/skills/")}
    source = ROOT / ".agents" / "skills"
    expected = {
        f"psych_cli/skills/{p.relative_to(source).as_posix()}"
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped == expected

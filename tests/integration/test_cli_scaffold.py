"""A new user's path on a machine where nothing is cached, run with the commands the docs print.

README.md's "Install" block builds the wheelhouse (``scripts/wheelhouse.sh``: ``uv build``,
and pip fetching the third-party wheels uv.lock pins) with a uv cache of its own, and installs
from it into a fresh virtual environment. Then ``psych new demo && cd demo && python main.py``;
the commands the generated projects' READMEs and ``psych new`` print (``pip install``,
``uv run``, the fastapi project's ``pytest``); and a model server on 127.0.0.1 that the
generated apps reach only when ``PSYCH_ALLOW_LOOPBACK_MODEL=1``. Every command is read from
the file that prints it, and run as written.

All of it runs with an index on 127.0.0.1 first in line (pip's extra index, uv's first index)
that serves an impostor of every Psych distribution at version 99.0.0, as someone else's
distribution of the same name would be served: a command that asked an index for one of our
names would install it, and the index's log names every distribution it was asked for.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration._chat_server import ChatServer, completion, serve, tool_call, usage

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "packages" / "psych-cli" / "src" / "psych_cli" / "templates"
VERSIONS = {
    project["name"]: project["version"]
    for project in (
        tomllib.loads(path.read_text())["project"]
        for path in sorted(ROOT.glob("packages/*/pyproject.toml"))
    )
}
IMPOSTOR = "99.0.0"
EXPECTED = (
    "No OPENAI_API_KEY set, so this run uses the fake model.\n"
    "\n"
    "Order A1 has shipped with DHL.\n"
    "\n"
    "completed | 1 turn, 1 tool call | 0 tokens | cost None\n"
)
LOCAL_MODEL = "127.0.0.1:11434"  # where the READMEs' loopback examples point

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


# -- what the files print ----------------------------------------------------------------------

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def block(text: str, containing: str) -> list[str]:
    """The lines of the first fenced block in `text` that contains `containing`."""
    for fence in _FENCE.finditer(text):
        if containing in fence[1]:
            return fence[1].splitlines()
    raise AssertionError(f"no code block contains {containing!r}")


def line(lines: list[str], starting: str) -> str:
    [found] = [entry for entry in lines if entry.startswith(starting)]
    return found


def span(text: str, starting: str) -> str:
    """The inline code span of `text` that starts with `starting`."""
    spans: list[str] = re.findall(r"`([^`\n]+)`", text)
    [found] = [s for s in spans if s.startswith(starting)]
    return found


# -- an index that serves impostors -------------------------------------------------------------


def _impostor_wheel(folder: Path, name: str) -> Path:
    module = name.replace("-", "_")
    info = f"{module}-{IMPOSTOR}.dist-info"
    files = {
        f"{module}/__init__.py": f"raise ImportError('{name} {IMPOSTOR}: the impostor')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {IMPOSTOR}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: the scaffold test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{module}-{IMPOSTOR}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


class ImpostorIndex:
    """A PEP 503 index on 127.0.0.1 with a version 99.0.0 of every Psych distribution."""

    def __init__(self, folder: Path) -> None:
        self.asked: list[str] = []
        files = folder / "files"
        files.mkdir(parents=True)
        for name in VERSIONS:
            wheel = _impostor_wheel(files, name)
            page = folder / "simple" / name
            page.mkdir(parents=True)
            (page / "index.html").write_text(
                f'<html><body><a href="../../files/{wheel.name}">{wheel.name}</a></body></html>\n'
            )
        index = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                index.asked.append(self.path)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/simple"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def asked_for_psych(self) -> list[str]:
        """The requests for a Psych distribution's page or file."""
        return [path for path in self.asked if "psych" in path.lower()]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- the newcomer's machine ------------------------------------------------------------------


def _passes(name: str) -> bool:
    """Whether the caller's variable `name` reaches the newcomer's shell. Whatever says which
    Python, environment, project, uv cache or pip options to use stays out, so the commands
    behave as on a fresh machine; what the network needs (certificates, proxies) gets in."""
    if name.startswith("UV_"):
        return name in {"UV_SYSTEM_CERTS", "UV_NATIVE_TLS", "UV_DEFAULT_INDEX", "UV_INDEX_URL"}
    if name.startswith("PIP_"):
        return name in {"PIP_CERT", "PIP_CLIENT_CERT", "PIP_INDEX_URL", "PIP_DEFAULT_TIMEOUT"}
    blocked = ("VIRTUAL_ENV", "CONDA_", "PYTHON", "PYTEST_", "OPENAI_", "PSYCH_")
    return not name.startswith(blocked)


@dataclass(frozen=True)
class Machine:
    """A fresh virtual environment, the wheelhouse, and a shell that has both."""

    venv: Path
    wheelhouse: Path
    index: ImpostorIndex
    env: dict[str, str]

    def sh(
        self, script: str, cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run `script` in bash, as a user would type it; the index logs afresh."""
        self.index.asked.clear()
        return subprocess.run(
            ["bash", "-c", f"set -euo pipefail\n{script}"],
            cwd=cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def ok(self, script: str, cwd: Path, **kwargs: Any) -> str:
        done = self.sh(script, cwd, **kwargs)
        assert done.returncode == 0, f"{script}\nfailed:\n{done.stdout}\n{done.stderr}"
        assert not self.index.asked_for_psych(), (script, self.index.asked_for_psych())
        return done.stdout

    def installed(self) -> dict[str, str]:
        """The Psych distributions in the environment, by name: their versions."""
        code = (
            "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: "
            "d.version for d in m.distributions() if d.metadata['Name'].startswith('psych')}))"
        )
        return dict(json.loads(self.ok(f"python -c {shlex.quote(code)}", self.venv)))


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    base = tmp_path_factory.mktemp("newcomer")
    index = ImpostorIndex(base / "index")
    venv = base / "venv"
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH: scripts/wheelhouse.sh builds the wheels with `uv build`"
    workspace_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p != workspace_bin]
    proxy_free = ",".join(filter(None, [os.environ.get("NO_PROXY", ""), "127.0.0.1,localhost"]))
    env = {name: value for name, value in os.environ.items() if _passes(name)}
    env.update(
        PATH=os.pathsep.join([str(venv / "bin"), str(Path(uv).parent), *path]),
        VIRTUAL_ENV=str(venv),
        PSYCH_WHEELHOUSE=str(base / "wheelhouse"),
        UV_CACHE_DIR=str(base / "uv-cache"),  # empty: nothing a `uv sync` cached is used
        UV_PYTHON_DOWNLOADS="never",
        UV_NO_PROGRESS="1",
        UV_INDEX=index.url,
        PIP_EXTRA_INDEX_URL=index.url,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        NO_PROXY=proxy_free,
        no_proxy=proxy_free,
    )
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    fresh = Machine(venv, base / "wheelhouse", index, env)
    install = block((ROOT / "README.md").read_text(), "scripts/wheelhouse.sh")
    fresh.ok("\n".join(install), ROOT, timeout=480)
    try:
        yield fresh
    finally:
        index.close()


def test_the_readme_installs_every_distribution_from_the_wheels_it_built(machine: Machine) -> None:
    built = sorted(p.name for p in machine.wheelhouse.glob("psych_*.whl"))
    expected = [f"{name.replace('-', '_')}-{v}-py3-none-any.whl" for name, v in VERSIONS.items()]
    assert built == sorted(expected)
    installed = machine.installed()
    assert {"psych-core", "psych-runtime", "psych-store-sqlite", "psych-cli"} <= set(installed)
    assert installed == {name: VERSIONS[name] for name in installed}
    assert machine.ok("psych --version", machine.venv).strip() == f"psych {VERSIONS['psych-cli']}"


def test_the_index_serves_the_impostor_to_a_command_without_no_index(machine: Machine) -> None:
    # The command: --find-links alone lets pip ask the index, which wins with 99.0.0.
    done = machine.sh(
        "pip install --dry-run --ignore-installed --quiet --report - "
        '--find-links "$PSYCH_WHEELHOUSE" "psych-runtime[sqlite]" psych-cli',
        machine.venv,
    )
    assert done.returncode == 0, done.stderr
    chosen = {
        item["metadata"]["name"]: item["metadata"]["version"]
        for item in json.loads(done.stdout)["install"]
    }
    assert chosen["psych-runtime"] == chosen["psych-cli"] == IMPOSTOR
    assert machine.index.asked_for_psych()


def test_psych_new_demo_then_python_main_py_prints_the_three_lines(
    machine: Machine, tmp_path: Path
) -> None:
    command = line(block((ROOT / "README.md").read_text(), "psych new demo"), "psych new demo")
    out = machine.ok(command, tmp_path)
    assert out.endswith(EXPECTED), out


def test_the_readmes_tour_runs_every_stop_from_the_wheelhouse(
    machine: Machine, tmp_path: Path
) -> None:
    readme = (ROOT / "README.md").read_text()
    command = line(block(readme, "--template tour"), "psych new t --template tour")
    out = machine.ok(command.split("#")[0].strip(), tmp_path)
    assert "1. A thread" in out and "6. A workflow" in out, out
    assert out.rstrip().endswith("'reservation': 'R-1'}}"), out


def test_the_basic_projects_readme_commands_run_as_written(
    machine: Machine, tmp_path: Path
) -> None:
    machine.ok("psych new demo", tmp_path)
    project = tmp_path / "demo"
    readme = (project / "README.md").read_text()
    commands = block(readme, "pip install")
    machine.ok(line(commands, "pip install"), project)
    assert machine.ok(line(commands, "python main.py"), project) == EXPECTED
    # uv, in a project whose pyproject.toml turns its indexes off.
    assert machine.ok(span(readme, "uv run"), project) == EXPECTED


def _chat(server: ChatServer) -> None:
    server.reset()
    server.reply(
        completion(tool_calls=[tool_call("lookup_order", {"order_id": "A1"})], usage_=usage()),
        completion("Order A1 is on its way with DHL.", usage_=usage()),
    )


def test_the_basic_app_reaches_a_model_on_loopback_only_when_allowed(
    machine: Machine, tmp_path: Path
) -> None:
    machine.ok("psych new demo", tmp_path)
    project = tmp_path / "demo"
    allowed = line(block((project / "README.md").read_text(), LOCAL_MODEL), "PSYCH_ALLOW")
    assert allowed.startswith("PSYCH_ALLOW_LOOPBACK_MODEL=1 ")
    with serve() as server:
        command = allowed.replace(LOCAL_MODEL, f"127.0.0.1:{server.port}")
        _chat(server)
        out = machine.ok(command, project)
        assert "\nOrder A1 is on its way with DHL.\n" in out
        assert len(server.requests) == 2

        _chat(server)
        refused = machine.ok(command.removeprefix("PSYCH_ALLOW_LOOPBACK_MODEL=1 "), project)
        assert "The run failed" in refused and "loopback" in refused
        assert server.requests == []

        wrong = machine.sh(command.replace("MODEL=1 ", "MODEL=yes "), project)
        assert wrong.returncode == 1
        assert "PSYCH_ALLOW_LOOPBACK_MODEL is 'yes'" in wrong.stderr
        assert server.requests == []


@pytest.fixture(scope="module")
def api(machine: Machine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`psych new api --template fastapi` as the README writes it, then the install command it
    prints next, which must be the one the project's README gives."""
    folder = tmp_path_factory.mktemp("api")
    readme = block((ROOT / "README.md").read_text(), "psych new demo")
    printed = machine.ok(line(readme, "psych new api --template fastapi"), folder)
    project = folder / "api"
    install = line([entry.strip() for entry in printed.splitlines()], "pip install")
    assert install == line(block((project / "README.md").read_text(), "pip install"), "pip")
    machine.ok(install, project)
    return project


def test_the_fastapi_project_installs_as_printed_and_its_tests_pass(
    machine: Machine, api: Path
) -> None:
    dev = "import importlib.metadata as m; print(m.requires('api'))"
    assert "psych-cli>=" in machine.ok(f"python -c {shlex.quote(dev)}", api)
    pytest_line = line(block((api / "README.md").read_text(), "pip install"), "pytest")
    out = machine.ok(f"{pytest_line} -p no:cacheprovider", api)
    assert "6 passed" in out, out


_ASK = """
import asyncio, sys
import psych_runtime
from agent import open_store, spec

async def main() -> None:
    async with open_store() as store:
        await store.migrate()
        scoped = store.scoped(psych_runtime.Scope(tenant="default"))
        run_id = await psych_runtime.dispatch(scoped, spec, "Where is order A1?")
        async with asyncio.timeout(60):
            while (status := await psych_runtime.status(scoped, run_id)).status not in (
                "completed", "failed"
            ):
                await asyncio.sleep(0.05)
        report = await psych_runtime.report(scoped, run_id)
        print(status.status, report.output if status.status == "completed" else status.error)

asyncio.run(main())
"""


def _served_by_worker(machine: Machine, api: Path, command: str, database: Path) -> str:
    """Start the README's worker command, admit a run, and say how it ended."""
    env = {**machine.env, "PSYCH_DB": str(database)}
    # bash runs a lone command in its own process: the signal below reaches the worker.
    worker = subprocess.Popen(
        ["bash", "-c", command],
        cwd=api,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        return machine.ok(f"python -c {shlex.quote(_ASK)}", api, env={"PSYCH_DB": str(database)})
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=30)
        assert worker.returncode == 0, out


def test_the_fastapi_worker_reaches_a_model_on_loopback_only_when_allowed(
    machine: Machine, api: Path, tmp_path: Path
) -> None:
    allowed = line(block((api / "README.md").read_text(), LOCAL_MODEL), "PSYCH_ALLOW")
    assert allowed.startswith("PSYCH_ALLOW_LOOPBACK_MODEL=1 ")
    assert allowed.endswith("python worker.py")
    with serve() as server:
        command = allowed.replace(LOCAL_MODEL, f"127.0.0.1:{server.port}")
        _chat(server)
        done = _served_by_worker(machine, api, command, tmp_path / "allowed.db")
        assert done == "completed Order A1 is on its way with DHL.\n"
        assert len(server.requests) == 2

        _chat(server)
        plain = command.removeprefix("PSYCH_ALLOW_LOOPBACK_MODEL=1 ")
        refused = _served_by_worker(machine, api, plain, tmp_path / "refused.db")
        assert refused.startswith("failed ") and "loopback" in refused
        assert server.requests == []


def test_the_wheel_carries_the_skills(machine: Machine, tmp_path: Path) -> None:
    machine.ok("psych skills install .", tmp_path)
    installed = tmp_path / ".agents" / "skills"
    source = ROOT / ".agents" / "skills"
    assert sorted(p.relative_to(installed) for p in installed.rglob("*") if p.is_file()) == sorted(
        p.relative_to(source)
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def _call(*args: str, cwd: Path = ROOT) -> str:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    done = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


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
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH: this test builds the sdist with `uv build`"
    _call(uv, "build", "--sdist", "--package", "psych-cli", "-o", str(tmp_path))
    [sdist] = tmp_path.glob("psych_cli-*.tar.gz")
    _call(uv, "build", "--wheel", str(sdist), "-o", str(tmp_path / "wheel"))
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


def test_an_adapters_patch_built_alone_installs_next_to_the_released_others(
    machine: Machine, tmp_path: Path
) -> None:
    # Issue 20's acceptance: bump one adapter's patch version, build it alone (no workspace
    # sources: as its own release would be built), and install it next to the 0.1.0 wheels of
    # every other distribution, from wheels only, in a fresh environment.
    bumped = tmp_path / "psych-store-sqlite"
    shutil.copytree(ROOT / "packages" / "psych-store-sqlite", bumped, ignore=_caches)
    project = bumped / "pyproject.toml"
    released = VERSIONS["psych-store-sqlite"]
    major, minor, patch = (int(part) for part in released.split("."))
    patched = f"{major}.{minor}.{patch + 1}"
    text = project.read_text()
    assert f'version = "{released}"' in text
    project.write_text(text.replace(f'version = "{released}"', f'version = "{patched}"', 1))
    machine.ok(f"uv build --quiet --wheel --no-sources --out-dir {tmp_path / 'dist'} {bumped}",
               tmp_path)  # fmt: skip
    [wheel] = (tmp_path / "dist").glob("psych_store_sqlite-*.whl")
    assert wheel.name == f"psych_store_sqlite-{patched}-py3-none-any.whl"
    venv = tmp_path / "venv"
    machine.ok(f"python -m venv {venv}", tmp_path)
    pip = venv / "bin" / "pip"
    machine.ok(
        f'{pip} install --quiet --no-index --find-links "$PSYCH_WHEELHOUSE" '
        f'--find-links {tmp_path / "dist"} "psych-runtime[sqlite]" "psych-store-sqlite=={patched}"',
        tmp_path,
    )
    code = (
        "import asyncio, importlib.metadata as m, tempfile, pathlib\n"
        "from psych_store_sqlite import SQLiteStore\n"
        "async def main():\n"
        "    with tempfile.TemporaryDirectory() as d:\n"
        "        store = SQLiteStore(str(pathlib.Path(d) / 'psych.db'))\n"
        "        await store.migrate()\n"
        "        print((await store.schema_version()).state)\n"
        "        await store.close()\n"
        "asyncio.run(main())\n"
        "names = ('psych-store-sqlite', 'psych-core', 'psych-runtime')\n"
        "print(*(m.version(name) for name in names))"
    )
    said = machine.ok(f"{venv / 'bin' / 'python'} -c {shlex.quote(code)}", tmp_path).split()
    assert said == ["current", patched, VERSIONS["psych-core"], VERSIONS["psych-runtime"]]


def _caches(folder: str, names: list[str]) -> set[str]:
    return {name for name in names if name in {"__pycache__", ".pytest_cache", "dist", "build"}}

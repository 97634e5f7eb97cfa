"""Which sandbox backends work on this machine, and what each can prove, found without
running anything.

What a backend can prove comes from its own `check` (the `Sandbox` port): it refuses, before
any process starts, a requirement it could never meet on this host, and says why. Each of
the ten guarantees is asked for alone, and each level in turn. What an execution *did* prove
is graded when it runs; this says only what a backend may reach here.

`DockerSandbox` needs an engine as well: one ``GET /_ping`` to the API it would use
(``DOCKER_HOST``, else Docker's default socket), bounded by a timeout. Nothing is started.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import psych_runtime
from psych_cli._doctor_facts import installed_version
from psych_runtime import ports

DEFAULT_ENGINE = "unix:///var/run/docker.sock"
"""Where DockerSandbox reaches the engine when neither ``base_url`` nor ``DOCKER_HOST`` says."""

_PING = (
    b"GET /_ping HTTP/1.1\r\nHost: docker\r\nUser-Agent: psych-doctor\r\nConnection: close\r\n\r\n"
)
_MOST_READ = 64 * 1024


@dataclass(frozen=True, slots=True)
class SandboxFacts:
    """One backend on this machine.

    Attributes:
        backend: the class an app would construct.
        distribution: the distribution that holds it, with `version` (None: not installed).
        usable: it is installed, its `check` refuses level ``limited`` nothing, and what it
            needs beside (an engine) answers.
        level: the highest isolation level its `check` does not refuse.
        proves: the guarantees its `check` does not refuse, in canonical order.
        cannot: the guarantees it refuses, each with its own reason.
        problem: why it is not usable, with what to do.
        notes: what else was found (the bubblewrap binary, the engine's answer).
    """

    backend: str
    distribution: str
    version: str | None
    usable: bool
    level: str = "none"
    proves: tuple[str, ...] = ()
    cannot: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    notes: tuple[str, ...] = ()


def sandbox_facts(environ: Mapping[str, str], timeout: float) -> tuple[SandboxFacts, ...]:
    """Every backend of the project, as it stands on this machine; `timeout` bounds the
    engine's answer."""
    return (_subprocess(), _namespaces(), _docker(environ, timeout))


def _subprocess() -> SandboxFacts:
    found = _checked(psych_runtime.SubprocessSandbox())
    return SandboxFacts(
        "SubprocessSandbox",
        "psych-runtime",
        installed_version("psych-runtime"),
        usable=found.problem is None,
        level=found.level,
        proves=found.proves,
        cannot=found.cannot,
        problem=found.problem,
    )


def _namespaces() -> SandboxFacts:
    version = installed_version("psych-sandbox-namespaces")
    cls, problem = _load("psych_sandbox_namespaces", "NamespaceSandbox", "namespaces")
    if cls is None:
        return SandboxFacts(
            "NamespaceSandbox", "psych-sandbox-namespaces", version, False, problem=problem
        )
    found = _checked(cls())
    bwrap = shutil.which("bwrap")
    return SandboxFacts(
        "NamespaceSandbox",
        "psych-sandbox-namespaces",
        version,
        usable=found.problem is None,
        level=found.level,
        proves=found.proves,
        cannot=found.cannot,
        problem=found.problem,
        notes=(f"bubblewrap: {bwrap}",) if bwrap else (),
    )


def _docker(environ: Mapping[str, str], timeout: float) -> SandboxFacts:
    version = installed_version("psych-sandbox-docker")
    cls, problem = _load("psych_sandbox_docker", "DockerSandbox", "docker")
    if cls is None:
        return SandboxFacts(
            "DockerSandbox", "psych-sandbox-docker", version, False, problem=problem
        )
    # `check` reads the request only, never the image: any name will do, and none is pulled.
    found = _checked(cls("psych-doctor-unused"))
    host = environ.get("DOCKER_HOST") or DEFAULT_ENGINE
    engine = ping_engine(host, timeout, environ)
    notes: list[str] = []
    problem = found.problem
    if engine.state == "answers":
        notes.append(f"engine at {host}: {engine.detail}")
        notes.append("the image is not checked: it must already be on the engine (never pulled)")
    elif problem is None and engine.state == "not probed":
        problem = f"the engine at {host} was not asked: {engine.detail}"
    elif problem is None:
        problem = f"no Docker-compatible API answers at {host}: {engine.detail}"
        notes.extend(_podman_sockets(environ))
    return SandboxFacts(
        "DockerSandbox",
        "psych-sandbox-docker",
        version,
        usable=problem is None and engine.state == "answers",
        level=found.level,
        proves=found.proves,
        cannot=found.cannot,
        problem=problem,
        notes=tuple(notes),
    )


def _load(module: str, name: str, extra: str) -> tuple[Any, str | None]:
    # By name, like the store adapters: the command depends on no adapter distribution.
    try:
        return getattr(importlib.import_module(module), name), None
    except ImportError as error:
        missing = error.name or module
        return None, (
            f"not installed ({missing} cannot be imported): "
            f'pip install --no-index --find-links "$PSYCH_WHEELHOUSE" "psych-runtime[{extra}]"'
        )


@dataclass(frozen=True, slots=True)
class _Checked:
    level: str
    proves: tuple[str, ...]
    cannot: dict[str, str]
    problem: str | None


def _checked(sandbox: ports.Sandbox) -> _Checked:
    """What `sandbox.check` refuses, one guarantee and one level at a time (nothing runs)."""
    proves: list[str] = []
    cannot: dict[str, str] = {}
    for guarantee in ports.GUARANTEES:
        refusal = _refusal(sandbox, ports.ExecRequest(("true",), require=frozenset({guarantee})))
        if refusal is None:
            proves.append(guarantee)
        else:
            cannot[guarantee] = refusal.removeprefix(f"{guarantee}: ")  # some name it too
    level, problem = "none", None
    for wanted in ("kernel", "limited"):
        refusal = _refusal(sandbox, ports.ExecRequest(("true",), require_level=wanted))
        if refusal is None:
            level = wanted
            break
        if wanted == "limited":
            problem = refusal  # not even resource limits: the backend does not work here
    return _Checked(level, tuple(proves), cannot, problem)


def _refusal(sandbox: ports.Sandbox, request: ports.ExecRequest) -> str | None:
    try:
        sandbox.check(request)
    except psych_runtime.errors.SandboxRefused as refused:
        return refused.reason
    return None


# -- the container engine ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineAnswer:
    """What one ``GET /_ping`` found: ``answers``, ``silent`` (nothing or no valid answer)
    or ``not probed`` (an endpoint this command does not speak to), and the detail."""

    state: Literal["answers", "silent", "not probed"]
    detail: str


def ping_engine(host: str, timeout: float, environ: Mapping[str, str]) -> EngineAnswer:
    """Ask the Docker Engine API at `host` (``unix://PATH`` or ``tcp://HOST:PORT``) whether
    it answers, within `timeout` seconds. Reads one short answer; starts nothing."""
    parts = urllib.parse.urlsplit(host)
    scheme = parts.scheme.lower()
    deadline = time.monotonic() + timeout
    try:
        if scheme in ("unix", "http+unix"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(parts.path)
            except BaseException:
                sock.close()
                raise
        elif scheme in ("tcp", "http") and parts.hostname:
            if environ.get("DOCKER_TLS_VERIFY") or parts.port == 2376:
                return EngineAnswer("not probed", "a TLS endpoint: psych doctor does not probe it")
            sock = socket.create_connection((parts.hostname, parts.port or 2375), timeout=timeout)
        else:
            return EngineAnswer("not probed", "psych doctor probes unix:// and tcp:// only")
        with sock:
            sock.sendall(_PING)
            answer = _read(sock, deadline)
    except TimeoutError:
        return EngineAnswer("silent", f"no answer within {timeout:g} s")
    except OSError as error:
        return EngineAnswer("silent", error.strerror or str(error))
    if answer is None:
        return EngineAnswer("silent", f"no answer within {timeout:g} s")
    return _judge(answer)


def _read(sock: socket.socket, deadline: float) -> bytes | None:
    # Until the engine closes the connection (Connection: close), a cap, or the deadline.
    data = b""
    while len(data) < _MOST_READ:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            return None
        if not chunk:
            break
        data += chunk
    return data


def _judge(answer: bytes) -> EngineAnswer:
    head = answer.partition(b"\r\n\r\n")[0].decode("latin-1")
    status, *lines = head.split("\r\n")
    words = status.split()
    if len(words) < 2 or not words[0].startswith("HTTP/"):
        return EngineAnswer("silent", "it answered, but not in HTTP: not a Docker API")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if words[1] != "200":
        return EngineAnswer("silent", f"it answered {' '.join(words[1:])} to GET /_ping")
    engine = "podman" if "libpod-api-version" in headers else "Docker API"
    version = headers.get("api-version")
    return EngineAnswer("answers", f"answers ({engine}{f' {version}' if version else ''})")


def _podman_sockets(environ: Mapping[str, str]) -> list[str]:
    # Podman serves the same API on a socket of its own; DockerSandbox uses it when told to.
    runtime_dir = environ.get("XDG_RUNTIME_DIR")
    candidates = [f"{runtime_dir}/podman/podman.sock"] if runtime_dir else []
    candidates.append("/run/podman/podman.sock")
    return [
        f"a podman socket is at {path}: set DOCKER_HOST=unix://{path} "
        f'(or DockerSandbox(image, base_url="unix://{path}")) if its service runs'
        for path in candidates
        if os.path.exists(path)
    ]

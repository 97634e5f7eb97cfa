"""`psych doctor` in this process: what it reports of the machine, the container engine it
asks (a real one-answer server on a unix socket), telemetry settings, and its exit codes.

Real stores (SQLite files, PostgreSQL) are in tests/integration/test_cli_doctor.py; here,
only a SQLite file read as if its adapter did not report its schema version.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
import json
import platform
import shutil
import socket
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import psych_runtime.ports
import psych_store_sqlite
from psych_cli import ExitCode, app
from psych_cli._doctor_facts import (
    CONFIGURED,
    NO_EXPORTER,
    NOT_INSTALLED,
    PROJECT,
    installed_version,
    telemetry_state,
)
from psych_cli._doctor_store import SCHEMA_NOT_READ
from psych_runtime import EgressPolicy
from psych_store_sqlite import SQLiteStore
from tests._hostile_strings import assert_inert

runner = CliRunner()

# No engine, no store and no OTEL_* setting of the developer's own reaches a test by accident.
QUIET = {"DOCKER_HOST": "unix:///nonexistent/psych-doctor.sock", "PSYCH_STORE": None}


def doctor(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, ["doctor", *args], env={**QUIET, **(env or {})})
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def doctor_json(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, Any]:
    code, out, err = doctor("--json", *args, env=env)
    assert err == ""
    return code, json.loads(out)


def sandbox(document: dict[str, Any], backend: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [s for s in document["sandboxes"] if s["backend"] == backend]
    assert len(found) == 1
    return found[0]


# -- help and exit codes ---------------------------------------------------------------------


def test_help_lists_doctors_exit_codes_and_says_it_only_reads() -> None:
    result = runner.invoke(app, ["doctor", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert (
        "Exit codes: 0 everything checked is fine; 1 something checked is not fine (the store "
        "does not answer, holds no Psych schema, or its schema is behind or newer than this "
        "adapter); 2 usage error (bad option or store URL); 130 interrupted." in text
    )
    assert "Read-only." in text
    assert "--store -s URL" in text
    assert "[env var: PSYCH_STORE]" in text
    assert "--timeout SECONDS" in text


def test_the_overview_lists_doctor_and_its_exit_code() -> None:
    result = runner.invoke(app, ["--help"])
    text = " ".join(result.stdout.split())
    assert "doctor Check a deployment" in text
    assert "(doctor) a check is not fine" in text


def test_without_a_store_everything_checked_is_fine_and_no_store_was_checked() -> None:
    code, out, _ = doctor()
    assert code == ExitCode.OK
    assert "Store  no store checked: give --store URL (or set PSYCH_STORE)" in out
    assert out.rstrip().endswith("Everything checked is fine.")

    code, document = doctor_json()
    assert code == ExitCode.OK
    assert (document["ok"], document["problems"], document["store"]) == (True, [], None)


def test_a_url_of_no_known_form_is_a_usage_error_and_prints_no_report() -> None:
    for args in (("--store", "redis://localhost"), ("--json", "--store", "redis://localhost")):
        code, out, err = doctor(*args)
        assert code == ExitCode.USAGE
        assert out == ""
        assert "'redis://localhost' is not a store URL this command knows" in err


def test_a_timeout_out_of_range_is_a_usage_error() -> None:
    code, _, err = doctor("--timeout", "0")
    assert code == ExitCode.USAGE
    assert "--timeout" in err


def test_a_missing_sqlite_file_is_a_problem_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nope.db"
    code, document = doctor_json("--store", f"sqlite:///{path}")
    assert code == ExitCode.RUN_FAILED
    assert document["ok"] is False
    store = document["store"]
    assert store["answers"] is False
    assert store["problem"] == f"there is no SQLite file at {path} (from sqlite:///{path})"
    assert document["problems"] == [f"the store at sqlite:///{path}: {store['problem']}"]
    assert not path.exists()


def test_a_store_url_from_the_environment_is_checked(tmp_path: Path) -> None:
    code, document = doctor_json(env={"PSYCH_STORE": f"sqlite:///{tmp_path}/none.db"})
    assert code == ExitCode.RUN_FAILED
    assert "there is no SQLite file" in document["store"]["problem"]


def test_a_store_whose_adapter_is_not_installed_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psych_store_mysql", None)  # as if not installed
    code, document = doctor_json("--store", "mysql://app:s3cret@127.0.0.1:1/app")
    assert code == ExitCode.RUN_FAILED
    store = document["store"]
    assert store["url"] == "mysql://app:***@127.0.0.1:1/app"
    assert "the MySQLStore adapter cannot be imported" in store["problem"]
    assert '"psych-runtime[mysql]"' in store["hint"]
    assert "s3cret" not in json.dumps(document)


def test_an_error_quoting_the_store_path_is_shown_inert(tmp_path: Path) -> None:
    hostile = tmp_path / "\x1b]0;pwned\x07\u202e[red]x[/red]\x9b2J.db"
    code, out, _ = doctor("--store", f"sqlite:///{hostile}")
    assert code == ExitCode.RUN_FAILED
    assert_inert(out.encode())
    assert "\\x1b]0;pwned\\x07\\u202e[red]x[/red]\\x9b2J.db" in out


def test_a_store_whose_adapter_does_not_report_its_version_answers_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As for a third-party adapter without `VersionedSchema`: the listing decides.
    db = tmp_path / "psych.db"

    async def migrate() -> None:
        async with SQLiteStore(db) as store:
            await store.migrate()

    async def does_not_say(store: object) -> None:
        return None

    asyncio.run(migrate())
    monkeypatch.setattr(psych_runtime.ports, "schema_version", does_not_say)
    code, document = doctor_json("--store", f"sqlite:///{db}")
    assert code == ExitCode.OK
    assert document["store"]["answers"] is True
    assert document["store"]["schema"] == {
        "applied": None,
        "known": psych_store_sqlite.SCHEMA_VERSION,
        "verdict": None,
        "note": SCHEMA_NOT_READ,
    }


# -- what is installed -----------------------------------------------------------------------


def test_it_lists_every_distribution_of_the_project_with_its_installed_version() -> None:
    _, document = doctor_json()
    found = document["installed"]
    # Every distribution of the workspace, none forgotten when one is added.
    workspace = {
        tomllib.loads(path.read_text())["project"]["name"]
        for path in (Path(__file__).resolve().parents[2] / "packages").glob("*/pyproject.toml")
    }
    assert list(found["distributions"]) == list(PROJECT)
    assert set(PROJECT) == workspace
    assert found["distributions"]["psych-cli"] == importlib.metadata.version("psych-cli")
    assert found["distributions"] == {name: installed_version(name) for name in PROJECT}
    assert list(found["sdks"]) == ["mcp", "a2a-sdk", "opentelemetry-api", "opentelemetry-sdk"]
    assert found["sdks"]["mcp"] == importlib.metadata.version("mcp")
    assert (found["python"], found["executable"]) == (platform.python_version(), sys.executable)

    _, out, _ = doctor()
    assert f"  {'psych-cli':<36}{importlib.metadata.version('psych-cli')}" in out
    assert f"Python {platform.python_version()}" in out


def test_a_distribution_that_is_not_installed_has_no_version() -> None:
    assert installed_version("psych-no-such-distribution") is None


# -- sandboxes -------------------------------------------------------------------------------


def test_the_subprocess_sandbox_works_and_says_what_it_cannot_prove() -> None:
    _, document = doctor_json()
    found = sandbox(document, "SubprocessSandbox")
    assert (found["usable"], found["level"], found["problem"]) == (True, "limited", None)
    assert {"wall_time_limited", "cpu_time_limited", "output_limited"} <= set(found["proves"])
    assert {"reads_confined", "writes_confined", "network_isolated", "process_isolated"} <= set(
        found["cannot"]
    )
    assert "does not isolate" in found["cannot"]["network_isolated"]
    # A guarantee is either provable or refused with a reason, never both, never neither.
    assert set(found["proves"]) | set(found["cannot"]) == set(_guarantees())
    assert not set(found["proves"]) & set(found["cannot"])


def _guarantees() -> tuple[str, ...]:
    from psych_runtime.ports import GUARANTEES

    return GUARANTEES


def test_the_namespace_sandbox_is_usable_exactly_when_bubblewrap_is_here() -> None:
    _, document = doctor_json()
    found = sandbox(document, "NamespaceSandbox")
    if shutil.which("bwrap") is None:
        assert (found["usable"], found["level"], found["proves"]) == (False, "none", [])
        assert "bubblewrap (bwrap) is not installed" in found["problem"]
    else:
        assert (found["usable"], found["level"], found["problem"]) == (True, "kernel", None)
        assert found["notes"] == [f"bubblewrap: {shutil.which('bwrap')}"]


def test_a_sandbox_whose_distribution_cannot_be_imported_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psych_sandbox_namespaces", None)
    _, document = doctor_json()
    found = sandbox(document, "NamespaceSandbox")
    assert found["usable"] is False
    assert found["problem"].startswith(
        "not installed (psych_sandbox_namespaces cannot be imported)"
    )
    assert '"psych-runtime[namespaces]"' in found["problem"]


@contextlib.contextmanager
def engine(reply: Callable[[socket.socket], object]) -> Iterator[str]:
    """A server on a unix socket that answers each connection with `reply`; its DOCKER_HOST."""
    # A short folder: a unix socket's path must fit in about a hundred bytes.
    with tempfile.TemporaryDirectory(prefix="pd") as folder:
        path = f"{folder}/engine.sock"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen()
        server.settimeout(0.1)
        requests: list[bytes] = []
        closing = threading.Event()

        def serve() -> None:
            while not closing.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.settimeout(5)
                    requests.append(conn.recv(4096))
                    reply(conn)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield f"unix://{path}"
        finally:
            closing.set()
            thread.join(timeout=15)
            server.close()
        assert requests
        assert all(request.startswith(b"GET /_ping HTTP/1.1\r\n") for request in requests)


def _answer(status: str, headers: dict[str, str], body: bytes = b"OK") -> Callable[..., None]:
    def reply(conn: socket.socket) -> None:
        lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items())]
        lines.append(f"Content-Length: {len(body)}")
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return reply


def test_docker_is_usable_when_an_engine_answers_its_ping() -> None:
    with engine(_answer("200 OK", {"Api-Version": "1.41", "Libpod-Api-Version": "5.4.2"})) as host:
        _, document = doctor_json(env={"DOCKER_HOST": host})
        _, out, _ = doctor(env={"DOCKER_HOST": host})
    found = sandbox(document, "DockerSandbox")
    assert (found["usable"], found["level"], found["problem"]) == (True, "kernel", None)
    assert found["notes"][0] == f"engine at {host}: answers (podman 1.41)"
    assert "the image is not checked" in found["notes"][1]
    assert f"  {'DockerSandbox':<36}works: level kernel" in out


def test_docker_is_not_usable_when_the_engine_refuses_the_ping() -> None:
    with engine(_answer("500 Internal Server Error", {}, b"broken")) as host:
        _, document = doctor_json(env={"DOCKER_HOST": host})
    found = sandbox(document, "DockerSandbox")
    assert found["usable"] is False
    assert found["problem"] == (
        f"no Docker-compatible API answers at {host}: it answered 500 Internal Server Error "
        "to GET /_ping"
    )


def test_an_engine_that_never_answers_is_given_up_on_at_the_timeout() -> None:
    stop = threading.Event()
    with engine(lambda conn: stop.wait(10)) as host:
        started = time.monotonic()
        code, document = doctor_json("--timeout", "0.5", env={"DOCKER_HOST": host})
        took = time.monotonic() - started
        stop.set()
    assert code == ExitCode.OK  # the machine's facts alone never fail the command
    found = sandbox(document, "DockerSandbox")
    assert found["problem"] == f"no Docker-compatible API answers at {host}: no answer within 0.5 s"
    assert took < 5


def test_no_engine_at_the_socket_says_so() -> None:
    code, document = doctor_json()
    assert code == ExitCode.OK
    found = sandbox(document, "DockerSandbox")
    assert found["usable"] is False
    assert found["problem"] == (
        "no Docker-compatible API answers at unix:///nonexistent/psych-doctor.sock: "
        "No such file or directory"
    )
    # What the backend's own check allows does not depend on the engine.
    assert (found["level"], len(found["proves"])) == ("kernel", 10)


def test_a_tls_engine_is_not_asked() -> None:
    _, document = doctor_json(env={"DOCKER_HOST": "tcp://127.0.0.1:2376"})
    found = sandbox(document, "DockerSandbox")
    assert found["problem"] == (
        "the engine at tcp://127.0.0.1:2376 was not asked: a TLS endpoint: psych doctor does "
        "not probe it"
    )


def test_what_an_engine_says_is_shown_inert() -> None:
    hostile = "\x1b]0;pwned\x07\u202e[red]x[/red]"
    with engine(_answer("200 OK", {"Api-Version": hostile})) as host:
        _, out, _ = doctor(env={"DOCKER_HOST": host})
    assert_inert(out.encode())
    assert "answers (Docker API \\x1b]0;pwned\\x07" in out


# -- egress ----------------------------------------------------------------------------------


def test_the_egress_policy_is_stated_from_the_class() -> None:
    _, document = doctor_json()
    egress = document["egress"]
    policy = EgressPolicy()
    defaults = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if f.init}
    assert egress["defaults"] == json.loads(json.dumps(defaults))
    assert egress["defaults"]["allow_hosts"] is None  # any host, public addresses only
    verdicts = {a["address"]: a["refusal"] for a in egress["addresses"]}
    assert verdicts["8.8.8.8"] is None
    assert "allow_loopback=True" in verdicts["127.0.0.1"]
    assert "allow_private=True" in verdicts["10.0.0.1"]
    assert "cloud metadata" in verdicts["169.254.169.254"]

    _, out, _ = doctor()
    assert "allow_hosts=None, allow_loopback=False, allow_private=False, allow_networks=()" in out
    assert "8.8.8.8 (public)" in out


# -- telemetry -------------------------------------------------------------------------------


def test_the_telemetry_state_follows_the_install_and_the_exporter_settings() -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert telemetry_state(installed=False, environ=endpoint) == NOT_INSTALLED
    assert telemetry_state(installed=True, environ=endpoint) == CONFIGURED
    traces = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}
    assert telemetry_state(installed=True, environ=traces) == CONFIGURED
    assert (
        telemetry_state(installed=True, environ={"OTEL_TRACES_EXPORTER": "console"}) == CONFIGURED
    )
    assert telemetry_state(installed=True, environ={}) == NO_EXPORTER
    assert telemetry_state(installed=True, environ={"OTEL_SERVICE_NAME": "app"}) == NO_EXPORTER
    off = {**endpoint, "OTEL_TRACES_EXPORTER": "none"}
    assert telemetry_state(installed=True, environ=off) == NO_EXPORTER


def test_telemetry_names_settings_and_never_prints_headers_or_credentials() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=h3ader-secret",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:pa55word@otel.example.com:4318/v1?t=t0ken",
        "OTEL_SERVICE_NAME": "checkout",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": None,
        "OTEL_TRACES_EXPORTER": None,
    }
    code, document = doctor_json(env=env)
    _, out, _ = doctor(env=env)
    assert code == ExitCode.OK
    telemetry = document["telemetry"]
    installed = None not in telemetry["distributions"].values()
    assert telemetry["state"] == (CONFIGURED if installed else NOT_INSTALLED)
    assert telemetry["distributions"] == {
        "psych-telemetry-otel": installed_version("psych-telemetry-otel"),
        "opentelemetry-sdk": installed_version("opentelemetry-sdk"),
    }
    settings = telemetry["settings"]
    assert settings["OTEL_EXPORTER_OTLP_HEADERS"] == "set"
    assert settings["OTEL_EXPORTER_OTLP_ENDPOINT"] == "https://otel.example.com:4318/v1"
    assert settings["OTEL_SERVICE_NAME"] == "checkout"
    assert telemetry["missing"] == ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"]
    for secret in ("h3ader-secret", "pa55word", "t0ken", "user:"):
        assert secret not in out
        assert secret not in json.dumps(document)
    assert "OTEL_EXPORTER_OTLP_HEADERS" in out
    assert f"  {'OTEL_TRACES_EXPORTER':<36}not set" in out

"""What the MCP tests share: the demo server's connections, an HTTP one started on loopback,
and reading a run's records."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from psych_runtime.mcp import McpStdio

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def demo_stdio(ledger: Path | None = None, **env: str) -> McpStdio:
    """The demo server as a subprocess over stdio."""
    variables = {"PYTHONPATH": str(ROOT), **env}
    if ledger is not None:
        variables["DEMO_LEDGER"] = str(ledger)
    return McpStdio(
        command=sys.executable,
        args=("-m", "tests.integration.mcp_demo_server", "stdio"),
        env=variables,
        cwd=str(ROOT),
    )


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def demo_http(ledger: Path | None = None, **env: str) -> Iterator[str]:
    """The demo server over streamable HTTP on loopback; yields its MCP endpoint's URL."""
    port = free_port()
    with _serving(["tests.integration.mcp_demo_server", "http", str(port)], port, ledger, env):
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def oauth_http(ledger: Path | None = None, **env: str) -> Iterator[str]:
    """The protected server and its authorization server on loopback
    (`tests.integration.mcp_oauth_server`); yields its base URL (the MCP endpoint is
    ``/mcp``)."""
    port = free_port()
    with _serving(["tests.integration.mcp_oauth_server", str(port)], port, ledger, env):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def _serving(
    module: list[str], port: int, ledger: Path | None, env: dict[str, str]
) -> Iterator[None]:
    variables = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    if ledger is not None:
        variables["DEMO_LEDGER"] = str(ledger)
    process = subprocess.Popen([sys.executable, "-m", *module], cwd=ROOT, env=variables)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{module[0]} did not start") from None
                time.sleep(0.05)
        yield
    finally:
        process.terminate()
        process.wait(10)


def ledger_lines(ledger: Path) -> list[list[str]]:
    """The effects the demo server recorded, one split line each."""
    if not ledger.exists():
        return []
    return [line.split() for line in ledger.read_text().splitlines()]

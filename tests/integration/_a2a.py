"""What the A2A peer tests share: the demo peer started on loopback, and its ledger."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.integration._mcp import free_port, ledger_lines

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["demo_peer", "ledger_lines", "start_peer", "stop_peer"]


def start_peer(port: int, ledger: Path | None = None, **env: str) -> subprocess.Popen[bytes]:
    """The demo peer (`tests.integration.a2a_demo_peer`) on `port`, once it serves its card."""
    variables = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    if ledger is not None:
        variables["DEMO_LEDGER"] = str(ledger)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.a2a_demo_peer", str(port)],
        cwd=ROOT,
        env=variables,
    )
    deadline = time.monotonic() + 30
    probe = urllib.request.Request(f"http://127.0.0.1:{port}/health-probe")
    while True:
        try:
            urllib.request.urlopen(probe, timeout=0.5)
        except urllib.error.HTTPError:
            return process  # it answers (404): it is up, and the card reads stay counted
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_peer(process)
                raise RuntimeError("the demo A2A peer did not start") from None
            time.sleep(0.05)
        else:
            return process


def stop_peer(process: subprocess.Popen[bytes]) -> None:
    """Stop the demo peer."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def demo_peer(ledger: Path | None = None, **env: str) -> Iterator[str]:
    """The demo peer on loopback; yields its base URL."""
    port = free_port()
    process = start_peer(port, ledger, **env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_peer(process)

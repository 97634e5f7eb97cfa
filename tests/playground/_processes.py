"""The playground as a user runs it: `python -m psych_playground serve` and `... worker` as real
processes on loopback, and an HTTP client to talk to them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Playground:
    """A running server (and worker, unless started without), and a client for its API."""

    base_url: str
    api: httpx.Client
    server: subprocess.Popen[bytes]
    worker: subprocess.Popen[bytes] | None
    logs: Path
    env: dict[str, str]

    def run(self, message: str, agent: str = "support", **fields: Any) -> str:
        """Admit a run of `agent` on `message`; its id."""
        answer = self.api.post("/api/runs", json={"agent": agent, "message": message, **fields})
        assert answer.status_code == 202, answer.text
        run_id: str = answer.json()["run_id"]
        return run_id

    def detail(self, run_id: str) -> dict[str, Any]:
        answer = self.api.get(f"/api/runs/{run_id}")
        assert answer.status_code == 200, answer.text
        detail: dict[str, Any] = answer.json()
        return detail

    def wait_for(self, run_id: str, *statuses: str, timeout: float = 30.0) -> dict[str, Any]:
        """The run's detail once its status is one of `statuses` (any final one by default)."""
        wanted = set(statuses) or TERMINAL
        deadline = time.monotonic() + timeout
        while True:
            detail = self.detail(run_id)
            if detail["status"]["status"] in wanted:
                return detail
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"run {run_id} is {detail['status']['status']}, not {sorted(wanted)}, after "
                    f"{timeout} s:\n{json.dumps(detail, indent=1)}\n{self.output()}"
                )
            time.sleep(0.05)

    def output(self) -> str:
        """What the processes printed, for a failure's message."""
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')}"
            for path in sorted(self.logs.glob("*.log"))
        )


@contextmanager
def running(
    tmp: Path, env: Mapping[str, str], *, worker: bool = True, timeout: float = 30.0
) -> Iterator[Playground]:
    """Start the server (and a worker) with `env` added to this environment; stop them after."""
    port = free_port()
    variables = {
        **os.environ,
        "PLAYGROUND_HOST": "127.0.0.1",
        "PLAYGROUND_PORT": str(port),
        "PLAYGROUND_DEMO_DELAY": "0.002",
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    variables.pop("OPENAI_API_KEY", None)  # the demo model, whatever the developer's shell has
    tmp.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "psych_playground"]
    with (tmp / "server.log").open("wb") as server_log:
        server = subprocess.Popen(
            [*command, "serve"], cwd=tmp, env=variables, stdout=server_log, stderr=server_log
        )
    base_url = f"http://127.0.0.1:{port}"
    api = httpx.Client(base_url=base_url, timeout=10.0)
    started = Playground(base_url, api, server, None, tmp, variables)
    try:
        _wait_until_healthy(started, timeout)
        if worker:
            # After the server: it has migrated the store and seeded the catalog by now.
            with (tmp / "worker.log").open("wb") as worker_log:
                started.worker = subprocess.Popen(
                    [*command, "worker"],
                    cwd=tmp,
                    env=variables,
                    stdout=worker_log,
                    stderr=worker_log,
                )
        yield started
    finally:
        api.close()
        for process in (started.worker, server):
            if process is not None and process.poll() is None:
                process.terminate()
        for process in (started.worker, server):
            if process is not None:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _wait_until_healthy(playground: Playground, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if playground.api.get("/api/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if playground.server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the playground server did not start:\n{playground.output()}")
        time.sleep(0.1)

"""examples/two_process: a handler admits, a worker process runs, a watcher follows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "two_process"


def _env(db: Path) -> dict[str, str]:
    return {**os.environ, "PSYCH_DEMO_DB": str(db)}


def test_handler_worker_and_watcher_share_one_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    handler = subprocess.run(
        [sys.executable, "handler.py"],
        cwd=EXAMPLE,
        env=_env(db),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    run_id = handler.stdout.strip()
    assert len(run_id) == 26, handler.stdout

    worker = subprocess.Popen(
        [sys.executable, "worker.py"],
        cwd=EXAMPLE,
        env=_env(db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        watch = subprocess.run(
            [sys.executable, "watch.py", run_id],
            cwd=EXAMPLE,
            env=_env(db),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        lines = watch.stdout.splitlines()
        assert lines[-2:] == ["completed", "A1 has shipped."]
        assert set(lines[:-1]) <= {"queued", "running", "completed"}
    finally:
        # SIGTERM drains: no new claims, leases released, exit 0.
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err


def test_a_worker_with_idle_flag_exits_when_nothing_is_left(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    run_ids = [
        subprocess.run(
            [sys.executable, "handler.py"],
            cwd=EXAMPLE,
            env=_env(db),
            check=True,
            timeout=60,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for _ in range(3)
    ]
    done = subprocess.run(
        [sys.executable, "worker.py", "--idle"],
        cwd=EXAMPLE,
        env=_env(db),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for run_id in run_ids:
        watch = subprocess.run(
            [sys.executable, "watch.py", run_id],
            cwd=EXAMPLE,
            env=_env(db),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert watch.stdout.splitlines() == ["completed", "A1 has shipped."]

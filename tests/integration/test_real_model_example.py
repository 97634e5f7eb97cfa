"""examples/real_model.py, run as a user runs it: a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "real_model.py"


def run(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**clean, **env},
        check=False,
    )


def test_without_a_key_it_says_it_uses_the_fake_model_and_answers() -> None:
    done = run()
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "Using the fake model (set OPENAI_API_KEY to use a real one).\n"
        "A1 has shipped.\n"
        "Usage: input=0 output=0 cache_read=0 cache_write=0 cache_write_1h=0 reasoning=0 "
        "(2 provider). Cost: unknown (2 calls unpriced).\n"
    )
    assert done.stderr == ""


def test_with_a_key_it_uses_the_real_client_and_never_prints_the_key() -> None:
    # A base URL on this machine: the client's egress refuses it before connecting, so the
    # run fails cleanly, and nothing leaves the machine.
    key = "sk-example-0123456789abcdef"
    done = run(OPENAI_API_KEY=key, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Using the real model gpt-4o-mini at http://127.0.0.1:9/v1."
    assert lines[1].startswith("The run failed: ")
    assert "refused before connecting" in lines[1]
    assert key not in done.stdout + done.stderr

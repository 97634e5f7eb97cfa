"""What the sandbox contract tests need from the host, and what to do when it is missing.

`scripts/sandbox-host.sh start` installs and starts everything (bubblewrap, podman with runc,
the test image) and prints the settings read here; the `contract` and `sandboxes` nox sessions
run it first. A backend that is still missing fails its tests, with the command to run: it
never skips, so a machine that lacks a backend cannot pass for one that has it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DOCKER_HOST = os.environ.get(
    "PSYCH_TEST_DOCKER_HOST", f"unix://{ROOT / '.cache' / 'sandbox-host' / 'podman.sock'}"
)
"""The Docker-compatible API the docker backend's tests use (podman's, by default)."""

DOCKER_IMAGE = os.environ.get("PSYCH_TEST_DOCKER_IMAGE", "localhost/psych-sandbox-test:1")
"""The locally built test image (busybox on a minimal rootfs); never pulled."""


def missing(reason: str) -> None:
    """Fail, saying what is missing and how to provide it."""
    pytest.fail(f"{reason}: run `scripts/sandbox-host.sh start` first")


def require_bwrap() -> None:
    """Bubblewrap must be installed."""
    if shutil.which("bwrap") is None:
        missing("bubblewrap (bwrap) is not installed")

"""The sandbox contract suite against `DockerSandbox` on podman's Docker-compatible API."""

from __future__ import annotations

import socket

import docker
import docker.errors
import pytest

from psych_core import GUARANTEES, ExecRequest, Sandbox, SandboxUnavailable
from psych_runtime.testing.sandbox_contract import SandboxContract
from psych_sandbox_docker import DockerSandbox
from tests.contract._sandbox_hosts import DOCKER_HOST, DOCKER_IMAGE, missing

_client: docker.DockerClient | None = None


def _engine() -> docker.DockerClient:
    global _client
    if _client is None:
        # A fixed API version: "auto" would ask the engine inside the constructor, and a failed
        # constructor leaves its socket for the garbage collector.
        if DOCKER_HOST.startswith("unix://"):
            # The SDK leaks the socket of a failed connect; find a dead socket here first.
            with socket.socket(socket.AF_UNIX) as probe:
                try:
                    probe.connect(DOCKER_HOST.removeprefix("unix://"))
                except OSError as exc:
                    missing(f"no Docker API at {DOCKER_HOST} ({exc})")
        client = docker.DockerClient(base_url=DOCKER_HOST, version="1.41", timeout=30)
        try:
            client.ping()
            client.images.get(DOCKER_IMAGE)
        except docker.errors.DockerException as exc:
            client.close()
            missing(f"no Docker API with image {DOCKER_IMAGE} at {DOCKER_HOST} ({exc})")
            raise
        _client = client
    return _client


class TestDockerSandbox(SandboxContract):
    level = "kernel"
    enforces = GUARANTEES

    setup_fault = "memory_limited"

    def create_sandbox(self) -> Sandbox:
        return DockerSandbox(DOCKER_IMAGE, client=_engine())


async def test_a_missing_image_is_a_clear_error_and_is_never_pulled() -> None:
    sandbox = DockerSandbox("localhost/psych-no-such-image:0", client=_engine())
    with pytest.raises(SandboxUnavailable, match="never pulls"):
        await sandbox.run(ExecRequest(argv=("true",)))
    with pytest.raises(docker.errors.ImageNotFound):
        _engine().images.get("localhost/psych-no-such-image:0")


def test_root_is_refused_as_the_user() -> None:
    with pytest.raises(ValueError, match="non-root"):
        DockerSandbox(DOCKER_IMAGE, user="0:0")

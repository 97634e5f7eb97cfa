"""psych_sandbox_docker: Psych Runtime's container sandbox, through the Docker Engine API.

`DockerSandbox` runs each program in a fresh, locked-down container (no network, read-only
root, non-root user, no capabilities, no new privileges, memory/pids/CPU limits, capped output,
a wall-time kill) on Docker or any engine that speaks its API, such as podman. It reaches the
``kernel`` isolation level and grades each execution from the engine's own account of the
container it created. Images are never pulled.
"""

from psych_sandbox_docker._sandbox import DockerSandbox

__all__ = ["DockerSandbox"]

DockerSandbox.__module__ = __name__

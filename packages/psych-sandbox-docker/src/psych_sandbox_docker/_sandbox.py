"""`DockerSandbox`: one locked-down container per execution, through the Docker API."""

from __future__ import annotations

import asyncio
import contextlib
import io
import socket
import struct
import tarfile
import threading
import time
from typing import Any, Final

import docker
import docker.errors
import docker.types

from psych_adapter_kit import SETUP_FAULTS
from psych_core import (
    ExecRequest,
    ExecResult,
    ExecTally,
    Guarantee,
    LimitName,
    SandboxRefused,
    SandboxUnavailable,
)

_SCRATCH: Final = "/scratch"
_ROOT_USERS: Final = ("", "0", "root", "0:0", "root:root")
_STOP_GRACE: Final = 5.0
# The capabilities Docker and podman grant by default: dropped "ALL" shows up as these.
_DEFAULT_CAPS: Final = frozenset(
    (
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "NET_RAW",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    )
)
# What a test can make really fail (psych_runtime.testing.sandbox_faults): the limit is left
# out of the request to the engine, as an engine that ignores it would leave it out.
_CAN_FAIL: Final[frozenset[Guarantee]] = frozenset({"memory_limited", "process_count_limited"})


class DockerSandbox:
    """Runs each program in a fresh container through the Docker Engine API: level ``kernel``.

    Per execution: a container from `image` (never pulled: a missing image is an error) with no
    network unless egress is asked for, a read-only root filesystem, a fresh volume at
    ``/scratch`` holding the request's files, a private /tmp, memory (swap included), pids and
    CPU-time limits, a non-root `user`, every capability dropped, no new privileges and the
    engine's default seccomp profile. The grades come from the engine's own account of the
    created container (``inspect``), checked before it starts: a setting the engine did not
    apply is ``not_enforced``, and a request that required it never starts. Output is capped
    while it streams; at the wall time the container is killed and removed.

    Args:
        image: the image to run; it must already be on the engine.
        base_url: the engine's API (``unix:///var/run/docker.sock`` style); from the
            environment (``DOCKER_HOST``) when neither this nor `client` is given.
        client: a ready `docker.DockerClient`, instead of `base_url`.
        user: ``uid:gid`` the program runs as; never root.
        cpus: CPU share (``1.5`` = one and a half cores), or None for no rate limit.
    """

    def __init__(
        self,
        image: str,
        *,
        base_url: str | None = None,
        client: docker.DockerClient | None = None,
        user: str = "1000:1000",
        cpus: float | None = 1.0,
    ) -> None:
        if user in _ROOT_USERS or user.split(":")[0] in ("0", "root"):
            raise ValueError(f"DockerSandbox runs programs as a non-root user, not {user!r}")
        self._image = image
        self._base_url = base_url
        self._client = client
        self._user = user
        self._cpus = cpus
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``"docker"``."""
        return "docker"

    def check(self, request: ExecRequest) -> None:
        """Raise `SandboxRefused` for requirements no container can meet (a contradiction in
        the request itself: egress with network isolation, a required limit left unset)."""
        never: list[str] = []
        if "network_isolated" in request.required and request.network == "egress":
            never.append("network_isolated")
        for guarantee, value in (
            ("cpu_time_limited", request.limits.cpu_seconds),
            ("memory_limited", request.limits.memory_bytes),
            ("process_count_limited", request.limits.processes),
        ):
            if guarantee in request.required and value is None:
                never.append(guarantee)
        if never:
            raise SandboxRefused(
                self.name, tuple(never), "the request requires them but leaves them unset"
            )

    def _docker(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None:
                try:
                    if self._base_url is not None:
                        self._client = docker.DockerClient(base_url=self._base_url, version="auto")
                    else:
                        self._client = docker.from_env(version="auto")
                except docker.errors.DockerException as exc:
                    raise SandboxUnavailable(
                        self.name,
                        f"cannot reach the Docker API at {self._base_url or 'DOCKER_HOST'}: {exc}",
                    ) from exc
            return self._client

    async def run(self, request: ExecRequest) -> ExecResult:
        """Run `request` in a fresh container and grade it (see the `Sandbox` port)."""
        self.check(request)
        fault = SETUP_FAULTS.wanted(self.name, _CAN_FAIL)
        tally = await asyncio.to_thread(self._run_blocking, request, fault)
        return tally.result(request)

    # ------------------------------------------------------------------ blocking work

    def _run_blocking(self, request: ExecRequest, fault: Guarantee | None) -> ExecTally:
        client = self._docker()
        try:
            client.images.get(self._image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                self.name,
                f"image {self._image!r} is not on the engine, and DockerSandbox never pulls: "
                "build or load it first (docker build / docker load / podman import)",
            ) from exc
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(self.name, f"the Docker API failed: {exc}") from exc
        volume = client.volumes.create(labels={"psych.sandbox": "scratch"})
        container_id: str | None = None
        try:
            container_id = self._create(client, request, volume.name, fault)
            if request.files or request.cwd != ".":
                client.api.put_archive(container_id, _SCRATCH, self._archive(request))
            tally = ExecTally(self.name)
            self._grade_setup(request, tally, client.api.inspect_container(container_id))
            if tally.unmet(request):
                return tally  # never started
            self._start_and_stream(client, request, tally, container_id)
            return tally
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(self.name, f"the Docker API failed: {exc}") from exc
        finally:
            if container_id is not None:
                with contextlib.suppress(docker.errors.DockerException):
                    client.api.remove_container(container_id, force=True, v=True)
            with contextlib.suppress(docker.errors.DockerException):
                volume.remove(force=True)

    def _create(
        self,
        client: docker.DockerClient,
        request: ExecRequest,
        volume: str,
        fault: Guarantee | None,
    ) -> str:
        limits = request.limits
        ulimits = [
            docker.types.Ulimit(name="core", soft=0, hard=0),
            # Explicit, because an engine's defaults may exceed the host's hard limits (podman's
            # compat API asks for 1048576), and then the container cannot start at all. The
            # process count itself is limited by the pids cgroup, per container.
            docker.types.Ulimit(name="nofile", soft=1024, hard=1024),
            docker.types.Ulimit(name="nproc", soft=4096, hard=4096),
        ]
        if limits.cpu_seconds is not None:
            ulimits.append(
                docker.types.Ulimit(
                    name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds + 1
                )
            )
        if limits.file_bytes is not None:
            ulimits.append(
                docker.types.Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes)
            )
        options: dict[str, Any] = {
            "network_mode": "none" if request.network == "none" else "bridge",
            "read_only": True,
            "tmpfs": {"/tmp": "rw,size=64m,mode=1777,nosuid,nodev"},
            "mounts": [docker.types.Mount(_SCRATCH, volume, type="volume")],
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "privileged": False,
            "ipc_mode": "private",
            "ulimits": ulimits,
            # A minimal init as pid 1 (docker-init, podman's catatonit): the program is not
            # pid 1, so it dies by signals like anywhere else, and its orphans are reaped.
            "init": True,
        }
        if limits.memory_bytes is not None and fault != "memory_limited":
            options["mem_limit"] = limits.memory_bytes
            options["memswap_limit"] = limits.memory_bytes  # no swap beyond the limit
        if limits.processes is not None and fault != "process_count_limited":
            options["pids_limit"] = limits.processes
        if self._cpus is not None:
            options["nano_cpus"] = int(self._cpus * 1e9)
        created = client.api.create_container(
            self._image,
            command=list(request.argv),
            user=self._user,
            working_dir=f"{_SCRATCH}/{request.cwd}".rstrip("/.") or _SCRATCH,
            environment={
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": _SCRATCH,
                "TMPDIR": "/tmp",
                "LANG": "C.UTF-8",
                **request.env,
            },
            host_config=client.api.create_host_config(**options),
            stdin_open=True,
            tty=False,
            labels={"psych.sandbox": "execution"},
        )
        return str(created["Id"])

    def _archive(self, request: ExecRequest) -> bytes:
        uid, _, gid = self._user.partition(":")
        owner = {"uid": int(uid), "gid": int(gid or uid)}
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            dirs = {request.cwd} if request.cwd != "." else set()
            for rel in request.files:
                parts = rel.split("/")[:-1]
                dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
            for directory in sorted(dirs):
                info = tarfile.TarInfo(directory)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                info.uid, info.gid = owner["uid"], owner["gid"]
                tar.addfile(info)
            for rel, content in request.files.items():
                info = tarfile.TarInfo(rel)
                info.size, info.mode = len(content), 0o644
                info.uid, info.gid = owner["uid"], owner["gid"]
                tar.addfile(info, io.BytesIO(content))
        return buffer.getvalue()

    def _grade_setup(self, request: ExecRequest, tally: ExecTally, info: dict[str, Any]) -> None:
        host: dict[str, Any] = info.get("HostConfig") or {}
        config: dict[str, Any] = info.get("Config") or {}
        mounts: list[dict[str, Any]] = info.get("Mounts") or []
        limits = request.limits
        tally.grade("output_limited", "enforced")
        tally.grade("wall_time_limited", "enforced")  # confirmed after the run

        def expect(guarantee: Guarantee, wanted: int | None, got: object, what: str) -> None:
            problem = f"the engine reports {what}={got!r}, not {wanted!r}"
            tally.grade_limit(guarantee, wanted, None if got == wanted else problem)

        expect("memory_limited", limits.memory_bytes, host.get("Memory") or None, "Memory")
        expect(
            "process_count_limited", limits.processes, host.get("PidsLimit") or None, "PidsLimit"
        )
        cpu = next(
            (u for u in host.get("Ulimits") or [] if u.get("Name") in ("cpu", "RLIMIT_CPU")), None
        )
        expect("cpu_time_limited", limits.cpu_seconds, cpu and cpu.get("Soft"), "Ulimits cpu")
        binds = [m for m in mounts if m.get("Type") == "bind"]
        if binds:
            reason = f"host paths are bound in: {[m.get('Source') for m in binds]}"
            tally.grade("reads_confined", "not_enforced", reason)
            tally.grade("writes_confined", "not_enforced", reason)
        else:
            tally.grade("reads_confined", "enforced")
            if host.get("ReadonlyRootfs"):
                tally.grade("writes_confined", "enforced")
            else:
                tally.grade("writes_confined", "not_enforced", "the root filesystem is writable")
        if request.network == "egress":
            tally.grade("network_isolated", "not_enforced", "the request asked for egress")
        elif host.get("NetworkMode") == "none":
            tally.grade("network_isolated", "enforced")
        else:
            tally.grade(
                "network_isolated", "not_enforced", f"NetworkMode is {host.get('NetworkMode')!r}"
            )
        shared = [k for k in ("PidMode", "IpcMode") if str(host.get(k) or "").startswith("host")]
        if shared:
            tally.grade("process_isolated", "not_enforced", f"{shared} share the host's")
        else:
            tally.grade("process_isolated", "enforced")
        problems = []
        if str(config.get("User") or "") in _ROOT_USERS:
            problems.append("the container runs as root")
        if host.get("Privileged"):
            problems.append("the container is privileged")
        if host.get("CapAdd"):
            problems.append(f"capabilities were added: {host.get('CapAdd')}")
        dropped = {str(c).upper().removeprefix("CAP_") for c in host.get("CapDrop") or []}
        if "ALL" not in dropped and not dropped >= _DEFAULT_CAPS:
            problems.append(f"not every capability is dropped (dropped: {sorted(dropped)})")
        if not any("no-new-privileges" in str(o) for o in host.get("SecurityOpt") or []):
            problems.append("no-new-privileges is not set")
        tally.grade_checks("unprivileged", problems)

    def _start_and_stream(
        self,
        client: docker.DockerClient,
        request: ExecRequest,
        tally: ExecTally,
        container_id: str,
    ) -> None:
        attached = client.api.attach_socket(
            container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        raw: socket.socket = attached._sock
        deadline = time.monotonic() + request.limits.wall_seconds
        killed_for: LimitName | None = None
        try:
            client.api.start(container_id)
            if request.stdin:
                raw.sendall(request.stdin)
            raw.shutdown(socket.SHUT_WR)
            killed_for = self._stream(raw, request, tally, deadline)
        finally:
            # The socket is shared with the SocketIO the SDK made: both must close to free it.
            attached.close()
            raw.close()
        if killed_for is not None:
            tally.hit(killed_for)
            with contextlib.suppress(docker.errors.DockerException):
                client.api.kill(container_id)
        status = client.api.wait(
            container_id, timeout=int(_STOP_GRACE + request.limits.wall_seconds) + 1
        )
        state = client.api.inspect_container(container_id).get("State") or {}
        if state.get("Running"):
            tally.grade(
                "wall_time_limited", "not_enforced", "the container was still running after kill"
            )
        if state.get("OOMKilled"):
            tally.hit("memory")
        tally.ended_with_status(int(status.get("StatusCode", -1)))
        if tally.signal == 24:  # SIGXCPU in the container's (Linux) numbering
            tally.hit("cpu_time")

    def _stream(
        self, raw: socket.socket, request: ExecRequest, tally: ExecTally, deadline: float
    ) -> LimitName | None:
        """Read the multiplexed stream until it ends; return the limit that stopped it."""
        cap = request.limits.output_bytes
        pending = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "wall_time"
            raw.settimeout(min(left, 0.5))
            try:
                chunk = raw.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            pending += chunk
            while len(pending) >= 8:
                kind, size = pending[0], struct.unpack(">I", pending[4:8])[0]
                if len(pending) < 8 + size:
                    break
                payload, pending = pending[8 : 8 + size], pending[8 + size :]
                if not tally.keep("stderr" if kind == 2 else "stdout", payload, cap):
                    return "output"

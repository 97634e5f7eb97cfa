"""Per-execution cgroups for memory and process limits, on cgroup v1 or v2.

A `CgroupPlan` is made by the parent before the program starts: it finds where this process's
own cgroups are (``/proc/self/cgroup`` and ``/proc/self/mountinfo``), creates a child cgroup
for the execution under each, and writes the limits. The supervisor then moves itself into
them and checks ``/proc/self/cgroup``; only a limit that was written *and* whose cgroup the
supervisor was verified to be in is graded ``enforced``. Whatever fails is recorded with the
reason, and the sandbox falls back to rlimits.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

CgroupVersion = Literal["v1", "v2"]


@dataclass(frozen=True, slots=True)
class CgroupMount:
    """Where a cgroup hierarchy is mounted and which controllers it carries."""

    version: CgroupVersion
    mount_point: Path
    root: str
    controllers: frozenset[str]


@dataclass
class CgroupPlan:
    """The cgroups made for one execution, what was written, and what failed.

    Attributes:
        directories: the cgroup directories made (the supervisor joins them; they are removed).
        memory_path: the memory cgroup as ``/proc/self/cgroup`` will name it, once the limit
            was written; None when it was not.
        pids_path: the same for the process-count limit.
        problems: why a limit could not be set up, by ``"memory"`` or ``"pids"``.
    """

    version: CgroupVersion | None = None
    directories: list[Path] = field(default_factory=list)
    memory_path: str | None = None
    pids_path: str | None = None
    memory_dir: Path | None = None
    pids_dir: Path | None = None
    problems: dict[str, str] = field(default_factory=dict)

    def remove(self) -> None:
        """Remove the execution's cgroups once their processes are gone (a few tries)."""
        for directory in reversed(self.directories):
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _mounts(mountinfo: str) -> list[CgroupMount]:
    mounts = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2].split(",")
        if fstype == "cgroup2":
            controllers: frozenset[str] = frozenset()
            with contextlib.suppress(OSError):
                controllers = frozenset(
                    (Path(fields[4]) / "cgroup.controllers").read_text().split()
                )
            mounts.append(CgroupMount("v2", Path(fields[4]), fields[3], controllers))
        elif fstype == "cgroup":
            mounts.append(CgroupMount("v1", Path(fields[4]), fields[3], frozenset(options)))
    return mounts


def _own_paths(proc_cgroup: str) -> dict[str, str]:
    """Controller (or ``""`` for v2) to this process's cgroup path."""
    paths = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            paths[""] = path
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def detect_version() -> CgroupVersion | None:
    """``v2`` when memory and pids are on the unified hierarchy, ``v1`` when on v1
    hierarchies, None when neither is mounted."""
    try:
        mounts = _mounts(Path("/proc/self/mountinfo").read_text())
    except OSError:
        return None
    v1 = {c for m in mounts if m.version == "v1" for c in m.controllers}
    if {"memory", "pids"} <= v1:
        return "v1"
    if any(m.version == "v2" and {"memory", "pids"} <= m.controllers for m in mounts):
        return "v2"
    return "v1" if v1 & {"memory", "pids"} else None


def _kernel_path(directory: Path, mounts: list[CgroupMount]) -> str | None:
    """How ``/proc/self/cgroup`` names `directory`, or None when it is in no cgroup mount."""
    for mount in mounts:
        if directory.is_relative_to(mount.mount_point):
            relative = directory.relative_to(mount.mount_point)
            return str(Path(mount.root) / relative)
    return None


def _parent_for(
    controller: str, mounts: list[CgroupMount], own: dict[str, str]
) -> tuple[CgroupMount, Path] | str:
    """The hierarchy carrying `controller` and this process's cgroup directory in it."""
    for mount in mounts:
        if mount.version == "v1" and controller in mount.controllers and controller in own:
            path = own[controller]
        elif mount.version == "v2" and controller in mount.controllers and "" in own:
            path = own[""]
        else:
            continue
        if not Path(path).is_relative_to(mount.root):
            continue
        return mount, mount.mount_point / Path(path).relative_to(mount.root)
    return f"no mounted cgroup hierarchy carries the {controller} controller for this process"


def plan(
    name: str,
    *,
    memory_bytes: int | None,
    processes: int | None,
    root: Path | None = None,
    sabotage: str | None = None,
) -> CgroupPlan:
    """Create cgroups named `name` for one execution and write its limits.

    Args:
        root: create the cgroups under this directory instead of under this process's own
            cgroups (a delegated subtree). A directory that is not a cgroup is accepted here
            and caught when the supervisor's membership is verified.
        sabotage: ``"memory"`` or ``"pids"``: write an invalid value there, so that the limit
            really fails to set (fault injection for tests).
    """
    result = CgroupPlan()
    try:
        mounts = _mounts(Path("/proc/self/mountinfo").read_text())
        own = _own_paths(Path("/proc/self/cgroup").read_text())
    except OSError as exc:
        result.problems = {"memory": str(exc), "pids": str(exc)}
        return result
    for controller, value in (("memory", memory_bytes), ("pids", processes)):
        if value is None:
            continue
        found = _parent_for(controller, mounts, own)
        if isinstance(found, str):
            result.problems[controller] = found
            continue
        mount, parent = found
        result.version = mount.version
        directory = (root if root is not None else parent) / name
        try:
            if directory not in result.directories:
                directory.mkdir()
                result.directories.append(directory)
            if mount.version == "v2":
                _enable_v2(directory.parent, controller)
            _write_limit(directory, controller, mount.version, value, sabotage == controller)
        except OSError as exc:
            result.problems[controller] = f"{directory}: {exc.strerror or exc}"
            continue
        # A directory outside every cgroup mount gets a path no process can ever be in, so
        # the supervisor's membership check fails and the limit grades not enforced.
        path = _kernel_path(directory, mounts) or f"(not a cgroup: {directory})"
        if controller == "memory":
            result.memory_path, result.memory_dir = path, directory
        else:
            result.pids_path, result.pids_dir = path, directory
    return result


def _enable_v2(parent: Path, controller: str) -> None:
    control = parent / "cgroup.subtree_control"
    if controller not in control.read_text().split():
        control.write_text(f"+{controller}")


def _write_limit(
    directory: Path, controller: str, version: CgroupVersion, value: int, sabotage: bool
) -> None:
    text = "not-a-number" if sabotage else str(value)
    if controller == "memory":
        if version == "v1":
            (directory / "memory.limit_in_bytes").write_text(text)
            swap = directory / "memory.memsw.limit_in_bytes"
            if swap.exists():  # without it, swap would stretch the limit
                swap.write_text(text)
        else:
            (directory / "memory.max").write_text(text)
            swap = directory / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
    else:
        (directory / "pids.max").write_text(text)

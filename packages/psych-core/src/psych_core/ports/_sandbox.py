"""The `Sandbox` port: run a program under stated limits and say what was actually proved.

Every execution is graded on ten guarantees (DESIGN section 8). A grade comes from what the
backend set up or checked for *this* execution, never from the backend's name: a limit that could
not be set is ``not_enforced``; a check that could not be made is ``unknown``.

What each guarantee means when it is ``enforced``:

- ``wall_time_limited``: once ``limits.wall_seconds`` have passed, every process of the execution
  is killed, and none survives the execution (not even one that left its process group).
- ``cpu_time_limited``: no process of the execution can use more than ``limits.cpu_seconds`` of
  CPU time (RLIMIT_CPU semantics). The execution as a whole is also bounded by the wall limit
  times the host's cores, so this bound is per process.
- ``memory_limited``: the processes of the execution *together* cannot hold more than
  ``limits.memory_bytes`` (a cgroup or container limit). A per-process address-space rlimit is
  not this guarantee: forking multiplies it.
- ``process_count_limited``: the execution cannot have more than ``limits.processes`` processes
  at once, counted for this execution alone (RLIMIT_NPROC counts per user and is not this).
- ``output_limited``: stdout and stderr are each cut at ``limits.output_bytes``; an execution that
  writes more is stopped and nothing past the cap is kept.
- ``reads_confined``: the execution can read nothing of the host's filesystem but the paths
  the backend grants read-only and its own scratch directory.
- ``writes_confined``: the execution can write nowhere on the host but its scratch directory.
- ``network_isolated``: the execution has no network but a loopback of its own.
- ``process_isolated``: the execution can neither see, signal, trace nor read the memory or
  environment of any host process outside it.
- ``unprivileged``: the execution holds no capability and no root identity on the host, and
  cannot gain privileges (no new privileges: setuid binaries do not elevate).

Levels: ``kernel`` when the isolation guarantees (reads, writes, process, unprivileged, and the
network unless egress was asked for) are enforced on top of ``limited``; ``limited`` when the
wall time, CPU time and output are limited; ``none`` otherwise. See `level_reached`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, Protocol, get_args, runtime_checkable

# Defined next to the tool specs, which state a `SandboxTool`'s requirements in these words.
from psych_core._isolation import Guarantee as Guarantee
from psych_core._isolation import IsolationLevel as IsolationLevel
from psych_core._isolation import Network as Network

GUARANTEES: tuple[Guarantee, ...] = get_args(Guarantee)
"""The ten guarantees, in the order DESIGN section 8 lists them."""

Grade = Literal["enforced", "not_enforced", "unknown"]
"""How one guarantee held for one execution: proved set up, known not to be, or not known."""

LimitName = Literal["wall_time", "cpu_time", "memory", "output"]
"""Which limit stopped an execution, when the backend could tell."""

LIMITED_GUARANTEES: frozenset[Guarantee] = frozenset(
    ("wall_time_limited", "cpu_time_limited", "output_limited")
)
"""What level ``limited`` requires."""

KERNEL_GUARANTEES: frozenset[Guarantee] = LIMITED_GUARANTEES | frozenset(
    ("reads_confined", "writes_confined", "process_isolated", "unprivileged")
)
"""What level ``kernel`` requires, with ``network_isolated`` too unless egress was asked for."""

_LEVEL_ORDER: dict[IsolationLevel, int] = {"none": 0, "limited": 1, "kernel": 2}

MiB = 1024 * 1024


def level_guarantees(level: IsolationLevel, network: Network = "none") -> frozenset[Guarantee]:
    """The guarantees that must all be ``enforced`` for an execution to reach `level`."""
    if level == "none":
        return frozenset()
    if level == "limited":
        return LIMITED_GUARANTEES
    if network == "none":
        return KERNEL_GUARANTEES | {"network_isolated"}
    return KERNEL_GUARANTEES


def level_reached(grades: Mapping[Guarantee, Grade], network: Network = "none") -> IsolationLevel:
    """The highest level whose guarantees are all ``enforced`` in `grades`."""
    for level in ("kernel", "limited"):
        needed = level_guarantees(level, network)
        if all(grades.get(g) == "enforced" for g in needed):
            return level
    return "none"


def level_at_least(reached: IsolationLevel, required: IsolationLevel) -> bool:
    """Whether `reached` is `required` or stronger."""
    return _LEVEL_ORDER[reached] >= _LEVEL_ORDER[required]


@dataclass(frozen=True, slots=True)
class ExecLimits:
    """Resource limits for one execution. ``None`` leaves a limit unset (and its guarantee
    ``not_enforced``); wall time and output are always limited.

    Attributes:
        wall_seconds: real time before every process of the execution is killed.
        cpu_seconds: CPU time each process may use.
        memory_bytes: memory the execution's processes may hold together.
        processes: processes the execution may have at once.
        output_bytes: bytes kept of stdout, and of stderr, each.
        file_bytes: the largest file a process may write (RLIMIT_FSIZE).
    """

    wall_seconds: float = 30.0
    cpu_seconds: int | None = 30
    memory_bytes: int | None = 512 * MiB
    processes: int | None = 64
    output_bytes: int = 1 * MiB
    file_bytes: int | None = 64 * MiB

    def __post_init__(self) -> None:
        if not self.wall_seconds > 0:
            raise ValueError(f"ExecLimits.wall_seconds must be positive, got {self.wall_seconds}")
        if self.output_bytes < 0:
            raise ValueError(f"ExecLimits.output_bytes must be >= 0, got {self.output_bytes}")
        for name in ("cpu_seconds", "memory_bytes", "processes", "file_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"ExecLimits.{name} must be >= 1 or None, got {value}")


def _check_relative(what: str, path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or ".." in parts or "\0" in path:
        raise ValueError(
            f"ExecRequest {what} {path!r} must be a relative path inside the scratch directory, "
            "without '..'"
        )


@dataclass(frozen=True, slots=True)
class ExecRequest:
    """One program to run, and the terms it must run under.

    Attributes:
        argv: the program and its arguments; the program is looked up on the sandbox's PATH.
        stdin: bytes fed to the program's standard input.
        files: files to place in the scratch directory before the run, by relative path.
        env: environment variables, on top of a minimal environment the backend sets
            (PATH, HOME and TMPDIR pointing into the scratch, LANG); nothing else of the
            caller's environment reaches the program.
        cwd: the working directory, relative to the scratch directory.
        limits: resource limits.
        network: ``none`` (the default) or ``egress``.
        require_level: the isolation level the execution must reach.
        require: guarantees that must be ``enforced``, on top of those `require_level` implies.
    """

    argv: tuple[str, ...]
    stdin: bytes = b""
    files: Mapping[str, bytes] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "."
    limits: ExecLimits = field(default_factory=ExecLimits)
    network: Network = "none"
    require_level: IsolationLevel = "none"
    require: frozenset[Guarantee] = frozenset()

    def __post_init__(self) -> None:
        argv: object = self.argv
        if isinstance(argv, str) or not self.argv:
            raise ValueError("ExecRequest.argv must be a non-empty sequence of strings")
        object.__setattr__(self, "argv", tuple(self.argv))
        object.__setattr__(self, "require", frozenset(self.require))
        unknown = set(self.require) - set(GUARANTEES)
        if unknown:
            raise ValueError(
                f"ExecRequest.require names unknown guarantees {sorted(unknown)}; "
                f"known: {', '.join(GUARANTEES)}"
            )
        if self.require_level not in _LEVEL_ORDER:
            raise ValueError(f"ExecRequest.require_level must be one of {tuple(_LEVEL_ORDER)}")
        if self.network not in get_args(Network):
            raise ValueError(
                f"ExecRequest.network must be 'none' or 'egress', got {self.network!r}"
            )
        for path in self.files:
            _check_relative("file", path)
        if self.cwd != ".":
            _check_relative("cwd", self.cwd)
        for key in self.env:
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"ExecRequest.env has an invalid variable name {key!r}")

    @property
    def required(self) -> frozenset[Guarantee]:
        """Every guarantee that must be ``enforced``: `require` and those of `require_level`."""
        return self.require | level_guarantees(self.require_level, self.network)

    def unmet(self, grades: Mapping[Guarantee, Grade]) -> tuple[Guarantee, ...]:
        """The required guarantees that `grades` do not show ``enforced``, in canonical order."""
        needed = self.required
        return tuple(g for g in GUARANTEES if g in needed and grades.get(g) != "enforced")


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one execution did, and what was proved about how it ran.

    Attributes:
        backend: the name of the sandbox that ran it.
        exit_code: the program's exit status, or None when it was killed by a signal (or withheld).
        signal: the signal that ended the program, or None.
        stdout: standard output, at most ``limits.output_bytes``; empty when withheld.
        stderr: standard error, at most ``limits.output_bytes``; empty when withheld.
        stdout_truncated: whether stdout was cut at the cap.
        stderr_truncated: whether stderr was cut at the cap.
        grades: each of the ten guarantees, graded from what was set up for this execution.
        level: the isolation level the grades reach.
        reasons: why a guarantee is not ``enforced``, for those that are not.
        limit_hit: which limit stopped the program, when one did and the backend could tell.
        withheld: why the output was withheld (produced, or about to be produced, under weaker
            terms than the request required), or None when it was not.
    """

    backend: str
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    grades: Mapping[Guarantee, Grade]
    level: IsolationLevel
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    reasons: Mapping[Guarantee, str] = field(default_factory=dict)
    limit_hit: LimitName | None = None
    withheld: str | None = None

    def __post_init__(self) -> None:
        missing = [g for g in GUARANTEES if g not in self.grades]
        if missing:
            raise ValueError(f"ExecResult from {self.backend} does not grade {missing}")
        grades = {g: self.grades[g] for g in GUARANTEES}
        reasons = {g: self.reasons[g] for g in GUARANTEES if g in self.reasons}
        object.__setattr__(self, "grades", MappingProxyType(grades))
        object.__setattr__(self, "reasons", MappingProxyType(reasons))

    @property
    def ok(self) -> bool:
        """Whether the program exited 0 and its output was not withheld."""
        return self.exit_code == 0 and self.withheld is None

    @property
    def stdout_text(self) -> str:
        """stdout decoded as UTF-8, undecodable bytes replaced."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        """stderr decoded as UTF-8, undecodable bytes replaced."""
        return self.stderr.decode("utf-8", "replace")

    def enforced(self, guarantee: Guarantee) -> bool:
        """Whether `guarantee` was graded ``enforced``."""
        return self.grades[guarantee] == "enforced"

    def withhold(self, reason: str) -> ExecResult:
        """A copy with the program's output and exit status removed, and `reason` kept."""
        return replace(
            self,
            exit_code=None,
            signal=None,
            stdout=b"",
            stderr=b"",
            stdout_truncated=False,
            stderr_truncated=False,
            withheld=reason,
        )


def withhold_unmet(request: ExecRequest, result: ExecResult) -> ExecResult:
    """Return `result`, withheld when its grades miss a guarantee `request` requires.

    Every backend ends an execution with this, so the rule is the same everywhere: output
    produced under weaker terms than required never reaches the caller; the grades and the
    reasons do.
    """
    unmet = request.unmet(result.grades)
    if not unmet or result.withheld is not None:
        return result
    details = "; ".join(
        f"{g} is {result.grades[g]}" + (f" ({result.reasons[g]})" if g in result.reasons else "")
        for g in unmet
    )
    return result.withhold(
        f"{result.backend} could not enforce what the request requires: {details}"
    )


@runtime_checkable
class Sandbox(Protocol):
    """Runs one program under limits, and grades what it proved.

    The contract every backend keeps (certified by
    `psych_runtime.testing.sandbox_contract.SandboxContract`):

    1. **Refuse before running what cannot be met.** `check` and `run` raise `SandboxRefused`,
       naming the backend and the unmet guarantees, when the request requires a level or a
       guarantee this backend cannot reach on this host. Nothing runs: no process is started,
       no file is placed.
    2. **Grade from what was set up for this execution.** Each of the ten grades in the result
       comes from what the backend actually set up or verified for this run (a limit written and
       the process placed under it, a namespace created), never from its name or its defaults.
       A setup step that failed grades ``not_enforced``; one that could not be checked grades
       ``unknown``. A grade never says ``enforced`` for something that was not enforced.
    3. **Withhold output produced under weaker terms than required.** When a required guarantee
       turns out not ``enforced`` at run time, the result carries ``withheld`` with the reason,
       empty stdout and stderr and no exit status, and still every grade and reason. A backend
       that finds the shortfall before starting the program does not start it.
    4. **Clean up.** When `run` returns, no process of the execution is left (when
       ``wall_time_limited`` is ``enforced``) and the scratch directory is removed.

    Errors: `SandboxRefused` (requirements cannot be met), `SandboxUnavailable` (the backend's
    machinery, such as its engine or image, is missing or broken; what to fix is in the message).
    A program that fails, crashes or hits a limit is not an error: that is in the result.

    A backend records what it set up in an `ExecTally`, whose `ExecTally.result` keeps rules 2
    and 3 the same everywhere; ``psych_adapter_kit`` holds the IO pieces backends share.
    """

    @property
    def name(self) -> str:
        """A short name for the backend, used in results and errors (``"subprocess"``)."""
        ...

    def check(self, request: ExecRequest) -> None:
        """Raise `SandboxRefused` when this backend could never meet `request` on this host."""
        ...

    async def run(self, request: ExecRequest) -> ExecResult:
        """Run `request` to completion (or its limits) and return the graded result."""
        ...

"""`ExecTally`: what one sandbox execution set up and saw, and the `ExecResult` it makes.

Every `Sandbox` backend records the same things the same way while an execution runs: a grade
for each guarantee (with the reason when it is not ``enforced``), the output it kept under the
cap, the limit that stopped the program and how the program ended. `ExecTally.result` turns that
into the result value: the level the grades reach, and the output withheld when a guarantee the
request requires is not ``enforced`` (`withhold_unmet`). Pure: the backend does the IO and tells
the tally what it found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from psych_core.ports._sandbox import (
    GUARANTEES,
    ExecRequest,
    ExecResult,
    Grade,
    Guarantee,
    LimitName,
    level_reached,
    withhold_unmet,
)

Stream = Literal["stdout", "stderr"]
"""One of the program's two outputs."""

_LAST_SIGNAL = 64
"""SIGRTMAX on Linux: an exit status past 128 + this is the program's own, not a signal's."""


@dataclass
class ExecTally:
    """What one execution set up and saw, filled in as it goes; `result` makes the `ExecResult`.

    One execution fills one tally, from one task or thread at a time (it holds no lock).

    Attributes:
        backend: the name of the sandbox running the execution.
        grades: the guarantees graded so far.
        reasons: why each graded guarantee that is not ``enforced`` is not.
        stdout: standard output kept so far, never more than the cap given to `keep`.
        stderr: standard error kept so far, likewise.
        stdout_truncated: whether stdout reached past its cap.
        stderr_truncated: whether stderr reached past its cap.
        limit_hit: the first limit that stopped the program, when the backend could tell.
        exit_code: the program's exit status, when it exited.
        signal: the signal that ended the program, when one did.
    """

    backend: str
    grades: dict[Guarantee, Grade] = field(default_factory=dict)
    reasons: dict[Guarantee, str] = field(default_factory=dict)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limit_hit: LimitName | None = None
    exit_code: int | None = None
    signal: int | None = None

    def grade(self, guarantee: Guarantee, grade: Grade, reason: str | None = None) -> None:
        """Grade `guarantee`, replacing an earlier grade; one not ``enforced`` keeps `reason`."""
        self.grades[guarantee] = grade
        if grade == "enforced":
            self.reasons.pop(guarantee, None)
        elif reason:
            self.reasons[guarantee] = reason

    def grade_limit(self, guarantee: Guarantee, requested: int | None, problem: str | None) -> None:
        """Grade a limit the request may leave unset (``None``): ``not_enforced`` when it does,
        ``enforced`` when its setup reported no `problem`, ``not_enforced`` with it otherwise."""
        if requested is None:
            self.grade(guarantee, "not_enforced", "the request sets no limit for it")
        elif problem is None:
            self.grade(guarantee, "enforced")
        else:
            self.grade(guarantee, "not_enforced", problem)

    def grade_checks(
        self, guarantee: Guarantee, problems: Sequence[str], grade: Grade = "not_enforced"
    ) -> None:
        """Grade `guarantee` from what checking its setup found: ``enforced`` when no
        problem, `grade` with the problems as the reason otherwise (``unknown`` when what
        was found is only that the checks could not be made)."""
        if problems:
            self.grade(guarantee, grade, "; ".join(problems))
        else:
            self.grade(guarantee, "enforced")

    def grade_rest(self, grade: Grade, reason: str) -> None:
        """Give every guarantee not graded yet `grade`, with `reason`."""
        for guarantee in GUARANTEES:
            if guarantee not in self.grades:
                self.grade(guarantee, grade, reason)

    def unmet(self, request: ExecRequest) -> tuple[Guarantee, ...]:
        """The guarantees `request` requires that are not graded ``enforced`` (yet)."""
        return request.unmet(self.grades)

    def hit(self, limit: LimitName) -> None:
        """Record that `limit` stopped the program, unless an earlier limit already did."""
        if self.limit_hit is None:
            self.limit_hit = limit

    def keep(self, stream: Stream, chunk: bytes, cap: int) -> bool:
        """Keep what of `chunk` fits in `stream` under `cap` bytes.

        Returns False when it did not all fit: the stream is then marked truncated and the
        ``output`` limit hit, and the caller stops the program.
        """
        buffer = self.stdout if stream == "stdout" else self.stderr
        room = cap - len(buffer)
        buffer.extend(chunk[: max(room, 0)])
        if len(chunk) <= room:
            return True
        if stream == "stdout":
            self.stdout_truncated = True
        else:
            self.stderr_truncated = True
        self.hit("output")
        return False

    def ended_with_status(self, status: int) -> None:
        """Record a shell-style exit status, as bubblewrap and container engines report one:
        128 + N is a program killed by signal N (so a program that exits with such a status on
        purpose reads as a signal); a negative status (not known) records nothing."""
        if 128 < status <= 128 + _LAST_SIGNAL:
            self.signal = status - 128
        elif status >= 0:
            self.exit_code = status

    def result(self, request: ExecRequest) -> ExecResult:
        """The graded result of `request`, withheld when a guarantee it requires is not
        ``enforced`` (`withhold_unmet`). Every one of the ten guarantees must be graded."""
        result = ExecResult(
            backend=self.backend,
            exit_code=self.exit_code,
            signal=self.signal,
            stdout=bytes(self.stdout),
            stderr=bytes(self.stderr),
            stdout_truncated=self.stdout_truncated,
            stderr_truncated=self.stderr_truncated,
            grades=self.grades,
            level=level_reached(self.grades, request.network),
            reasons=self.reasons,
            limit_hit=self.limit_hit,
        )
        return withhold_unmet(request, result)

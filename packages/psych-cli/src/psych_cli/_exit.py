"""What the `psych` command's exit codes mean, and the error that carries one."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The exit codes of every `psych` command; `psych --help` lists them."""

    OK = 0
    """Done: for `inspect`, the run exists and has not failed or been cancelled."""
    RUN_FAILED = 1
    """The run failed or was cancelled, or there is no such run in the tenant; for `doctor`,
    something it checked is not fine (the store does not answer, holds no Psych schema, or its
    schema is behind or newer than this adapter)."""
    USAGE = 2
    """The command line is wrong: an unknown option, a bad store URL, a folder that exists."""
    STORE = 3
    """The store cannot be used: its adapter is not installed, it cannot be reached, or it
    holds no Psych schema."""
    INTERRUPTED = 130
    """Stopped with Ctrl-C."""


_DONE = "0 done"
_RUN_FAILED = "1 the run failed, was cancelled or was not found"
_STORE = "3 store unusable (adapter not installed, unreachable, no Psych schema)"
_INTERRUPTED = "130 interrupted"


def _exit_codes(*meanings: str) -> str:
    return f"Exit codes: {'; '.join(meanings)}."


# Each command's help lists the codes that command can exit with; `psych --help` lists all.
EXIT_CODES_HELP = _exit_codes(
    _DONE,
    "1 (inspect) the run failed, was cancelled or was not found, (doctor) a check is not fine",
    "2 usage error (bad option or store URL, folder exists)",
    "3 (inspect, runs) store unusable (adapter not installed, unreachable, no Psych schema)",
    _INTERRUPTED,
)
INSPECT_EXIT_CODES = _exit_codes(
    _DONE, _RUN_FAILED, "2 usage error (bad option or store URL)", _STORE, _INTERRUPTED
)
RUNS_EXIT_CODES = _exit_codes(
    _DONE, "2 usage error (bad option or store URL)", _STORE, _INTERRUPTED
)
NEW_EXIT_CODES = _exit_codes(
    _DONE, "2 usage error (bad option or name, a folder that is not empty)", _INTERRUPTED
)
DOCTOR_EXIT_CODES = _exit_codes(
    "0 everything checked is fine",
    "1 something checked is not fine (the store does not answer, holds no Psych schema, or "
    "its schema is behind or newer than this adapter)",
    "2 usage error (bad option or store URL)",
    _INTERRUPTED,
)
SKILLS_EXIT_CODES = _exit_codes(
    _DONE,
    "2 usage error (bad option, no such folder, skills that differ without --force)",
    _INTERRUPTED,
)


class CliError(Exception):
    """A failure the command reports in one message and an exit code, without a traceback.

    Attributes:
        message: what went wrong, naming the run, store or file involved.
        code: the exit code it ends the command with.
        hint: what to do about it, when there is something to do.
    """

    def __init__(self, message: str, code: ExitCode, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint

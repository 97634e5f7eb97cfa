"""What can still be said of a run whose log is corrupt.

A corrupt log is never repaired and never skipped: reports raise `CorruptLog`. But a screen
must still draw the run, so its status is folded from the records before the first one that
does not fit, and says ``failed`` with the reason ``corrupt_log`` and the error naming the run
and the seq.
"""

from __future__ import annotations

from collections.abc import Sequence

from psych_core._errors import CorruptLog
from psych_core._fold import fold
from psych_core._records import Record
from psych_core._report import RunStatus, status_of
from psych_core._state import RunState

CORRUPT_LOG = "corrupt_log"
"""The failure reason of a run whose log is corrupt."""


def fold_readable(state: RunState, records: Sequence[Record]) -> tuple[RunState, CorruptLog | None]:
    """Fold `records` up to the first that does not fit: the state, and why it stopped.

    `NewerLog` is raised as it is: a log from a newer psych-core is not corrupt, only
    unreadable here.
    """
    for record in records:
        try:
            state = fold(state, record)
        except CorruptLog as corrupt:
            return state, corrupt
    return state, None


def readable_status(run_id: str, records: Sequence[Record]) -> RunStatus:
    """The status of the run whose log is `records`, corrupt or not."""
    state, corrupt = fold_readable(RunState.empty(run_id), records)
    status = status_of(state)
    if corrupt is None:
        return status
    return status.model_copy(
        update={
            "status": "failed",
            "waiting": None,
            "waiting_for": (),
            "due_at": None,
            "last_seq": records[-1].seq if records else -1,
            "failure_reason": CORRUPT_LOG,
            "error": str(corrupt),
        }
    )

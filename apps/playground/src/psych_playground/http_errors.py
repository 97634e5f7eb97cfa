"""Psych's errors as HTTP answers: ``{"detail": "..."}`` with the library's own message, which
names the run, the call or the seq involved and says what to do.

    404  RunNotFound                       no such run in the console's tenant
    409  RunFinished, NotAwaitingApproval, the run's state does not allow it (it has ended, the
         NotContinuable, NotReplayable,    call is not waiting for a decision, the run is
         IdempotencyConflict, KindConflict, still going), or a name or key is taken
         DuplicateSignal                   (an answer given twice)
    409  FoldError                         the run's log cannot be read (a corrupt log)
    422  InvalidAnswer, SpecError,         what was sent cannot be used as it is
         BadCursor
    422  SpecRejected                      a spec to publish: "detail" is a list of problems,
                                           each with "loc", "msg" and "type"
    403  PolicyDenied
    503  StoreUnavailable                  the database does not answer; try again
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from psych_playground.catalog import KindConflict
from psych_playground.runs_query import BadCursor
from psych_playground.spec_check import SpecRejected
from psych_runtime.errors import (
    DuplicateSignal,
    FoldError,
    IdempotencyConflict,
    InvalidAnswer,
    NotAwaitingApproval,
    NotContinuable,
    NotReplayable,
    PolicyDenied,
    RunFinished,
    RunNotFound,
    SpecError,
    StoreUnavailable,
)

STATUS: tuple[tuple[type[Exception], int], ...] = (
    (RunNotFound, 404),
    (RunFinished, 409),
    (NotAwaitingApproval, 409),
    (NotContinuable, 409),
    (NotReplayable, 409),
    (IdempotencyConflict, 409),
    (DuplicateSignal, 409),
    (KindConflict, 409),
    (FoldError, 409),
    (InvalidAnswer, 422),
    (SpecError, 422),
    (BadCursor, 422),
    (PolicyDenied, 403),
    (StoreUnavailable, 503),
)


def install_error_handlers(app: FastAPI) -> None:
    """Answer each error of `STATUS` with its status and its message."""
    for error, status in STATUS:

        def handle(request: Request, exc: Exception, status: int = status) -> JSONResponse:
            return JSONResponse({"detail": str(exc)}, status_code=status)

        app.add_exception_handler(error, handle)
    app.add_exception_handler(SpecRejected, _spec_rejected)


def _spec_rejected(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SpecRejected)
    detail = [{"loc": list(p.loc), "msg": p.msg, "type": p.type} for p in exc.problems]
    return JSONResponse({"detail": detail}, status_code=422)

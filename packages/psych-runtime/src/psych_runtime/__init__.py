"""Psych Runtime: run AI agents durably inside your own application.

One request becomes one Run, recorded in one append-only log. Status, reports and the point a
crashed run resumes from are all folds of that log. Everything a user can hold is exported
here; `__all__` is the whole public surface.
"""

import contextlib

from psych_core import (
    SCHEMA_VERSION,
    AgentSpec,
    AppendResult,
    ApprovalRule,
    ArgRule,
    AssistantMessage,
    AttemptStarted,
    Batch,
    Body,
    Claim,
    CodeTool,
    Comparison,
    Conflict,
    Cost,
    CostSource,
    DuplicateSignal,
    FoldError,
    IdempotencyConflict,
    InboxPending,
    LeaseLost,
    Message,
    ModelCallFailed,
    ModelCallFinished,
    ModelClient,
    ModelError,
    ModelRef,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    NewRun,
    Page,
    PsychError,
    Record,
    RecordTooLarge,
    RenewResult,
    Report,
    RunAdmitted,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunFinished,
    RunIndex,
    RunNotFound,
    RunQuery,
    RunRow,
    RunStatus,
    RunStatusName,
    Scope,
    ScopedStore,
    Skill,
    SpecError,
    Store,
    StoreError,
    StoreLimits,
    StoreUnavailable,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallReport,
    ToolCallSettled,
    ToolCallStarted,
    ToolDefinition,
    ToolFailureReason,
    ToolNotRegistered,
    ToolOutcome,
    ToolRef,
    ToolResultMessage,
    Totals,
    Usage,
    UsageSource,
    UserMessage,
    WaitingReason,
)
from psych_runtime._surface._reading import read_log, report, status
from psych_runtime._surface._session import Session, session
from psych_runtime._surface._view import RunView
from psych_runtime.adapters import MemoryStore
from psych_runtime.runtime import Clock, SystemClock, dispatch
from psych_runtime.tools import CodeFunction, ToolContext, ToolFunction

__all__ = [
    # running agents
    "Session",
    "dispatch",
    "session",
    # reading runs back
    "Report",
    "RunStatus",
    "RunStatusName",
    "RunView",
    "ToolCallReport",
    "ToolOutcome",
    "Totals",
    "WaitingReason",
    "read_log",
    "report",
    "status",
    # specs
    "AgentSpec",
    "ApprovalRule",
    "ArgRule",
    "CodeTool",
    "Comparison",
    "ModelRef",
    "Skill",
    "ToolRef",
    # tools
    "CodeFunction",
    "ToolContext",
    "ToolFunction",
    # scope, usage, cost, time
    "Clock",
    "Cost",
    "CostSource",
    "Scope",
    "SystemClock",
    "Usage",
    "UsageSource",
    # model port
    "AssistantMessage",
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "ToolCall",
    "ToolDefinition",
    "ToolResultMessage",
    "UserMessage",
    # store port
    "AppendResult",
    "Batch",
    "Claim",
    "MemoryStore",
    "NewRun",
    "Page",
    "RenewResult",
    "RunIndex",
    "RunQuery",
    "RunRow",
    "ScopedStore",
    "Store",
    "StoreLimits",
    # records
    "SCHEMA_VERSION",
    "AttemptStarted",
    "Body",
    "ModelCallFailed",
    "ModelCallFinished",
    "Record",
    "RunAdmitted",
    "RunCancelled",
    "RunCompleted",
    "RunFailed",
    "ToolCallFailed",
    "ToolCallFinished",
    "ToolCallSettled",
    "ToolCallStarted",
    "ToolFailureReason",
    # errors
    "Conflict",
    "DuplicateSignal",
    "FoldError",
    "IdempotencyConflict",
    "InboxPending",
    "LeaseLost",
    "ModelError",
    "PsychError",
    "RecordTooLarge",
    "RunFinished",
    "RunNotFound",
    "SpecError",
    "StoreError",
    "StoreUnavailable",
    "ToolNotRegistered",
]


def _claim_exports() -> None:
    # Every export reports this package as its home, so users see one public name for it.
    for name in __all__:
        obj = globals()[name]
        if isinstance(obj, type) or callable(obj):
            with contextlib.suppress(AttributeError, TypeError):  # aliases of typing forms
                obj.__module__ = __name__


_claim_exports()

"""Psych Runtime: run AI agents durably inside your own application.

One request becomes one Run, recorded in one append-only log. Status, reports and the point a
crashed run resumes from are all folds of that log. Everything a user can hold is exported
here; `__all__` is the whole public surface.
"""

import contextlib
import inspect
import typing

from psych_core import (
    GUARANTEES,
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
    EgressError,
    EgressRefused,
    ExecLimits,
    ExecRequest,
    ExecResult,
    FoldError,
    Grade,
    Guarantee,
    IdempotencyConflict,
    InboxPending,
    IsolationLevel,
    LeaseLost,
    LimitName,
    Message,
    ModelCallFailed,
    ModelCallFinished,
    ModelClient,
    ModelError,
    ModelFailure,
    ModelRef,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    Network,
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
    Sandbox,
    SandboxError,
    SandboxRefused,
    SandboxUnavailable,
    Scope,
    ScopedStore,
    SecretNotFound,
    SecretResolver,
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
    level_reached,
    withhold_unmet,
)
from psych_runtime._surface._reading import read_log, report, status
from psych_runtime._surface._session import Session, session
from psych_runtime._surface._view import RunView
from psych_runtime.adapters import EnvSecretResolver, MemoryStore, SubprocessSandbox
from psych_runtime.model import ModelPrice, OpenAIChatClient, PriceTable, TieredPrice
from psych_runtime.model.egress import Egress, EgressPolicy, EgressResponse
from psych_runtime.runtime import Clock, SystemClock, Worker, dispatch
from psych_runtime.tools import CodeFunction, ToolContext, ToolFunction

__all__ = [
    # running agents
    "Session",
    "Worker",
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
    # model client, usage and cost, egress and secrets
    "Egress",
    "EgressPolicy",
    "EgressResponse",
    "EnvSecretResolver",
    "ModelFailure",
    "ModelPrice",
    "OpenAIChatClient",
    "PriceTable",
    "SecretResolver",
    "TieredPrice",
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
    # sandboxes
    "GUARANTEES",
    "ExecLimits",
    "ExecRequest",
    "ExecResult",
    "Grade",
    "Guarantee",
    "IsolationLevel",
    "LimitName",
    "Network",
    "Sandbox",
    "SubprocessSandbox",
    "level_reached",
    "withhold_unmet",
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
    "EgressError",
    "EgressRefused",
    "FoldError",
    "IdempotencyConflict",
    "InboxPending",
    "LeaseLost",
    "ModelError",
    "PsychError",
    "RecordTooLarge",
    "RunFinished",
    "RunNotFound",
    "SandboxError",
    "SandboxRefused",
    "SandboxUnavailable",
    "SecretNotFound",
    "SpecError",
    "StoreError",
    "StoreUnavailable",
    "ToolNotRegistered",
]


def _claim_exports() -> None:
    # Every export reports this package as its home, so users see one public name for it.
    # A class's string annotations are resolved first, in the module that defined them:
    # afterwards they would be looked up here, where their names are not (and FastAPI,
    # TypeAdapter or typing.get_type_hints on a RunView would fail).
    for name in __all__:
        obj = globals()[name]
        if isinstance(obj, type):
            own = inspect.get_annotations(obj)
            if own:
                params = {p.__name__: p for p in getattr(obj, "__type_params__", ())}
                hints = typing.get_type_hints(obj, localns=params or None, include_extras=True)
                obj.__annotations__ = {key: hints[key] for key in own if key in hints}
        if isinstance(obj, type) or callable(obj):
            with contextlib.suppress(AttributeError, TypeError):  # aliases of typing forms
                obj.__module__ = __name__


_claim_exports()

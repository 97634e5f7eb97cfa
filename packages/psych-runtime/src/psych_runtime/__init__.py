"""Psych Runtime: run AI agents durably inside your own application.

One request becomes one Run, recorded in one append-only log. Status, reports and the point a
crashed run resumes from are all folds of that log.

What an app uses is exported here; `__all__` lists it. The rest of the public surface lives
in rooms of its own, each with its `__all__`:

- `psych_runtime.records`: the records of a run's log and the signals in its inbox.
- `psych_runtime.ports`: the ports adapters implement (`Store`, `ModelClient`, `Sandbox`, ...)
  and the types only an adapter author needs.
- `psych_runtime.errors`: every error Psych raises, in one tree under `PsychError`.
- `psych_runtime.workflows`: the fluent builder of workflow specs (`Workflow`, `ref`, `lit`, the
  condition helpers) and the classes of a spec's steps, values and conditions.
- `psych_runtime.mcp`: MCP servers as tool sources (`McpServer` in a spec, `McpStdio` and
  `McpHttp` in the `Runtime`).
- `psych_runtime.a2a`: Agent2Agent peers as tool sources (`A2APeer` in a spec, `A2AHttp` in
  the `Runtime`), and runs served to A2A clients.
- `psych_runtime.conversations`: threads of runs, steering queues, memory and live text.

`FakeModel` and the contract suites are in `psych_runtime.testing`.
"""

import typing as _typing

from psych_core import (
    AgentSpec,
    AgentTool,
    ApprovalRule,
    ArgRule,
    CodeTool,
    Comparison,
    Cost,
    CostSource,
    HttpMethod,
    HttpTool,
    ModelRef,
    RejectedOutput,
    Report,
    RunQuery,
    RunStatus,
    RunStatusName,
    SandboxTool,
    Scope,
    ScopedStore,
    Skill,
    ToolCallReport,
    ToolOutcome,
    ToolRef,
    Totals,
    Usage,
    UsageSource,
    WaitingReason,
    WorkflowSpec,
    WorkflowTool,
)
from psych_runtime import _claim, errors, ports, records
from psych_runtime import a2a as a2a  # a room, reachable after `import psych_runtime`
from psych_runtime import conversations as conversations  # a room, reachable after import
from psych_runtime import mcp as mcp  # a room, reachable after `import psych_runtime`
from psych_runtime import workflows as workflows  # a room, reachable after `import psych_runtime`
from psych_runtime._deprecations import MOVED_FROM_THE_TOP as _MOVED_FROM_THE_TOP
from psych_runtime._deprecations import deprecated as _deprecated
from psych_runtime._surface._reading import read_log, report, status, workflow_view
from psych_runtime._surface._replay import replay
from psych_runtime._surface._session import Session, session
from psych_runtime._surface._signals import (
    answer,
    approve,
    cancel,
    continue_run,
    deny,
    due,
    interrupt,
    resume,
    send_event,
)
from psych_runtime._surface._stream import stream
from psych_runtime._surface._view import RunView
from psych_runtime.adapters import (
    DEFAULT_BLOB_THRESHOLD,
    AllowAll,
    EnvSecretResolver,
    FileBlobStore,
    MemoryBlobStore,
    MemoryStore,
    OffloadingStore,
    SubprocessSandbox,
)
from psych_runtime.model import ModelPrice, OpenAIChatClient, PriceTable, TieredPrice
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.runtime import ApprovalCheck, Leases, Runtime, SystemClock, Worker, dispatch
from psych_runtime.tools import CodeFunction, ToolContext, ToolFunction, WaitFor

__all__ = [
    # running agents
    "Leases",
    "Runtime",
    "Session",
    "Worker",
    "dispatch",
    "session",
    # signals: people and systems talking to runs
    "ApprovalCheck",
    "WaitFor",
    "answer",
    "approve",
    "cancel",
    "continue_run",
    "deny",
    "due",
    "interrupt",
    "resume",
    "send_event",
    "stream",
    # reading runs back
    "RejectedOutput",
    "Report",
    "RunStatus",
    "RunStatusName",
    "RunView",
    "ToolCallReport",
    "ToolOutcome",
    "Totals",
    "WaitingReason",
    "read_log",
    "replay",
    "report",
    "status",
    "workflow_view",
    # specs
    "AgentSpec",
    "AgentTool",
    "ApprovalRule",
    "ArgRule",
    "CodeTool",
    "Comparison",
    "HttpMethod",
    "HttpTool",
    "ModelRef",
    "SandboxTool",
    "Skill",
    "ToolRef",
    "WorkflowSpec",
    "WorkflowTool",
    # tools
    "CodeFunction",
    "ToolContext",
    "ToolFunction",
    # scope and policy
    "AllowAll",
    "Scope",
    # usage, cost, time
    "Cost",
    "CostSource",
    "SystemClock",
    "Usage",
    "UsageSource",
    # the model client and prices
    "ModelPrice",
    "OpenAIChatClient",
    "PriceTable",
    "TieredPrice",
    # egress and secrets
    "EgressPolicy",
    "EnvSecretResolver",
    # stores: the memory store, and a tenant's handle on any store
    "MemoryStore",
    "RunQuery",
    "ScopedStore",
    # blobs: large content out of the log
    "DEFAULT_BLOB_THRESHOLD",
    "FileBlobStore",
    "MemoryBlobStore",
    "OffloadingStore",
    # sandboxes
    "SubprocessSandbox",
]

_claim.claim_exports(__name__, globals(), __all__)

_MOVED = {
    name: room
    for room in (records, ports, errors)
    for name in room.__all__
    if name in _MOVED_FROM_THE_TOP
}
"""Names psych-runtime 0.1 exported here that now live in a room: through 0.2 they still resolve
here, with a `DeprecationWarning` naming their room; 0.3 removes them."""

if not _typing.TYPE_CHECKING:
    # Hidden from type checkers, so they report a moved name as missing and point to its room.

    def __getattr__(name: str) -> object:
        room = _MOVED.get(name)
        if room is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        _deprecated(
            f"{__name__}.{name} moved to {room.__name__}.{name}; import it from there",
            stacklevel=2,
        )
        return getattr(room, name)

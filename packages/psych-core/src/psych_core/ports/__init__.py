"""The ports Psych's adapters implement, with their contracts in the docstrings."""

from psych_core.ports._model import (
    ModelClient,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolDefinition,
)
from psych_core.ports._store import (
    AppendResult,
    Batch,
    Claim,
    NewRun,
    Page,
    RenewResult,
    RunIndex,
    RunQuery,
    RunRow,
    ScopedStore,
    Store,
    StoreLimits,
)

__all__ = [
    "AppendResult",
    "Batch",
    "Claim",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "NewRun",
    "Page",
    "RenewResult",
    "RunIndex",
    "RunQuery",
    "RunRow",
    "ScopedStore",
    "Store",
    "StoreLimits",
    "ToolDefinition",
]

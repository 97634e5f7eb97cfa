"""The ports Psych's adapters implement, with their contracts in the docstrings."""

from psych_core._model_failure import ModelFailure
from psych_core.ports._blobs import BlobStore, blob_ref, is_blob_ref
from psych_core.ports._model import (
    ModelClient,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolDefinition,
)
from psych_core.ports._policy import Policy, PolicyAction
from psych_core.ports._sandbox import (
    GUARANTEES,
    KERNEL_GUARANTEES,
    LIMITED_GUARANTEES,
    ExecLimits,
    ExecRequest,
    ExecResult,
    Grade,
    Guarantee,
    IsolationLevel,
    LimitName,
    Network,
    Sandbox,
    level_at_least,
    level_guarantees,
    level_reached,
    withhold_unmet,
)
from psych_core.ports._secrets import SecretResolver
from psych_core.ports._store import (
    AppendResult,
    Batch,
    Claim,
    NewRun,
    Notify,
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
    "ModelFailure",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "NewRun",
    "Notify",
    "Page",
    "RenewResult",
    "RunIndex",
    "RunQuery",
    "RunRow",
    "ScopedStore",
    "SecretResolver",
    "Store",
    "StoreLimits",
    "ToolDefinition",
    # sandboxes
    "ExecLimits",
    "ExecRequest",
    "ExecResult",
    "GUARANTEES",
    "Grade",
    "Guarantee",
    "IsolationLevel",
    "KERNEL_GUARANTEES",
    "LIMITED_GUARANTEES",
    "LimitName",
    "Network",
    "Sandbox",
    "level_at_least",
    "level_guarantees",
    "level_reached",
    "withhold_unmet",
    # blobs
    "BlobStore",
    "blob_ref",
    "is_blob_ref",
    # policy
    "Policy",
    "PolicyAction",
]

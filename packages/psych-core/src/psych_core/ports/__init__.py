"""The ports Psych's adapters implement, with their contracts in the docstrings."""

from psych_core._model_failure import ModelFailure
from psych_core.ports._batch_checks import (
    AppendFence,
    CheckedRecords,
    check_batch,
    check_first_record,
    judge_append,
    record_json,
)
from psych_core.ports._blobs import BlobStore, blob_ref, is_blob_ref
from psych_core.ports._claim_rules import (
    check_claim,
    check_ttl,
    exhausted_record,
    started_record,
)
from psych_core.ports._exec_tally import ExecTally
from psych_core.ports._migrations import Migration, migrations_after
from psych_core.ports._model import (
    ModelClient,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolDefinition,
)
from psych_core.ports._policy import Policy, PolicyAction
from psych_core.ports._run_rows import RUN_ROW_COLUMNS, cursor_position, page_of, run_row_of
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
    "ExecTally",
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
    # what every store adapter checks and converts alike
    "AppendFence",
    "CheckedRecords",
    "Migration",
    "RUN_ROW_COLUMNS",
    "check_batch",
    "check_claim",
    "check_first_record",
    "check_ttl",
    "cursor_position",
    "exhausted_record",
    "judge_append",
    "migrations_after",
    "page_of",
    "record_json",
    "run_row_of",
    "started_record",
    # blobs
    "BlobStore",
    "blob_ref",
    "is_blob_ref",
    # policy
    "Policy",
    "PolicyAction",
]

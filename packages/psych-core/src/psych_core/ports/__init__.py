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
    first_claim_log,
    started_record,
)
from psych_core.ports._closing import Closing
from psych_core.ports._exec_tally import ExecTally
from psych_core.ports._live import LiveChannel, LiveText
from psych_core.ports._memory import (
    MAX_FACT_CHARS,
    MAX_KEY_CHARS,
    MAX_RECALL,
    Fact,
    UserMemory,
    check_fact,
    check_key,
    check_owner,
    check_recall,
    folded,
    matches,
    query_terms,
)
from psych_core.ports._migrations import (
    Migration,
    SchemaVersion,
    VersionedSchema,
    migrations_after,
)
from psych_core.ports._model import (
    ModelClient,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    TextSink,
    TextStreamingModel,
    ToolDefinition,
    streams_text,
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
    Append,
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
    check_distinct_runs,
)
from psych_core.ports._telemetry import Claimed, Committed, NoTelemetry, Stopped, Telemetry

__all__ = [
    # what every port whose adapters hold resources shares: close, and async with
    "Closing",
    "Append",
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
    "check_distinct_runs",
    "check_first_record",
    "check_ttl",
    "cursor_position",
    "exhausted_record",
    "first_claim_log",
    "judge_append",
    "migrations_after",
    "page_of",
    "record_json",
    "run_row_of",
    "started_record",
    # a store's schema version, read without changing it
    "SchemaVersion",
    "VersionedSchema",
    # blobs
    "BlobStore",
    "blob_ref",
    "is_blob_ref",
    # policy
    "Policy",
    "PolicyAction",
    # live text: a model's words as it streams them, never in the log
    "LiveChannel",
    "LiveText",
    "TextSink",
    "TextStreamingModel",
    "streams_text",
    # user memory: what every adapter checks and matches alike
    "Fact",
    "MAX_FACT_CHARS",
    "MAX_KEY_CHARS",
    "MAX_RECALL",
    "UserMemory",
    "check_fact",
    "check_key",
    "check_owner",
    "check_recall",
    "folded",
    "matches",
    "query_terms",
    # telemetry: what the runtime reports of the runs it carries
    "Claimed",
    "Committed",
    "NoTelemetry",
    "Stopped",
    "Telemetry",
]

"""The ports: what an adapter implements, and the types it reads and returns.

Each port's docstring states its contract (atomicity, ordering, what each error means, who
releases what); the adapters in the box implement them and are exported at the top of
`psych_runtime`:

    port            in the box                              contract suite (psych_runtime.testing)
    Store           MemoryStore; OffloadingStore wraps one  store_contract.StoreContract
    BlobStore       MemoryBlobStore, FileBlobStore          blob_contract.BlobStoreContract
    ModelClient     OpenAIChatClient; FakeModel in testing
    UserMemory      LocalUserMemory (in conversations)      memory_contract.UserMemoryContract
    LiveChannel     LocalLiveChannel (in conversations)     live_contract.LiveChannelContract
    Sandbox         SubprocessSandbox                       sandbox_contract.SandboxContract
    SecretResolver  EnvSecretResolver
    Policy          AllowAll
    Clock           SystemClock
    Telemetry       NoTelemetry; OTelTelemetry in           telemetry_contract.TelemetryContract
                    psych-telemetry-otel

An app that only runs agents needs none of this: it hands an adapter to `session`, `dispatch`
or `Worker` and calls the functions at the top. Write against this module to add a store, a
model provider (sending through `Egress`, the one way out to the network), a sandbox backend,
a secret store or a policy:

    from psych_runtime.ports import Batch, Store
"""

from psych_core import (
    CONTENT_ATTRIBUTES,
    CONTINUED_KEY,
    GUARANTEES,
    REQUIRED_ATTRIBUTES,
    TRACE_MAP,
    Append,
    AppendResult,
    AssistantMessage,
    Batch,
    BlobStore,
    CallOutcome,
    CallState,
    Claim,
    Claimed,
    Committed,
    ContainerFrame,
    Conversation,
    ExecLimits,
    ExecRequest,
    ExecResult,
    Fact,
    Grade,
    Guarantee,
    InboxEntry,
    IsolationLevel,
    ItemOutputs,
    LimitName,
    LiveChannel,
    LiveText,
    Message,
    ModelClient,
    ModelFailure,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    Network,
    NewRun,
    NoTelemetry,
    Notify,
    OpenToolCall,
    Page,
    PlanContext,
    PlannedSpan,
    Policy,
    PolicyAction,
    RenewResult,
    RunIndex,
    RunRow,
    RunState,
    Sandbox,
    SchemaVersion,
    SecretResolver,
    SpanEvent,
    StepResult,
    Stopped,
    Store,
    StoreLimits,
    Telemetry,
    TextSink,
    TextStreamingModel,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    TraceParent,
    TraceView,
    UserMemory,
    UserMessage,
    VersionedSchema,
    WorkflowProgress,
    accepted_after_end,
    fold_view,
    level_reached,
    parse_traceparent,
    plan_batch,
    run_trace_id,
    span_id_of,
    streams_text,
    withhold_unmet,
)
from psych_runtime import _claim
from psych_runtime.adapters._schema_version import schema_version
from psych_runtime.model.egress import Egress, EgressResponse
from psych_runtime.runtime import Clock

__all__ = [
    # the store port
    "Store",
    "StoreLimits",
    "NewRun",
    "Batch",
    "RunIndex",
    "Notify",
    "Append",
    "AppendResult",
    "Claim",
    "RenewResult",
    "InboxEntry",
    "RunRow",
    "Page",
    "CONTINUED_KEY",
    "accepted_after_end",
    # a store's schema version, read without changing it
    "SchemaVersion",
    "VersionedSchema",
    "schema_version",
    # the blob store port
    "BlobStore",
    # the model port, and the conversation it is given
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "ModelFailure",
    "ToolDefinition",
    "Message",
    "UserMessage",
    "AssistantMessage",
    "ToolCall",
    "ToolResultMessage",
    # live text: a model client that streams its words, and the channel that carries them
    "TextStreamingModel",
    "TextSink",
    "streams_text",
    "LiveChannel",
    "LiveText",
    # the egress seam: how a model client or a tool reaches the network
    "Egress",
    "EgressResponse",
    # the sandbox port
    "Sandbox",
    "ExecRequest",
    "ExecLimits",
    "ExecResult",
    "Grade",
    "Guarantee",
    "GUARANTEES",
    "IsolationLevel",
    "LimitName",
    "Network",
    "level_reached",
    "withhold_unmet",
    # user memory: facts about end users that outlive runs
    "UserMemory",
    "Fact",
    # telemetry: what the runtime reports, and the spans a run's log makes
    "Telemetry",
    "NoTelemetry",
    "Claimed",
    "Committed",
    "RunState",
    "CallState",
    "CallOutcome",
    "ContainerFrame",
    "ItemOutputs",
    "StepResult",
    "Conversation",
    "WorkflowProgress",
    "Stopped",
    "PlannedSpan",
    "SpanEvent",
    "PlanContext",
    "TraceView",
    "OpenToolCall",
    "plan_batch",
    "fold_view",
    "REQUIRED_ATTRIBUTES",
    "CONTENT_ATTRIBUTES",
    "TRACE_MAP",
    "TraceParent",
    "parse_traceparent",
    "run_trace_id",
    "span_id_of",
    # secrets, policy and time
    "SecretResolver",
    "Policy",
    "PolicyAction",
    "Clock",
]

_claim.claim_exports(__name__, globals(), __all__)

"""Names scheduled for removal, and how they warn until then.

Policy (CONTRIBUTING.md, "Versions"): a public name is removed only after it has warned with
a `DeprecationWarning` for at least one minor release, pointing at the caller's line.
"""

from __future__ import annotations

import warnings

MOVED_FROM_THE_TOP = frozenset(
    {
        "AppendResult",
        "ApprovalDecided",
        "ApprovalRequested",
        "Approve",
        "AssistantMessage",
        "AttemptStarted",
        "Batch",
        "BlobNotFound",
        "BlobStore",
        "Body",
        "Cancel",
        "ChildEnded",
        "ChildFinished",
        "ChildStarted",
        "Claim",
        "Clock",
        "Conflict",
        "CorruptLog",
        "Deny",
        "DuplicateSignal",
        "Egress",
        "EgressError",
        "EgressRefused",
        "EgressResponse",
        "ExecLimits",
        "ExecRequest",
        "ExecResult",
        "FoldError",
        "GUARANTEES",
        "Grade",
        "Guarantee",
        "IdempotencyConflict",
        "InboxEntry",
        "InboxPending",
        "IsolationLevel",
        "LeaseExpired",
        "LeaseLost",
        "LimitName",
        "Message",
        "ModelCallFailed",
        "ModelCallFinished",
        "ModelClient",
        "ModelError",
        "ModelFailure",
        "ModelRequest",
        "ModelResponse",
        "ModelToolCall",
        "Network",
        "NewRun",
        "NewerLog",
        "NotAwaitingApproval",
        "Notify",
        "Offloaded",
        "OutputRejected",
        "OutputUnavailable",
        "Page",
        "Policy",
        "PolicyAction",
        "PolicyDenied",
        "PsychError",
        "Record",
        "RecordTooLarge",
        "RenewResult",
        "Resume",
        "RunAdmitted",
        "RunCancelled",
        "RunCompleted",
        "RunFailed",
        "RunFinished",
        "RunIndex",
        "RunNotFound",
        "RunRow",
        "RunSuspended",
        "SCHEMA_VERSION",
        "Sandbox",
        "SandboxError",
        "SandboxRefused",
        "SandboxToolUnavailable",
        "SandboxUnavailable",
        "SecretNotFound",
        "SecretResolver",
        "Signal",
        "SignalIgnored",
        "SignalReceived",
        "SpecError",
        "Store",
        "StoreError",
        "StoreLimits",
        "StoreUnavailable",
        "ToolCall",
        "ToolCallFailed",
        "ToolCallFinished",
        "ToolCallSettled",
        "ToolCallStarted",
        "ToolCallWaiting",
        "ToolDefinition",
        "ToolFailureReason",
        "ToolNotRegistered",
        "ToolResultMessage",
        "UserInput",
        "UserMessage",
        "level_reached",
        "withhold_unmet",
    }
)
"""The names psych-runtime 0.1.0 exported at the top of `psych_runtime` that now live in a
room (`records`, `ports`, `errors`): through 0.2 they still resolve at the top, with a
`DeprecationWarning` naming their room; 0.3 removes them. Frozen: a name added to a room later
was never at the top, and does not resolve there."""

REMOVED_IN = "0.3"
"""The release that removes what is deprecated in 0.2: the moved names above, and the
keyword options `Worker` and `session` took before `Runtime` (`runtime/_legacy.py`)."""


def deprecated(message: str, *, stacklevel: int, removed_in: str = REMOVED_IN) -> None:
    """Warn that what the caller's caller used is deprecated: `message` says what to use
    instead, and the warning says when it goes.

    `stacklevel` counts as `warnings.warn` does, from the function that calls this one: 2
    points at the line that called that function. Every deprecated name goes through here, so
    each says when it is removed, and a test checks each points at its caller's line.
    """
    warnings.warn(
        f"{message} (removed in {removed_in})", DeprecationWarning, stacklevel=stacklevel + 1
    )

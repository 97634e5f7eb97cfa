"""Every error Psych raises, in one tree.

    PsychError
    ├── SpecError                 an AgentSpec or a tool definition is not valid
    │   └── ToolNotRegistered     a spec names a tool the session or worker has no function for
    │       ├── SandboxToolUnavailable  a sandbox tool, and no sandbox that can run it
    │       ├── McpServerNotConfigured  an MCP server, and no connection configured for it
    │       └── A2APeerNotConfigured    an A2A peer, and no connection configured for it
    ├── PolicyDenied              the Policy refused this scope an action on a target
    ├── FoldError                 a log cannot be folded: names the run and the seq
    │   ├── CorruptLog            the log contradicts itself (a gap, a repeat, an orphan outcome)
    │   └── NewerLog              the log was written by a newer psych-core than this one
    ├── RunNotFound               no such run in this scope (another tenant's run looks the same)
    ├── NotAwaitingApproval       approve/deny named a call that is not waiting for a decision
    ├── NotContinuable            a run cannot be continued: still going, a workflow, continued
    ├── InvalidAnswer             an answer is not one of the options its question offered
    ├── InvalidFact               a fact to remember is empty or too long; nothing was stored
    ├── NotReplayable             replay or workflow_view named a run or a step they cannot use
    ├── OutputUnavailable         a run's output cannot be read as the model asked for
    ├── ModelError                the model client failed to produce a turn
    ├── SandboxError              a sandbox could not run a program as asked
    │   ├── SandboxRefused        the request requires what the backend cannot meet; nothing ran
    │   └── SandboxUnavailable    the backend's machinery (binary, engine, image) is missing
    ├── EgressError               an outbound HTTP request failed (connection, timeout)
    │   └── EgressRefused         the egress policy refused the request before connecting
    ├── SecretNotFound            a named secret has no value in the secret resolver
    └── StoreError                a store refused or failed an operation
        ├── Conflict              the seq an append wanted is taken: re-read the log
        ├── LeaseLost             the attempt was superseded: stop, append nothing more
        │   └── LeaseExpired      the attempt cannot show it still holds its lease: no effect
        ├── InboxPending          the append would suspend or end the run with unseen signals
        ├── IdempotencyConflict   an idempotency key was reused for another request
        ├── DuplicateSignal       a signal with this key was already accepted
        ├── RunFinished           the run has ended and takes no more signals
        ├── RecordTooLarge        a record or batch exceeds the store's declared limits
        ├── BlobNotFound          no blob with this reference in the tenant's blobs
        └── StoreUnavailable      the store could not be reached; safe to retry later

Every message names the run, seq, tool or key involved and says what to do about it. Catch
`PsychError` for all of them, or the one you can act on:

    from psych_runtime.errors import RunNotFound
"""

from psych_core import (
    A2APeerNotConfigured,
    BlobNotFound,
    Conflict,
    CorruptLog,
    DuplicateSignal,
    EgressError,
    EgressRefused,
    FoldError,
    IdempotencyConflict,
    InboxPending,
    InvalidAnswer,
    InvalidFact,
    LeaseExpired,
    LeaseLost,
    McpServerNotConfigured,
    ModelError,
    NewerLog,
    NotAwaitingApproval,
    NotContinuable,
    NotReplayable,
    OutputUnavailable,
    PolicyDenied,
    PsychError,
    RecordTooLarge,
    RunFinished,
    RunNotFound,
    SandboxError,
    SandboxRefused,
    SandboxToolUnavailable,
    SandboxUnavailable,
    SecretNotFound,
    SpecError,
    StoreError,
    StoreUnavailable,
    ToolNotRegistered,
)
from psych_runtime import _claim

__all__ = [
    # the root
    "PsychError",
    # specs, policy and reading runs
    "SpecError",
    "ToolNotRegistered",
    "SandboxToolUnavailable",
    "McpServerNotConfigured",
    "A2APeerNotConfigured",
    "PolicyDenied",
    "FoldError",
    "CorruptLog",
    "NewerLog",
    "RunNotFound",
    "NotAwaitingApproval",
    "NotContinuable",
    "InvalidAnswer",
    "InvalidFact",
    "NotReplayable",
    "OutputUnavailable",
    # models, sandboxes, egress and secrets
    "ModelError",
    "SandboxError",
    "SandboxRefused",
    "SandboxUnavailable",
    "EgressError",
    "EgressRefused",
    "SecretNotFound",
    # stores
    "StoreError",
    "Conflict",
    "LeaseLost",
    "LeaseExpired",
    "InboxPending",
    "IdempotencyConflict",
    "DuplicateSignal",
    "RunFinished",
    "RecordTooLarge",
    "BlobNotFound",
    "StoreUnavailable",
]

_claim.claim_exports(__name__, globals(), __all__)

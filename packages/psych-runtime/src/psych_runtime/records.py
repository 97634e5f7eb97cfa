"""The records of a run's log, and the signals that reach it through its inbox.

What `read_log` and `stream` return is a list (or a stream) of `Record`: ``run_id``, ``seq``
(0, 1, 2, ... with no gap), ``attempt``, ``at`` and a `Body`, one of the record classes here,
discriminated on ``type``. The JSON form is stable, and the first record (`RunAdmitted`)
carries `SCHEMA_VERSION`, so old logs stay readable.

A workflow run's log has a `StepsPlanned` record per round of steps: the calls of the round
(`StepCall`) and what its planner decided without an effect (`StepEvent`: `StepSettled`,
`StateSet`, `StepEntered`, `ItemStarted`, `IterationStarted`, `StepRetrying`, `EventTaken`).
A run that `replay` admitted names the run it replays in its `RunAdmitted` (`ReplayOf`), with
the steps it copied from it (`CopiedStep`).

A signal (`Approve`, `Deny`, `Resume`, `Cancel`, `UserInput`, `ChildEnded`) is what the
outside world tells a run. Apps send them with `approve`, `deny`, `resume`, `send_event`,
`answer`, `continue_run`, `cancel` and `interrupt`; the log shows each one as a `SignalReceived` (or
`ApprovalDecided`) record.

Import what you match on from here:

    from psych_runtime.records import ToolCallFinished

    finished = [r.body for r in log if isinstance(r.body, ToolCallFinished)]
"""

from psych_core import (
    SCHEMA_VERSION,
    ApprovalDecided,
    ApprovalRequested,
    Approve,
    AttemptStarted,
    Body,
    Cancel,
    ChildEnded,
    ChildFinished,
    ChildStarted,
    CompactionFailed,
    Continued,
    ConversationCompacted,
    CopiedStep,
    Deny,
    EventTaken,
    ItemStarted,
    IterationStarted,
    ModelCallFailed,
    ModelCallFinished,
    Offloaded,
    OutputRejected,
    Question,
    Record,
    ReplayOf,
    Resume,
    RunAdmitted,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunSuspended,
    Signal,
    SignalIgnored,
    SignalReceived,
    StateSet,
    StepCall,
    StepEntered,
    StepEvent,
    StepFailure,
    StepRetrying,
    StepSettled,
    StepsPlanned,
    StepStatus,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
    ToolFailureReason,
    ToolsUnavailable,
    UserInput,
    UserQueue,
)
from psych_runtime import _claim

__all__ = [
    # the log
    "SCHEMA_VERSION",
    "Body",
    "Record",
    # record bodies, in the order a run writes them
    "RunAdmitted",
    "AttemptStarted",
    "ModelCallFinished",
    "ModelCallFailed",
    "ApprovalRequested",
    "ApprovalDecided",
    "ToolCallStarted",
    "ToolCallFinished",
    "ToolCallFailed",
    "ToolCallSettled",
    "ToolCallWaiting",
    "ToolsUnavailable",
    "ToolFailureReason",
    "ChildStarted",
    "ChildFinished",
    "SignalReceived",
    "SignalIgnored",
    "RunSuspended",
    "OutputRejected",
    "ConversationCompacted",
    "CompactionFailed",
    "StepsPlanned",
    "Offloaded",
    "RunCompleted",
    "RunFailed",
    "RunCancelled",
    # what a workflow's StepsPlanned carries
    "StepCall",
    "StepEvent",
    "StepStatus",
    "StepFailure",
    "StepSettled",
    "StateSet",
    "StepEntered",
    "ItemStarted",
    "IterationStarted",
    "StepRetrying",
    "EventTaken",
    # what a replaying run's RunAdmitted carries
    "ReplayOf",
    "CopiedStep",
    # signals: what the outside world tells a run, through its inbox
    "Signal",
    "Approve",
    "Cancel",
    "ChildEnded",
    "Continued",
    "Deny",
    "Resume",
    "UserInput",
    "UserQueue",
    # what a status shows of a question to the user (AgentSpec.ask_user)
    "Question",
]

_claim.claim_exports(__name__, globals(), __all__)

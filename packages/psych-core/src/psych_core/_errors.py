"""Every error Psych raises, in one tree.

    PsychError
    ├── SpecError                 an AgentSpec or a tool definition is not valid
    │   └── ToolNotRegistered     a spec names a tool the session or worker has no function for
    ├── FoldError                 a log cannot be folded: names the run and the seq
    ├── RunNotFound               no such run in this scope (another tenant's run looks the same)
    ├── ModelError                the model client failed to produce a turn
    └── StoreError                a store refused or failed an operation
        ├── Conflict              the seq an append wanted is taken: re-read the log
        ├── LeaseLost             the attempt was superseded: stop, append nothing more
        ├── InboxPending          the append would suspend or end the run with unseen signals
        ├── IdempotencyConflict   an idempotency key was reused for another request
        ├── DuplicateSignal       a signal with this key was already accepted
        ├── RunFinished           the run has ended and takes no more signals
        ├── RecordTooLarge        a record or batch exceeds the store's declared limits
        └── StoreUnavailable      the store could not be reached; safe to retry later

Every message names the run, seq, tool or key involved and says what to do about it.
"""

from __future__ import annotations


class PsychError(Exception):
    """Base class of every error Psych raises."""


class SpecError(PsychError, ValueError):
    """An `AgentSpec`, `ModelRef` or tool reference is not valid."""


class ToolNotRegistered(SpecError):
    """A spec names a tool for which no function was registered."""

    def __init__(self, agent: str, tool: str, registered: tuple[str, ...]) -> None:
        self.agent = agent
        self.tool = tool
        self.registered = registered
        have = ", ".join(registered) if registered else "none"
        super().__init__(
            f"AgentSpec {agent!r} names tool {tool!r}, but no function named {tool!r} was "
            f"registered (registered: {have}). Pass it in tools=[...]."
        )


class FoldError(PsychError):
    """A record cannot be folded into the run's state: the log is not one Psych wrote."""

    def __init__(self, run_id: str, seq: int, problem: str) -> None:
        self.run_id = run_id
        self.seq = seq
        self.problem = problem
        super().__init__(f"run {run_id}, seq {seq}: {problem}")


class RunNotFound(PsychError, LookupError):
    """No run with this id exists in the caller's scope."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id} not found in this scope: check the id and the tenant of the store"
        )


class ModelError(PsychError):
    """The model client could not produce a turn.

    Attributes:
        model: the model that was asked.
        status: the HTTP status, when there was one.
        retryable: whether asking again later may succeed.
    """

    def __init__(
        self, message: str, *, model: str, status: int | None = None, retryable: bool = False
    ) -> None:
        self.model = model
        self.status = status
        self.retryable = retryable
        super().__init__(message)


class StoreError(PsychError):
    """A store refused or failed an operation."""


class Conflict(StoreError):
    """The seq an append wanted is already taken. Re-read the log and decide again."""

    def __init__(self, run_id: str, seq: int) -> None:
        self.run_id = run_id
        self.seq = seq
        super().__init__(
            f"run {run_id}: seq {seq} is already taken by another batch; re-read the log"
        )


class LeaseLost(StoreError):
    """The attempt is no longer the run's current one. It must stop and append nothing more."""

    def __init__(self, run_id: str, attempt: int, current: int | None = None) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.current = current
        now = f" (current attempt: {current})" if current is not None else ""
        super().__init__(f"run {run_id}: attempt {attempt} was superseded{now}; stop this attempt")


class InboxPending(StoreError):
    """The append would suspend or end the run while inbox entries it has not seen exist."""

    def __init__(self, run_id: str, seen: int, inbox_last: int) -> None:
        self.run_id = run_id
        self.seen = seen
        self.inbox_last = inbox_last
        super().__init__(
            f"run {run_id}: inbox has entries up to {inbox_last} but the append saw only "
            f"{seen}; move them into the log first"
        )


class IdempotencyConflict(StoreError):
    """An idempotency key already admitted a different request in this tenant."""

    def __init__(self, key: str, run_id: str) -> None:
        self.key = key
        self.run_id = run_id
        super().__init__(
            f"idempotency key {key!r} already admitted run {run_id} with a different request; "
            "use a new key for a new request"
        )


class DuplicateSignal(StoreError):
    """A signal with this key was already accepted for the run."""

    def __init__(self, run_id: str, key: str) -> None:
        self.run_id = run_id
        self.key = key
        super().__init__(f"run {run_id}: a signal with key {key!r} was already accepted")


class RunFinished(StoreError):
    """The run has ended and accepts no more signals."""

    def __init__(self, run_id: str, status: str) -> None:
        self.run_id = run_id
        self.status = status
        super().__init__(f"run {run_id} has ended ({status}) and accepts no more signals")


class RecordTooLarge(StoreError):
    """A record or a batch is larger than the store's declared limits."""

    def __init__(self, run_id: str, seq: int, size: int, limit: int, what: str) -> None:
        self.run_id = run_id
        self.seq = seq
        self.size = size
        self.limit = limit
        super().__init__(
            f"run {run_id}, seq {seq}: {what} is {size} bytes, over the store's limit of "
            f"{limit}; move large content to a BlobStore"
        )


class StoreUnavailable(StoreError):
    """The store could not be reached or did not answer. The operation may be retried."""

"""Every error Psych raises, in one tree.

    PsychError
    ├── SpecError                 an AgentSpec or a tool definition is not valid
    │   └── ToolNotRegistered     a spec names a tool the session or worker has no function for
    │       └── SandboxToolUnavailable  a sandbox tool, and no sandbox that can run it
    ├── PolicyDenied              the Policy refused this scope an action on a target
    ├── FoldError                 a log cannot be folded: names the run and the seq
    │   ├── CorruptLog            the log contradicts itself (a gap, a repeat, an orphan outcome)
    │   └── NewerLog              the log was written by a newer psych-core than this one
    ├── RunNotFound               no such run in this scope (another tenant's run looks the same)
    ├── NotContinuable            a run cannot be continued: still going, a workflow, continued
    ├── NotAwaitingApproval       approve/deny named a call that is not waiting for a decision
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

Every message names the run, seq, tool or key involved and says what to do about it.
"""

from __future__ import annotations

from psych_core._model_failure import ModelFailure
from psych_core._scope import Scope


class PsychError(Exception):
    """Base class of every error Psych raises."""


class SpecError(PsychError, ValueError):
    """An `AgentSpec`, `ModelRef` or tool reference is not valid."""


class ToolNotRegistered(SpecError):
    """A spec names a tool for which no function was registered."""

    def __init__(
        self, agent: str, tool: str, registered: tuple[str, ...], *, spec: str = "AgentSpec"
    ) -> None:
        self.agent = agent
        self.tool = tool
        self.registered = registered
        have = ", ".join(registered) if registered else "none"
        super().__init__(
            f"{spec} {agent!r} names tool {tool!r}, but no function named {tool!r} was "
            f"registered (registered: {have}). Pass it in tools=[...]."
        )


class SandboxToolUnavailable(ToolNotRegistered):
    """A spec names a sandbox tool, and the session or worker has no sandbox that can run it.

    A worker releases such a run for another worker, as for any tool it lacks.
    """

    def __init__(self, agent: str, tool: str, problem: str, *, spec: str = "AgentSpec") -> None:
        self.agent = agent
        self.tool = tool
        self.registered = ()
        self.problem = problem
        SpecError.__init__(self, f"{spec} {agent!r} names sandbox tool {tool!r}, but {problem}")


class McpServerNotConfigured(ToolNotRegistered):
    """A spec names an MCP server that the session or worker has no connection for.

    A worker releases such a run for another worker, as for any tool it lacks.
    """

    def __init__(
        self, agent: str, server: str, configured: tuple[str, ...], *, spec: str = "AgentSpec"
    ) -> None:
        self.agent = agent
        self.tool = server
        self.registered = configured
        have = ", ".join(configured) if configured else "none"
        SpecError.__init__(
            self,
            f"{spec} {agent!r} names MCP server {server!r}, but the runtime has no connection "
            f"for it (configured: {have}). Pass Runtime(mcp_servers={{{server!r}: "
            "McpStdio(...) or McpHttp(...)}).",
        )


class A2APeerNotConfigured(ToolNotRegistered):
    """A spec names an A2A peer that the session or worker has no connection for.

    A worker releases such a run for another worker, as for any tool it lacks.
    """

    def __init__(
        self, agent: str, peer: str, configured: tuple[str, ...], *, spec: str = "AgentSpec"
    ) -> None:
        self.agent = agent
        self.tool = peer
        self.registered = configured
        have = ", ".join(configured) if configured else "none"
        SpecError.__init__(
            self,
            f"{spec} {agent!r} names A2A peer {peer!r}, but the runtime has no connection "
            f"for it (configured: {have}). Pass Runtime(a2a_peers={{{peer!r}: "
            "A2AHttp(url=...)}).",
        )


class PolicyDenied(PsychError, PermissionError):
    """The `Policy` refused `scope` the `action` on `target`.

    Attributes:
        scope: who asked.
        action: what they asked to do (``dispatch``, ``read``, ``approve``, ...).
        target: what they asked it of: the agent's name for ``dispatch``, else the run id.
        reason: why, when the policy said.
    """

    def __init__(self, scope: Scope, action: str, target: str, reason: str = "") -> None:
        self.scope = scope
        self.action = action
        self.target = target
        self.reason = reason
        who = f"principal {scope.principal!r}" if scope.principal else "an anonymous principal"
        why = f" ({reason})" if reason else ""
        super().__init__(
            f"{who} of tenant {scope.tenant!r} may not {action} {target!r}: the policy denied "
            f"it{why}. Act with a scope the policy allows, or change the policy."
        )


class FoldError(PsychError):
    """A record cannot be folded into the run's state: the log is not one Psych wrote."""

    def __init__(self, run_id: str, seq: int, problem: str) -> None:
        self.run_id = run_id
        self.seq = seq
        self.problem = problem
        super().__init__(f"run {run_id}, seq {seq}: {problem}")


class CorruptLog(FoldError):
    """The log contradicts itself: a missing or repeated seq, an outcome for a call that never
    started, a record after the end. Psych never wrote such a log.

    It is never repaired and never skipped: a worker that claims the run fails it at once
    (reason ``corrupt_log``, this error's text), and `status` still answers, from the records
    before `seq`. The records are kept as they are, for whoever investigates the store.
    """

    def __init__(self, run_id: str, seq: int, problem: str) -> None:
        super().__init__(run_id, seq, f"the log is corrupt: {problem}")
        self.problem = problem


class NewerLog(FoldError):
    """The log was written by a newer psych-core (a rolling deploy): this worker cannot read it.

    A worker releases such a run for another, newer worker; it never fails the run for it.
    """


class OutputUnavailable(PsychError, ValueError):
    """`RunView.output_as` cannot give the run's output as the model asked for: the run did not
    complete, or its answer does not validate as that model."""

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"run {run_id}: {problem}")


class RunNotFound(PsychError, LookupError):
    """No run with this id exists in the caller's scope."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id} not found in this scope: check the id and the tenant of the store"
        )


class NotContinuable(PsychError, ValueError):
    """``dispatch(..., continues=run_id)`` named a run that cannot be continued now: one still
    going, a workflow run, or one another run continues already (`continuation`)."""

    def __init__(self, run_id: str, reason: str, continuation: str | None = None) -> None:
        self.run_id = run_id
        self.reason = reason
        self.continuation = continuation
        super().__init__(f"run {run_id} cannot be continued: {reason}; nothing was admitted")


class NotReplayable(PsychError, ValueError):
    """`replay` (or `workflow_view`) named a run or a step it cannot use: an agent's run, a
    run that has not ended, a step the workflow does not have."""

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"run {run_id}: {problem}")


class NotAwaitingApproval(PsychError, LookupError):
    """`approve` or `deny` named a call that is not waiting for a decision."""

    def __init__(self, run_id: str, call_id: str, state: str) -> None:
        self.run_id = run_id
        self.call_id = call_id
        self.state = state
        super().__init__(
            f"run {run_id}: call {call_id} is not awaiting approval ({state}); "
            "check the call id with psych_runtime.status(store, run_id).waiting_for"
        )


class InvalidAnswer(PsychError, ValueError):
    """An answer to a run's question is not one of the options the question offered."""

    def __init__(self, run_id: str, call_id: str, answer: object, options: tuple[str, ...]):
        self.run_id = run_id
        self.call_id = call_id
        self.options = options
        super().__init__(
            f"run {run_id}: question {call_id} takes one of {list(options)}, not {answer!r}"
        )


class InvalidFact(PsychError, ValueError):
    """A fact given to `UserMemory.remember` is empty or too long; nothing was stored."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


class ModelError(PsychError):
    """The model client could not produce a turn.

    Attributes:
        model: the model that was asked.
        status: the HTTP status, when there was one.
        retryable: whether asking again later may succeed.
        failures: every attempt that failed, oldest first, when the client tried several
            (retries, fallbacks); the runtime records one `ModelCallFailed` for each.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str,
        status: int | None = None,
        retryable: bool = False,
        failures: tuple[ModelFailure, ...] = (),
    ) -> None:
        self.model = model
        self.status = status
        self.retryable = retryable
        self.failures = failures
        super().__init__(message)


class EgressError(PsychError):
    """An outbound HTTP request failed: no connection, a timeout, a dropped stream.

    The message names the method and URL and never contains a secret value.

    Attributes:
        url: the URL asked for.
        retryable: whether sending again later may succeed.
        sent: False only when the request certainly never reached the server (refused by the
            policy, no connection made); True when it may have.
        timed_out: whether a timeout ended it.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str,
        retryable: bool = True,
        sent: bool = True,
        timed_out: bool = False,
    ) -> None:
        self.url = url
        self.retryable = retryable
        self.sent = sent
        self.timed_out = timed_out
        super().__init__(message)


class EgressRefused(EgressError):
    """The egress policy refused a request before any connection was opened.

    Attributes:
        host: the host asked for.
        address: the address the host resolved to, when the address was the problem.
    """

    def __init__(self, message: str, *, url: str, host: str, address: str | None = None) -> None:
        self.host = host
        self.address = address
        super().__init__(message, url=url, retryable=False, sent=False)


class SecretNotFound(PsychError, LookupError):
    """A secret was referenced by name, and the secret resolver has no value for it."""

    def __init__(self, name: str, resolver: str, hint: str = "") -> None:
        self.name = name
        self.resolver = resolver
        advice = hint or (
            f"provide it there (EnvSecretResolver reads the environment variable {name!r})"
        )
        super().__init__(f"secret {name!r} has no value in {resolver}: {advice}")


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


class LeaseExpired(LeaseLost):
    """The attempt cannot show that it still holds its lease, so it starts no more effects.

    Raised by the runtime, never by a store: the attempt's own clock says the lease has run
    out (or will before an unsafe effect could finish) and renewing it failed. Another attempt
    may hold the run by now; this one stops without appending.
    """

    def __init__(self, run_id: str, attempt: int, why: str) -> None:
        StoreError.__init__(
            self, f"run {run_id}: attempt {attempt} stopped: {why}; it starts no more effects"
        )
        self.run_id = run_id
        self.attempt = attempt
        self.current = None


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


class BlobNotFound(StoreError, LookupError):
    """No blob with this reference among the tenant's blobs (another tenant's looks the same)."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        super().__init__(
            f"blob {ref} not found among this tenant's blobs: it was never stored for this "
            "tenant, or was deleted; check that every process uses the same BlobStore"
        )


class StoreUnavailable(StoreError):
    """The store could not be reached or did not answer. The operation may be retried."""


class SandboxError(PsychError):
    """A sandbox could not run a program as asked. A failing program is not this: see its result."""


class SandboxRefused(SandboxError):
    """The request requires a level or guarantees this backend cannot meet here; nothing ran.

    Attributes:
        backend: the sandbox's name.
        unmet: the required guarantees (or ``"level:kernel"``) it cannot enforce.
        reason: why, in words.
    """

    def __init__(self, backend: str, unmet: tuple[str, ...], reason: str) -> None:
        self.backend = backend
        self.unmet = unmet
        self.reason = reason
        super().__init__(
            f"sandbox {backend!r} refused the request before running it: it cannot enforce "
            f"{', '.join(unmet)} ({reason}). Use a backend that reaches what the request "
            "requires, or require less."
        )


class SandboxUnavailable(SandboxError):
    """The backend's machinery (a binary, an engine, an image) is missing or not working.

    Attributes:
        backend: the sandbox's name.
    """

    def __init__(self, backend: str, problem: str) -> None:
        self.backend = backend
        self.problem = problem
        super().__init__(f"sandbox {backend!r} is unavailable: {problem}")

"""The `Policy` port: who may do what to which run, and which tools a run may be offered."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Protocol, runtime_checkable

from psych_core._scope import Scope

PolicyAction = Literal[
    "dispatch",
    "read",
    "approve",
    "deny",
    "resume",
    "send_event",
    "answer",
    "continue_run",
    "replay",
    "cancel",
    "interrupt",
    "send",
]
"""What a scope asks to do. ``read`` covers `status`, `report`, `read_log`, `stream` and
`workflow_view`; ``send_event`` and ``answer`` are a workflow's events and a person's answers
to its human steps; ``continue_run`` lets a workflow paused at a breakpoint go on; ``replay``
(on the run replayed) admits a new run from it, and asks ``dispatch`` of its workflow too;
``send`` puts a user message in a run's queue (`send`). A continuation
(``dispatch(..., continues=run_id)``) asks ``read`` of the run it continues, then ``dispatch``."""


@runtime_checkable
class Policy(Protocol):
    """Decides what a `Scope` may do, and which tools its runs may use.

    The app implements it (or uses `AllowAll`); Psych calls it and never stores its answers.

    Contract:
        - `authorize` returns None when `scope` may do `action` to `target`, and raises
          `PolicyDenied(scope, action, target)` when it may not. `target` is the agent's name
          for ``dispatch`` and the run's id for every other action. It is called by every
          public function that is given a `ScopedStore` carrying the policy
          (``store.scoped(scope, policy=policy)``), before the store is touched. The tenant
          check still applies after it: a policy cannot open another tenant's runs.
        - `narrow` returns the names, among `tools`, that runs of `scope` may be offered. It is
          called before every model call of every run (the tools are resolved again each
          turn), so a change of policy applies from the run's next model call. A name it
          returns that is not in `tools` is ignored: a policy can only take tools away.
        - Both are called on the event loop and must not block: decide from `scope` (put
          roles, plans and the like in `Scope.attributes` when the scope is made) and data
          already in memory. Both must be deterministic for a given scope while the app's
          rules do not change.
    """

    def authorize(self, scope: Scope, action: PolicyAction, target: str) -> None:
        """Return when `scope` may do `action` to `target`; raise `PolicyDenied` otherwise."""
        ...

    def narrow(self, scope: Scope, tools: Sequence[str]) -> Iterable[str]:
        """The names among `tools` that runs of `scope` may be offered."""
        ...

"""Recall before a model call: the facts about a run's end user that its request is given.

For a spec with ``memory=True``, before each model call the runtime recalls the newest facts
(at most `RECALLED`) of the run's ``Scope.principal`` in its tenant from ``Runtime.memory``;
the request lists them after the instructions (`build_request`), and the call's
`ModelCallFinished` records their ids (``recalled``), never their text.

A memory that fails to answer does not fail the run, nor leave it unsaid: the call goes on
without facts, and a `ToolsUnavailable` record with source ``memory`` (written in the same
append as the call's answer) says why; the next call tries again.
"""

from __future__ import annotations

import logging

from psych_core import AgentSpec, Body, Fact, RunState, ToolsUnavailable, UserMemory

log = logging.getLogger("psych_runtime.worker")

RECALLED = 20
"""The most facts one model call is given."""


async def recall_for(state: RunState, memory: UserMemory | None) -> tuple[list[Fact], list[Body]]:
    """The facts the next model call of `state` is given, and the records saying why there
    are none when the memory failed.

    None are recalled for a spec without ``memory``, a runtime without a memory (the tools'
    resolution says so: `ToolRegistry.resolve_turn`), or a run whose scope has no principal.
    """
    spec = state.spec
    admitted = state.admitted
    if memory is None or not isinstance(spec, AgentSpec) or not spec.memory or admitted is None:
        return [], []
    scope = admitted.scope
    if not scope.principal:
        return [], []
    try:
        facts = await memory.recall(scope.tenant, scope.principal, limit=RECALLED)
    except Exception as exc:  # any adapter's failure: the call goes on without facts
        error = (
            f"run {state.run_id}, seq {state.next_seq}: recalling the user's facts failed "
            f"({type(exc).__name__}: {exc}); this model call goes on without them"
        )
        log.warning("%s", error)
        return [], [ToolsUnavailable(source="memory", error=error)]
    return facts[:RECALLED], []

"""Subagents: starting a child run for an `AgentTool` call, and collecting its outcome.

A child's run id is derived from its parent and the call (``{parent}-{call_id}``), and the
call's `ToolCallStarted` is committed before the child is created: an attempt that crashes
between the two finds the same child when the call is started again, so no crash can orphan a
child or start it twice. The child's final append wakes its parent (`Batch.notify`).
"""

from __future__ import annotations

import contextlib

from psych_core import (
    AgentTool,
    Body,
    CallState,
    ChildFinished,
    Conflict,
    NewRun,
    Record,
    RunAdmitted,
    RunState,
    Store,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._clock import Clock
from psych_runtime.runtime._execute_state import load_state


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The id of the child run a subagent call starts: derived, so a retry finds it."""
    return f"{parent_run_id}-{call_id}"


async def start_child(
    store: Store,
    parent: RunState,
    call: ToolCall,
    ref: AgentTool,
    text: str,
    allowed: tuple[str, ...],
    clock: Clock,
    redactor: Redactor | None = None,
) -> str:
    """Create the child run of `call` (or find the one an earlier attempt created).

    `redactor` is the parent attempt's: the child's input goes through it, as every record
    the attempt writes does.
    """
    assert parent.admitted is not None
    spec = ref.spec
    await store.put_spec(spec.version, spec.canonical_json())
    run_id = child_run_id(parent.run_id, call.call_id)
    first = Record(
        run_id=run_id,
        seq=0,
        attempt=0,
        at=clock.now(),
        body=(redactor or Redactor()).body(
            RunAdmitted(
                agent=spec.name,
                spec_version=spec.version,
                input=text,
                scope=parent.admitted.scope,
                parent_run_id=parent.run_id,
                parent_call_id=call.call_id,
                allowed_tools=allowed,
            )
        ),
    )
    new = NewRun(
        run_id=run_id,
        tenant=parent.admitted.scope.tenant,
        agent=spec.name,
        spec_version=spec.version,
        parent_run_id=parent.run_id,
    )
    # Conflict: created by an attempt that died before recording it, so it is the same child.
    with contextlib.suppress(Conflict):
        await store.create_run(new, first)
    return run_id


async def collect_child(store: Store, call: CallState) -> list[Body]:
    """The records of a call whose child ended: the link, then the call's outcome."""
    assert call.child_run_id is not None
    child = await load_state(store, call.child_run_id)
    call_id = call.call.call_id
    finished = ChildFinished(call_id=call_id, child_run_id=child.run_id, status=child.status)
    if child.status == "completed":
        return [finished, ToolCallFinished(call_id=call_id, result=child.output)]
    why = f": {child.error}" if child.error else ""
    return [
        finished,
        ToolCallFailed(
            call_id=call_id,
            reason="error",
            error=f"subagent run {child.run_id} ended {child.status}{why}",
        ),
    ]

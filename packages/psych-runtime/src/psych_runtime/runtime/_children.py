"""Child runs: starting one for a subagent call (`AgentTool`), a workflow call (`WorkflowTool`)
or a workflow's agent or workflow step, and collecting its outcome.

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
    RunState,
    Store,
    ToolCall,
    ToolCallFailed,
    WorkflowTool,
    child_traceparent,
    finished_call,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._admission import Parent, admit
from psych_runtime.runtime._clock import Clock
from psych_runtime.runtime._execute_state import load_state


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The id of the child run a subagent call starts: derived, so a retry finds it."""
    return f"{parent_run_id}-{call_id}"


async def start_child(
    store: Store,
    parent: RunState,
    call: ToolCall,
    ref: AgentTool | WorkflowTool,
    text: str,
    allowed: tuple[str, ...] | None,
    clock: Clock,
    redactor: Redactor | None = None,
) -> str:
    """Create the child run of `call` (or find the one an earlier attempt created).

    `redactor` is the parent attempt's: the child's input goes through it, as every record
    the attempt writes does. `allowed` narrows the child's tools (None: no narrowing beyond
    the policy's).
    """
    assert parent.admitted is not None
    run_id = child_run_id(parent.run_id, call.call_id)
    # Conflict: created by an attempt that died before recording it, so it is the same child.
    with contextlib.suppress(Conflict):
        await admit(
            store,
            ref.spec,
            text,
            run_id=run_id,
            scope=parent.admitted.scope,
            at=clock.now(),
            redactor=redactor or Redactor(),
            parent=Parent(parent.run_id, call.call_id, allowed),
            # The child's spans go under the span of the call that started it.
            traceparent=child_traceparent(parent.run_id, parent.admitted.traceparent, call.call_id),
        )
    return run_id


async def collect_child(store: Store, call: CallState) -> list[Body]:
    """The records of a call whose child ended: the link, then the call's outcome."""
    assert call.child_run_id is not None
    child = await load_state(store, call.child_run_id)
    call_id = call.call.call_id
    finished = ChildFinished(call_id=call_id, child_run_id=child.run_id, status=child.status)
    if child.status == "completed":
        # The output came in the child's validated records: JSON already.
        return [finished, finished_call(call_id, child.output)]
    why = f": {child.error}" if child.error else ""
    return [
        finished,
        ToolCallFailed(
            call_id=call_id,
            reason="cancelled" if child.status == "cancelled" else "error",
            error=f"child run {child.run_id} ended {child.status}{why}",
        ),
    ]

"""Continuations: the run that carries on a thread (``dispatch(..., continues=run_id)``).

A run is continued at most once, so a thread is a chain and the messages a run keeps for the
next run are taken exactly once. The continuation's id is derived from the run it continues:
the store's refusal to create a second run with that id is what makes a second continuation
impossible, even when two arrive together, and it lets `thread` walk the chain forwards.
"""

from __future__ import annotations

import hashlib

from psych_core import (
    AgentSpec,
    NotContinuable,
    RunAdmitted,
    RunState,
    ScopedStore,
    WorkflowSpec,
    carried_history,
    fold_all,
)
from psych_runtime.runtime._admission import Continuing

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # as run ids: Crockford's base32


def continuation_id(run_id: str) -> str:
    """The id of the run that continues `run_id`: its time part (so the two sort together),
    then 16 characters of a digest of `run_id`."""
    digest = int.from_bytes(hashlib.sha256(f"continues:{run_id}".encode()).digest()[:10], "big")
    chars = []
    for _ in range(16):
        digest, digit = divmod(digest, 32)
        chars.append(_ALPHABET[digit])
    return run_id[:10] + "".join(reversed(chars))


async def continuing(store: ScopedStore, run_id: str, spec: AgentSpec | WorkflowSpec) -> Continuing:
    """What a continuation of `run_id` carries; `NotContinuable` when it cannot be continued
    (`RunNotFound` when the scope has no such run)."""
    if isinstance(spec, WorkflowSpec):
        raise NotContinuable(
            run_id,
            f"{spec.name!r} is a workflow, which carries no conversation: continue a "
            "thread with an agent spec",
        )
    state = fold_all(RunState.empty(run_id), await store.read(run_id))
    if state.workflow is not None:
        raise NotContinuable(run_id, "it is a workflow run, which has no conversation")
    if not state.ended:
        raise NotContinuable(
            run_id,
            f"it is still {state.status}; wait for it to end, or give it the message with "
            "send(store, run_id, message, queue='follow_up')",
        )
    return Continuing(
        run_id=run_id,
        history=carried_history(state),
        queued=undelivered(state),
        history_tokens=state.context_tokens,
    )


def undelivered(state: RunState) -> tuple[str, ...]:
    """The user messages a run that ended never gave its model, kept for the next run: steers
    waiting for open calls, follow-ups waiting for an answer (a run cancelled or failed with
    them waiting), then the messages sent for the next run, each group in the order sent."""
    return (*state.pending_input, *state.follow_ups, *state.next_run)


async def existing_continuation(
    store: ScopedStore, run_id: str, spec: AgentSpec | WorkflowSpec, input: str
) -> str:
    """The continuation of `run_id` that exists already, when it is this very request (same
    spec version and input); `NotContinuable` naming it otherwise."""
    found = continuation_id(run_id)
    first = (await store.read(found, -1, 1))[0].body
    if (
        isinstance(first, RunAdmitted)
        and first.spec_version == spec.version
        and first.input == input
    ):
        return found
    raise NotContinuable(run_id, f"run {found} continues it already", continuation=found)

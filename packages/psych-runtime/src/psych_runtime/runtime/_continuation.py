"""Continuations: the run that carries on a thread (``dispatch(..., continues=run_id)``).

A run is continued at most once, so a thread is a chain and the messages a run keeps for the
next run are taken exactly once. The continuation's id is derived from the run it continues:
the store's refusal to create a second run with that id is what makes a second continuation
impossible, even when two arrive together, and it lets `thread` walk the chain forwards.

An ended run's inbox still takes messages for its next run, until the continuation leaves its
`Continued` mark there (`Store.signal`): every such message is numbered before the mark, or
refused, so the continuation, which reads the inbox after leaving the mark, takes them all.
"""

from __future__ import annotations

import contextlib
import hashlib

from psych_core import (
    CONTINUED_KEY,
    AgentSpec,
    Continued,
    DuplicateSignal,
    InboxEntry,
    NotContinuable,
    RunAdmitted,
    RunState,
    ScopedStore,
    UserInput,
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
    # The mark first: from then on the inbox takes nothing more, so what it holds before the
    # mark is everything sent for the next run since the run ended.
    with contextlib.suppress(DuplicateSignal):  # a retry, or a continuation racing this one
        await store.signal(run_id, Continued(continuation=continuation_id(run_id)), CONTINUED_KEY)
    late, _ = _sent_after_end(await store.signals(run_id, state.inbox_seen))
    return Continuing(
        run_id=run_id,
        history=carried_history(state),
        queued=(*undelivered(state), *late),
        history_tokens=state.context_tokens,
    )


async def kept_for_next_run(store: ScopedStore, state: RunState) -> tuple[str, ...]:
    """What the run folded in `state` keeps for the run that will continue it: the messages
    it never gave its model and, once it has ended, those sent for its next run since (until
    it is continued, when its continuation has taken them all)."""
    if not state.ended:
        return state.next_run
    late, continued = _sent_after_end(await store.signals(state.run_id, state.inbox_seen))
    return () if continued else (*undelivered(state), *late)


def _sent_after_end(entries: list[InboxEntry]) -> tuple[tuple[str, ...], bool]:
    """The next-run messages among an ended run's entries that no attempt moved in, up to its
    `Continued` mark, and whether the mark is there."""
    late: list[str] = []
    for entry in entries:
        if entry.key == CONTINUED_KEY:
            return tuple(late), True
        if isinstance(entry.signal, UserInput):
            late.append(entry.signal.text)
    return tuple(late), False


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

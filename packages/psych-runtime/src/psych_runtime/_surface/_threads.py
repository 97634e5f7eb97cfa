"""Threads and queues: reading a chain of runs back, and sending a run a user message.

A thread is read from the logs alone: backwards through each run's `RunAdmitted.continues`,
forwards through the derived id of each run's continuation. Nothing outside the logs links
the runs, so a thread never disagrees with its runs.
"""

from __future__ import annotations

import os

from psych_core import (
    RunAdmitted,
    RunNotFound,
    RunState,
    ScopedStore,
    Thread,
    ThreadMessage,
    UserInput,
    UserQueue,
    fold_all,
    own_messages,
)
from psych_runtime._surface._signals import _redacted
from psych_runtime.runtime import authorize
from psych_runtime.runtime._continuation import continuation_id, kept_for_next_run

QUEUES: tuple[UserQueue, ...] = ("steer", "follow_up", "next_run")


async def send(
    store: ScopedStore,
    run_id: str,
    message: str,
    *,
    queue: UserQueue = "steer",
    key: str | None = None,
) -> int:
    """Put a user message in the run's queue; return its inbox number.

    ``steer``: the model reads it before its next call in this run, once every tool call of
    its current step has its result (never between a call and its result). ``follow_up``: it
    waits until the model has answered everything before it, then becomes the next user
    message, so the run goes on instead of completing. ``next_run``: kept for the run that
    continues this one (``dispatch(..., continues=run_id)``), before that run's input.

    Messages reach the log in the order the inbox numbered them, each exactly once, through
    the same inbox as every signal: one sent while the run suspends, completes or is
    cancelled is moved in before the run's last record (a run that would end with it unseen
    is refused and takes it first). A run that has ended still takes ``next_run`` messages,
    kept in its inbox for its continuation, until the continuation is dispatched; so "cancel,
    then send a message for the next run" never races. Anything else to an ended run, or a
    next-run message once it has been continued, raises `RunFinished`; `key` makes the
    message single-use (`DuplicateSignal`). Asks the policy ``send`` on the run.
    """
    authorize(store, "send", run_id, function="send")
    if queue not in QUEUES:
        raise ValueError(f"send: queue must be one of {QUEUES}, not {queue!r}")
    signal = UserInput(text=message, queue=queue)
    key = key or f"user_input:{os.urandom(8).hex()}"
    return await store.signal(run_id, _redacted(store, signal), key)


async def thread(store: ScopedStore, run_id: str) -> Thread:
    """The whole thread `run_id` belongs to: its runs from the first to the latest
    continuation, and every message of each in order (each run's own, after what it carried).

    Any run of the thread names it. `RunNotFound` when the scope has no such run; asks the
    policy ``read`` on each run it reads.
    """
    states: list[RunState] = []
    current: str | None = run_id
    while current is not None:
        state = await _folded(store, current)
        states.append(state)
        admitted = state.admitted
        current = admitted.continues if isinstance(admitted, RunAdmitted) else None
    states.reverse()
    following = continuation_id(states[-1].run_id)
    while await _exists(store, following):
        states.append(await _folded(store, following))
        following = continuation_id(following)
    messages: list[ThreadMessage] = []
    for state in states:
        messages.extend(own_messages(state))
    return Thread(
        run_ids=tuple(state.run_id for state in states),
        messages=tuple(messages),
        next_run=await kept_for_next_run(store, states[-1]),
    )


async def _exists(store: ScopedStore, run_id: str) -> bool:
    try:
        await store.run(run_id)
    except RunNotFound:
        return False
    return True


async def _folded(store: ScopedStore, run_id: str) -> RunState:
    authorize(store, "read", run_id, function="thread")
    return fold_all(RunState.empty(run_id), await store.read(run_id))

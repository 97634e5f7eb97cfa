"""A thread of 200 runs: with compaction, what a turn costs at run 200 (what the worker reads
and writes, and what the model is sent) stays within twice what it costs at run 2.

Time is measured in the benchmark (``bench/thread_turns.py``); here the cost is counted in
what cannot flake: bytes through the store, and what the model is sent.
"""

from __future__ import annotations

import psych_runtime
from bench.thread_turns import FILLER, SPEC, SizedModel, size
from psych_runtime import MemoryStore, Scope
from psych_runtime.conversations import thread
from psych_runtime.records import ConversationCompacted, Record

SCOPE = Scope(tenant="acme")
# The thread's model and spec are the benchmark's (bench.thread_turns): the same thread,
# counted here in bytes and timed there.


def log_bytes(records: list[Record]) -> int:
    return sum(len(record.model_dump_json()) for record in records)


async def test_the_200th_run_of_a_thread_costs_no_more_than_twice_the_second() -> None:
    model = SizedModel()
    store = MemoryStore()
    cost: dict[int, tuple[int, int]] = {}
    async with psych_runtime.session(model, store=store, scope=SCOPE) as s:
        previous: str | None = None
        for number in range(1, 201):
            before = len(model.requests)
            view = await s.ask(SPEC, f"Question {number:03d}: {FILLER}", continues=previous)
            assert view.status == "completed", view
            sent = sum(size(r) for r in model.requests[before:])
            cost[number] = (log_bytes(await s.store.read(view.run_id)), sent)
            previous = view.run_id
        assert previous is not None
        whole = await thread(s.store, previous)
        compactions = [
            r
            for run_id in whole.run_ids
            for r in await s.store.read(run_id)
            if isinstance(r.body, ConversationCompacted)
        ]
    assert len(whole.run_ids) == 200 and len(whole.messages) == 400
    assert len(compactions) > 10, "the thread never compacted"
    written_2, sent_2 = cost[2]
    written_200, sent_200 = cost[200]
    assert written_200 <= 2 * written_2, (written_2, written_200)
    assert sent_200 <= 2 * sent_2, (sent_2, sent_200)
    # Not only run 200: no run of the thread costs more than twice run 2, and the cost stops
    # growing once compaction holds the conversation (the last hundred runs cost what the
    # tenth did).
    assert max(w for w, _ in cost.values()) <= 2 * written_2
    assert max(t for _, t in cost.values()) <= 2 * sent_2
    assert max(cost[n] for n in range(100, 201)) <= max(cost[n] for n in range(2, 11))

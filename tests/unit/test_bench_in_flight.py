"""`bench._in_flight`: the runs a worker held in flight over a window, from its store's side."""

from __future__ import annotations

import time

import pytest

from bench._agent import StepModel, admit_runs, step
from bench._in_flight import InFlight
from psych_runtime import Runtime, Worker
from psych_runtime.adapters import MemoryStore


def test_the_mean_is_the_spans_within_the_window_over_its_length() -> None:
    in_flight = InFlight(MemoryStore())
    in_flight.spans = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]
    assert in_flight.mean(0.0, 4.0) == pytest.approx(1.0)  # 2 + 2 over 4
    assert in_flight.mean(1.0, 2.0) == pytest.approx(2.0)  # both held the whole second
    assert in_flight.mean(3.0, 5.0) == pytest.approx(0.0)  # none
    assert in_flight.mean(0.0, 8.0) == pytest.approx(5 / 8)


async def test_a_worker_of_one_slot_holds_each_run_from_its_claim_to_its_end() -> None:
    store = MemoryStore()
    await admit_runs(store, 3, 2)
    in_flight = InFlight(store)
    worker = Worker(store, Runtime(model=StepModel(2), tools=[step]), poll_interval=0.01)
    started = time.perf_counter()
    await worker.run_until_idle()
    ended = time.perf_counter()
    assert len(in_flight.spans) == 3  # one span per run, closed by the append that ends it
    for begin, stop in in_flight.spans:
        assert started <= begin < stop <= ended
    # One slot: the spans never overlap, so at most one run is in flight at a time.
    assert 0 < in_flight.mean(started, ended) <= 1


def test_a_store_without_group_commit_is_wrapped_without_it() -> None:
    # `bench.against_ref` runs this benchmark against trees from before `append_many`.
    class OldStore:
        async def claim(self, *args: object, **kwargs: object) -> None:
            return None

        async def append(self, *args: object) -> None:
            return None

    store = OldStore()
    InFlight(store)  # type: ignore[arg-type]
    assert not hasattr(store, "append_many")
    assert store.claim.__name__ == "claimed"  # wrapped all the same

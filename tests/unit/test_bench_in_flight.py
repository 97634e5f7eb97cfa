"""`bench._in_flight`: the runs a worker held in flight over a window, read from their logs."""

from __future__ import annotations

import datetime as dt

import pytest

from bench._agent import StepModel, admit_runs, step
from bench._in_flight import mean_in_flight, spans
from psych_runtime import Runtime, Worker
from psych_runtime.adapters import MemoryStore

T0 = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_the_mean_is_the_spans_within_the_window_over_its_length() -> None:
    held = [(at(0), at(2)), (at(1), at(3)), (at(5), at(6))]
    assert mean_in_flight(held, at(0), at(4)) == pytest.approx(1.0)  # 2 + 2 over 4
    assert mean_in_flight(held, at(1), at(2)) == pytest.approx(2.0)  # both, the whole second
    assert mean_in_flight(held, at(3), at(5)) == pytest.approx(0.0)  # none
    assert mean_in_flight(held, at(0), at(8)) == pytest.approx(5 / 8)


async def test_a_run_is_held_from_its_claim_to_its_last_record() -> None:
    store = MemoryStore()
    run_ids = await admit_runs(store, 3, 2)
    worker = Worker(store, Runtime(model=StepModel(2), tools=[step]), poll_interval=0.01)
    started = dt.datetime.now(dt.UTC)
    await worker.run_until_idle()
    ended = dt.datetime.now(dt.UTC)
    never_claimed = await admit_runs(store, 1, 2)  # admitted after the worker stopped
    found = await spans(store, [*run_ids, *never_claimed])
    assert len(found) == 3  # a run never claimed was never in flight
    for run_id, (begin, stop) in zip(run_ids, found, strict=True):
        records = await store.read(run_id)
        assert (begin, stop) == (records[1].at, records[-1].at)  # AttemptStarted, RunFinished
        assert started <= begin < stop <= ended
    # One slot: the spans never overlap, so at most one run is in flight at a time.
    assert 0 < mean_in_flight(found, started, ended) <= 1

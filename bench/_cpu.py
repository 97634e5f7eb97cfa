"""A unit of CPU to measure the runtime's CPU per step against, so machines can be compared.

The unit is a fixed piece of the kind of work a durable step does in Python (build a small
record-like dict, serialise it to JSON and parse it back, copy an object of a few dozen
attributes), timed with `time.process_time`. The CPU a step costs divided by this unit changes
little from one machine to another, where the microseconds alone change with the processor.
"""

from __future__ import annotations

import json
import statistics
import time
from types import SimpleNamespace

_FIELDS = {f"field_{index}": index for index in range(33)}


def _unit() -> None:
    record = {
        "run_id": "01J0000000000000000000000",
        "seq": 7,
        "attempt": 1,
        "at": "2026-01-01T00:00:00Z",
        "body": {"type": "tool_call_finished", "call_id": "2.0", "result": {"index": 7}},
    }
    json.loads(json.dumps(record))
    state = SimpleNamespace(**_FIELDS)
    SimpleNamespace(**vars(state))


def calibration_us(units: int = 20_000, rounds: int = 3) -> float:
    """Microseconds of CPU one unit takes here: the median of `rounds` timings of `units`."""
    timings = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(units):
            _unit()
        timings.append((time.process_time() - started) * 1e6 / units)
    return statistics.median(timings)

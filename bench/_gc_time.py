"""The CPU this process spends in Python's cyclic garbage collector, timed by its callbacks."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class GcTime:
    """Collections seen and the CPU seconds they took, while `gc_timed` is open."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started
            self.collections += 1


@contextmanager
def gc_timed() -> Iterator[GcTime]:
    """Time every collection while the block runs (`gc.callbacks`)."""
    timer = GcTime()
    gc.callbacks.append(timer)
    try:
        yield timer
    finally:
        gc.callbacks.remove(timer)

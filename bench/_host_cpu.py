"""Where the host's CPU went while worker processes ran: what says why scale-out saturates.

The scale-out measure starts 1, 2 and 4 worker processes on one host, beside the database
server. When runs/s stops growing, either the database has no more to give or the host has no
more CPU. Two figures tell these apart, taken over exactly the timed window:

- how busy the host's cores were (`/proc/stat`: the share of all cores' time not idle);
- how many cores the worker processes used (the CPU time each says it used from the start
  word to its end, over the window's wall-clock time).

A host near 100% busy is saturated on CPU, whatever the database could still commit; the
cores the workers did not use went to the database server and the rest of the host.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The host's CPU counters at one moment."""

    at: float
    ticks: tuple[int, int] | None  # (busy, total) of all cores; None without /proc/stat


@dataclass(frozen=True, slots=True)
class HostUse:
    """What the host's CPU did over a window.

    Attributes:
        busy: the share of all cores' time that was not idle (0 to 1); None where
            `/proc/stat` cannot be read.
        worker_cores: the cores the worker processes used on average over the window.
        cores: the host's cores.
    """

    busy: float | None
    worker_cores: float
    cores: int


def snapshot() -> Snapshot:
    """The counters now."""
    return Snapshot(time.perf_counter(), _stat())


def between(before: Snapshot, after: Snapshot, worker_cpu: float) -> HostUse:
    """The host's use from `before` to `after`, in which the workers used `worker_cpu`
    seconds of CPU together."""
    elapsed = max(after.at - before.at, 1e-9)
    busy: float | None = None
    if before.ticks is not None and after.ticks is not None:
        ticks = after.ticks[1] - before.ticks[1]
        busy = (after.ticks[0] - before.ticks[0]) / ticks if ticks > 0 else None
    return HostUse(busy, worker_cpu / elapsed, os.cpu_count() or 1)


def _stat() -> tuple[int, int] | None:
    """(busy, total) ticks of all cores since boot; None without `/proc/stat`."""
    try:
        first = STAT.read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, IndexError):
        return None
    # cpu user nice system idle iowait irq softirq steal [guest guest_nice: inside user, nice]
    ticks = [int(value) for value in first[1:9]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)

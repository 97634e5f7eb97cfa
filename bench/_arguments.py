"""The benchmarks' numeric arguments, refused when they are read if no measure can use them.

A benchmark that takes a count it cannot use should say so before it starts, naming the
argument, not fail with a traceback minutes later or print a figure of nothing (a median of no
rounds, runs/s over no runs, an early and a late window that overlap).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{value} is too small: this measure needs at least {minimum}"
            )
        return value

    return parse


positive = at_least(1)
"""An argparse ``type`` for a count of at least one (runs, rounds, calls)."""
zero_or_more = at_least(0)
"""An argparse ``type`` for a count that may be 0 (bytes, queued runs)."""


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def seconds(text: str) -> float:
    """An argparse ``type`` for a time of more than zero seconds."""
    value = _number(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is not a time: it must be more than 0")
    return value


def not_negative(text: str) -> float:
    """An argparse ``type`` for a number of zero or more (a wait that may be left out)."""
    value = _number(text)
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is below 0")
    return value

"""Values remembered for one object: what a worker derives from the same spec or admission at
every round (a tree index, a parsed input, a version hash) is computed once.

Keyed by the object's identity and holding the object, so an id is never reused for another
object while it is remembered, and a copy (`model_copy(update=...)`) is computed anew. Bounded:
the oldest entries go first. Pure: nothing here does IO or reads a clock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable


class Remembered[K, V]:
    """Up to `kept` values, each computed once per object by `compute`."""

    def __init__(self, compute: Callable[[K], V], kept: int = 64) -> None:
        self._compute = compute
        self._kept = kept
        self._values: OrderedDict[int, tuple[K, V]] = OrderedDict()

    def __call__(self, owner: K) -> V:
        """The value for `owner`, computed now if it is not remembered."""
        found = self._values.get(id(owner))
        if found is not None and found[0] is owner:
            return found[1]
        value = self._compute(owner)
        self._values[id(owner)] = (owner, value)
        while len(self._values) > self._kept:
            self._values.popitem(last=False)
        return value

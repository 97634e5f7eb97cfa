"""Memo keys: where a step is in the tree, never when it finished.

A step's key is its name after the indices of the foreach items and loop iterations around
it: ``charge``, ``orders[3].charge``, ``poll_loop[2].poll``. Its calls are the key itself for
the first try, ``KEY#N`` for try N, ``KEY~N`` for the wait before try N, and ``KEY!`` for the
pause at a breakpoint before it starts. A foreach item or a loop iteration is ``KEY[i]``
itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CallKey:
    """What a call id says: the step's key, which try, whether it is the wait before it
    (`backoff`), and whether it is the pause at a breakpoint before the step starts."""

    key: str
    attempt: int = 1
    backoff: bool = False
    pause: bool = False

    @property
    def is_try(self) -> bool:
        """Whether the call is a try of the step itself (not a wait or a pause before one)."""
        return not (self.backoff or self.pause)


def try_call_id(key: str, attempt: int) -> str:
    """The call id of try `attempt` (1, 2, ...) of the step `key`."""
    return key if attempt == 1 else f"{key}#{attempt}"


def backoff_call_id(key: str, attempt: int) -> str:
    """The call id of the wait before try `attempt` of the step `key`."""
    return f"{key}~{attempt}"


def pause_call_id(key: str) -> str:
    """The call id of the pause at a breakpoint before the step `key` starts."""
    return f"{key}!"


def parse_call_id(call_id: str) -> CallKey:
    """The step key, try and kind of a step's call id."""
    if call_id.endswith("!"):
        return CallKey(call_id[:-1], pause=True)
    last = call_id.rsplit(".", 1)[-1]
    for mark, backoff in (("#", False), ("~", True)):
        if mark in last:
            key, _, number = call_id.rpartition(mark)
            if number.isdigit():
                return CallKey(key, int(number), backoff)
    return CallKey(call_id)


def step_name(key: str) -> str:
    """The name of the step a key (or call id) belongs to: its last part, without indices or
    a try's mark."""
    last = parse_call_id(key).key.rsplit(".", 1)[-1]
    return last.split("[", 1)[0]


def split_index(key: str) -> tuple[str, int] | None:
    """``("orders", 3)`` for the item (or iteration) key ``orders[3]``; None for a step's key."""
    if not key.endswith("]"):
        return None
    base, _, index = key[:-1].rpartition("[")
    if not base or not index.isdigit():
        return None
    return base, int(index)


def indexed(key: str, index: int) -> str:
    """The key of item (or iteration) `index` of the container `key`."""
    return f"{key}[{index}]"


def key_parts(key: str) -> tuple[tuple[str, int | None], ...]:
    """The steps a key passes through, each with its item or iteration index:
    ``orders[3].charge`` is ``(("orders", 3), ("charge", None))``."""
    parts: list[tuple[str, int | None]] = []
    for part in key.split("."):
        split = split_index(part)
        parts.append(split if split is not None else (part, None))
    return tuple(parts)

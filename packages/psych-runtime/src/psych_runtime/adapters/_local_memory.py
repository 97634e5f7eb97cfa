"""`LocalUserMemory`: the user memory in the box. It dies with the process.

A first-class adapter: it passes the same contract suite as the database ones
(`psych_runtime.testing.memory_contract`) and is the test double for apps that use memory.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from psych_core.ports import (
    Fact,
    UserMemory,
    check_fact,
    check_owner,
    check_recall,
    matches,
    query_terms,
)


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class _User:
    """One user's memory: facts by id in the order they were stored, and keys to ids."""

    facts: dict[str, Fact] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)


class LocalUserMemory(UserMemory):
    """A `UserMemory` in this process's memory: for tests, `session()` and one-process apps.

    Every method runs without awaiting anything, so each is atomic on the event loop; use one
    instance from one event loop.

    Args:
        clock: a function returning the current UTC time, for `Fact.at`; tests inject one.
    """

    def __init__(self, *, clock: Callable[[], dt.datetime] | None = None) -> None:
        self._clock = clock or _utc_now
        self._users: dict[tuple[str, str], _User] = {}

    def __repr__(self) -> str:
        count = sum(len(user.facts) for user in self._users.values())
        return f"LocalUserMemory({count} facts of {len(self._users)} users)"

    async def remember(
        self, tenant: str, user: str, text: str, *, key: str, run_id: str | None = None
    ) -> Fact:
        """Store `text` once per `key`; see `UserMemory.remember`."""
        check_fact(tenant, user, text, key)
        held = self._users.setdefault((tenant, user), _User())
        existing = held.keys.get(key)
        if existing is not None:
            return held.facts[existing]
        fact = Fact(id=uuid.uuid4().hex, text=text, at=self._clock(), key=key, run_id=run_id)
        held.facts[fact.id] = fact
        held.keys[key] = fact.id
        return fact

    async def recall(
        self, tenant: str, user: str, *, query: str | None = None, limit: int = 20
    ) -> list[Fact]:
        """The user's facts, newest first; see `UserMemory.recall`."""
        check_recall(tenant, user, limit)
        held = self._users.get((tenant, user))
        if held is None:
            return []
        terms = query_terms(query)
        found: list[Fact] = []
        for fact in reversed(held.facts.values()):
            if matches(fact.text, terms):
                found.append(fact)
                if len(found) == limit:
                    break
        return found

    async def forget(self, tenant: str, user: str, fact_id: str) -> bool:
        """Delete one fact and its key; see `UserMemory.forget`."""
        check_owner(tenant, user)
        held = self._users.get((tenant, user))
        if held is None or fact_id not in held.facts:
            return False
        fact = held.facts.pop(fact_id)
        del held.keys[fact.key]
        if not held.facts:
            del self._users[(tenant, user)]
        return True

    async def erase(self, tenant: str, user: str) -> int:
        """Delete every fact and key of the user; see `UserMemory.erase`."""
        check_owner(tenant, user)
        held = self._users.pop((tenant, user), None)
        return 0 if held is None else len(held.facts)

"""The `UserMemory` port: facts an agent keeps about one end user, across runs.

(`MemoryStore` is the run store that lives in memory; this port is a different thing, so it is
named for what it holds.) What every adapter checks alike lives here, once: the bounds on a
fact's text, a key and a recall (`check_fact`, `check_key`, `check_recall`), and how a query
matches a fact (`folded`, `query_terms`, `matches`), so that a fact one adapter finds every
adapter finds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from psych_core._errors import InvalidFact
from psych_core.ports._closing import Closing

MAX_FACT_CHARS = 2_000
"""The longest fact, in characters."""

MAX_KEY_CHARS = 512
"""The longest idempotency key of a `UserMemory.remember`, in characters."""

MAX_RECALL = 1_000
"""The most facts one `UserMemory.recall` returns."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing remembered about an end user.

    Attributes:
        id: the fact's id, made by the adapter when it was stored; what `UserMemory.forget`
            takes (the model sees it beside each recalled fact).
        text: what was remembered.
        at: when it was remembered (UTC), by the adapter's clock.
        key: the idempotency key it was remembered with.
        run_id: the run that remembered it, when a run did.
    """

    id: str
    text: str
    at: dt.datetime
    key: str
    run_id: str | None = None


@runtime_checkable
class UserMemory(Closing, Protocol):
    """Facts about end users that outlive runs: what the built-in ``remember`` and ``forget``
    tools write, and what the runtime recalls into a run's instructions before each model call
    (`AgentSpec.memory`).

    Facts belong to one end user of one tenant: every call names both, the tenant first. The
    runtime passes the run's ``Scope.tenant`` and ``Scope.principal``; an app managing its
    users' memory (a "what do you know about me" page, an erasure request) calls the same
    methods. Recall is by recency and plain words: there is no semantic search.

    Contract (certified by `psych_runtime.testing.memory_contract.UserMemoryContract`):
        - **Per tenant and user.** A call sees only the facts of its (tenant, user): the same
          user name in another tenant, or another user of the same tenant, is another memory.
          A fact id or key of another user behaves exactly as one that was never used.
        - `remember` is atomic and **idempotent on** `key` within (tenant, user): the first
          call stores the fact; every later call with that key, concurrent ones included,
          stores nothing and returns the fact stored first, whatever its text (the key names
          the act of remembering: the built-in tool passes its call's idempotency key, so a
          call run again after a crash stores once). A key lives as long as its fact: after
          `forget` or `erase` the same key stores anew. When it returns, every process
          sharing the memory recalls the fact.
        - `recall` returns facts newest first (the order they were stored in; a fact stored
          again under its key keeps its place), at most `limit`. With `query`, only the facts
          whose text contains every word of it (split on whitespace), ignoring case
          (`matches`); an empty query is no filter.
        - `forget` deletes one fact (and its key); False when (tenant, user) has no such fact.
        - `erase` deletes everything of the user in the tenant, facts and keys, atomically,
          and returns how many facts it deleted: afterwards nothing of theirs is recalled,
          forgotten or deduplicated.
        - Errors: a fact that is empty (only whitespace), longer than `MAX_FACT_CHARS`
          characters, or not storable text (a NUL, a lone surrogate) is `InvalidFact`, and
          nothing is stored; an empty tenant, user or key,
          a key longer than `MAX_KEY_CHARS` characters, or a `limit` outside 1 to
          `MAX_RECALL` is `ValueError` (the `check_*` functions here say which). Anything
          the adapter cannot reach is `StoreUnavailable` (safe to retry: `remember` by its
          key); any other failure a `StoreError`.
        - `close` (and ``async with``, from `Closing`) releases its connections.
    """

    async def remember(
        self, tenant: str, user: str, text: str, *, key: str, run_id: str | None = None
    ) -> Fact:
        """Store `text` as a fact about `user` of `tenant`, once per `key`; return the fact.

        Args:
            tenant: the tenant.
            user: the end user (a run's ``Scope.principal``).
            text: the fact, at most `MAX_FACT_CHARS` characters, not blank.
            key: the idempotency key: the same key stores once and returns the same fact.
            run_id: the run that remembers it, kept on the fact.
        """
        ...

    async def recall(
        self, tenant: str, user: str, *, query: str | None = None, limit: int = 20
    ) -> list[Fact]:
        """The user's facts, newest first, at most `limit`; with `query`, only those that
        contain every word of it, ignoring case."""
        ...

    async def forget(self, tenant: str, user: str, fact_id: str) -> bool:
        """Delete the user's fact `fact_id`; False when the user has no such fact."""
        ...

    async def erase(self, tenant: str, user: str) -> int:
        """Delete every fact and key of `user` in `tenant`; return how many facts."""
        ...


def check_owner(tenant: str, user: str) -> None:
    """`ValueError` unless `tenant` and `user` are both non-empty."""
    if not tenant or not user:
        raise ValueError(
            f"user memory is per tenant and user, both non-empty: got tenant={tenant!r}, "
            f"user={user!r}"
        )


def check_fact(tenant: str, user: str, text: str, key: str) -> None:
    """What `UserMemory.remember` refuses before it stores anything: `ValueError` for the
    tenant, user or key, `InvalidFact` for the text."""
    check_owner(tenant, user)
    check_key(key)
    if not text.strip():
        raise InvalidFact("a fact must have some text: got an empty one")
    if len(text) > MAX_FACT_CHARS:
        raise InvalidFact(
            f"a fact is at most {MAX_FACT_CHARS} characters, this one has {len(text)}: "
            "remember a shorter one"
        )
    if not _storable(text):
        raise InvalidFact(
            "a fact must be valid Unicode text without NUL characters (every adapter keeps "
            "it as text): remove them"
        )


def check_key(key: str) -> None:
    """`ValueError` unless `key` is non-empty and at most `MAX_KEY_CHARS` characters."""
    if not key or len(key) > MAX_KEY_CHARS or not _storable(key):
        raise ValueError(
            f"a remember key has 1 to {MAX_KEY_CHARS} characters of valid Unicode text "
            f"without NUL, not {key!r}: pass the call's idempotency key, or a key of your own "
            "naming the act of remembering"
        )


def _storable(text: str) -> bool:
    """Whether a database keeps `text` as text: no NUL (PostgreSQL refuses it), no lone
    surrogate (not encodable as UTF-8)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_recall(tenant: str, user: str, limit: int) -> None:
    """`ValueError` unless the owner is valid and `limit` is 1 to `MAX_RECALL`."""
    check_owner(tenant, user)
    if not 1 <= limit <= MAX_RECALL:
        raise ValueError(f"recall takes a limit of 1 to {MAX_RECALL} facts, not {limit}")


def folded(text: str) -> str:
    """`text` as queries match it: case-folded (``"Straße"`` matches ``"STRASSE"``).

    SQL adapters keep it in a column of its own, so that a query is matched the same way in
    the database as here (a database's ``lower()`` may not fold every script).
    """
    return text.casefold()


def query_terms(query: str | None) -> tuple[str, ...]:
    """The words a fact must contain to match `query`, folded; none for no query."""
    if query is None:
        return ()
    return tuple(dict.fromkeys(folded(word) for word in query.split()))


def matches(text: str, terms: tuple[str, ...]) -> bool:
    """Whether a fact's `text` contains every one of `terms` (`query_terms`)."""
    haystack = folded(text)
    return all(term in haystack for term in terms)

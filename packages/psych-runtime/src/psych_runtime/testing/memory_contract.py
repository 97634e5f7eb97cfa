"""The user memory contract suite: one abstract pytest class every `UserMemory` passes.

Certify an adapter with a few lines::

    from psych_runtime.testing.memory_contract import UserMemoryContract
    from my_memory import MyUserMemory


    class TestMyUserMemory(UserMemoryContract):
        async def create_memory(self) -> MyUserMemory:
            return MyUserMemory(...)  # fresh: no other test uses or sees into it

What it covers: remember, recall, forget and erase; keys (the same key stores once, also when
remembered concurrently; a key lives as long as its fact); newest-first order; query
filtering (every word, ignoring case, unicode); limits (empty and long facts, keys, recall
limits); isolation of tenants and of the users of one tenant (an id or key of another user
behaves as one never used); and erase completeness (after it nothing is recalled, no old id
is forgotten, an old key stores anew).

This module imports pytest: it ships in the ``psych-runtime[testing]`` extra.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from psych_core import InvalidFact, UserMemory
from psych_core.ports import MAX_FACT_CHARS, MAX_KEY_CHARS, MAX_RECALL

TENANT = "tenant-a"
OTHER_TENANT = "tenant-b"
USER = "user-1"
OTHER_USER = "user-2"


class UserMemoryContract:
    """Every test of the user memory contract. Subclass it and implement `create_memory`.

    pytest collects the subclass (name it ``Test...``), never this class itself.
    """

    async def create_memory(self) -> UserMemory:
        """A fresh, empty memory for one test (migrated, if the adapter needs it)."""
        raise NotImplementedError

    async def close_memory(self, memory: UserMemory) -> None:
        """Release what `create_memory` made (nothing by default)."""

    @pytest_asyncio.fixture
    async def memory(self) -> AsyncIterator[UserMemory]:
        made = await self.create_memory()
        try:
            yield made
        finally:
            await self.close_memory(made)

    # -- remember and recall ------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_a_fact_remembered_is_recalled(self, memory: UserMemory) -> None:
        assert isinstance(memory, UserMemory), "it has every method of the port"
        before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=60)
        fact = await memory.remember(TENANT, USER, "Prefers tea ✓", key="k1", run_id="run-1")
        after = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=60)
        assert fact.text == "Prefers tea ✓"
        assert fact.key == "k1"
        assert fact.run_id == "run-1"
        assert fact.id
        assert fact.at.utcoffset() == dt.timedelta(0), "at is UTC"
        assert before <= fact.at <= after
        assert await memory.recall(TENANT, USER) == [fact]

    @pytest.mark.asyncio
    async def test_run_id_is_optional(self, memory: UserMemory) -> None:
        fact = await memory.remember(TENANT, USER, "Lives in Lyon", key="k1")
        assert fact.run_id is None
        assert await memory.recall(TENANT, USER) == [fact]

    @pytest.mark.asyncio
    async def test_an_unknown_user_recalls_nothing(self, memory: UserMemory) -> None:
        assert await memory.recall(TENANT, USER) == []

    @pytest.mark.asyncio
    async def test_facts_are_recalled_newest_first(self, memory: UserMemory) -> None:
        facts = [
            await memory.remember(TENANT, USER, f"fact number {n}", key=f"k{n}") for n in range(5)
        ]
        assert await memory.recall(TENANT, USER) == facts[::-1]
        assert len({fact.id for fact in facts}) == 5, "each fact has an id of its own"

    @pytest.mark.asyncio
    async def test_limit_keeps_the_newest(self, memory: UserMemory) -> None:
        facts = [await memory.remember(TENANT, USER, f"fact {n}", key=f"k{n}") for n in range(25)]
        assert await memory.recall(TENANT, USER) == facts[::-1][:20], "20 by default"
        assert await memory.recall(TENANT, USER, limit=3) == facts[::-1][:3]
        assert await memory.recall(TENANT, USER, limit=1) == [facts[-1]]
        assert await memory.recall(TENANT, USER, limit=100) == facts[::-1]

    @pytest.mark.asyncio
    async def test_the_longest_fact_is_kept_whole(self, memory: UserMemory) -> None:
        text = "é" * (MAX_FACT_CHARS - 1) + "x"
        fact = await memory.remember(TENANT, USER, text, key="long")
        (recalled,) = await memory.recall(TENANT, USER)
        assert recalled.text == text == fact.text

    @pytest.mark.asyncio
    async def test_text_round_trips_exactly(self, memory: UserMemory) -> None:
        texts = ["  spaced  ", "line one\nline two", "quote ' and \" and \\", "emoji 🫖", "100%_x"]
        for n, text in enumerate(texts):
            await memory.remember(TENANT, USER, text, key=f"k{n}")
        recalled = await memory.recall(TENANT, USER)
        assert [fact.text for fact in recalled] == texts[::-1]

    # -- keys ---------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_the_same_key_stores_once(self, memory: UserMemory) -> None:
        first = await memory.remember(TENANT, USER, "Prefers tea", key="run-1:2.0")
        again = await memory.remember(TENANT, USER, "Prefers tea", key="run-1:2.0")
        other_text = await memory.remember(TENANT, USER, "Prefers coffee", key="run-1:2.0")
        assert again == first
        assert other_text == first, "the key names the act: the fact stored first is returned"
        assert await memory.recall(TENANT, USER) == [first]

    @pytest.mark.asyncio
    async def test_a_fact_remembered_again_keeps_its_place(self, memory: UserMemory) -> None:
        first = await memory.remember(TENANT, USER, "first", key="k1")
        second = await memory.remember(TENANT, USER, "second", key="k2")
        assert await memory.remember(TENANT, USER, "first", key="k1") == first
        assert await memory.recall(TENANT, USER) == [second, first]

    @pytest.mark.asyncio
    async def test_concurrent_remembers_with_one_key_store_once(self, memory: UserMemory) -> None:
        facts = await asyncio.gather(
            *(memory.remember(TENANT, USER, "Prefers tea", key="same") for _ in range(8))
        )
        assert len({fact.id for fact in facts}) == 1
        assert await memory.recall(TENANT, USER) == [facts[0]]

    @pytest.mark.asyncio
    async def test_concurrent_remembers_with_other_keys_all_store(self, memory: UserMemory) -> None:
        facts = await asyncio.gather(
            *(memory.remember(TENANT, USER, f"fact {n}", key=f"k{n}") for n in range(8))
        )
        recalled = await memory.recall(TENANT, USER)
        assert sorted(fact.id for fact in recalled) == sorted(fact.id for fact in facts)

    @pytest.mark.asyncio
    async def test_a_key_lives_as_long_as_its_fact(self, memory: UserMemory) -> None:
        first = await memory.remember(TENANT, USER, "Prefers tea", key="k1")
        assert await memory.forget(TENANT, USER, first.id)
        again = await memory.remember(TENANT, USER, "Prefers tea", key="k1")
        assert again.id != first.id, "forgotten: the key stores anew"
        assert await memory.recall(TENANT, USER) == [again]

    # -- query --------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_a_query_keeps_facts_with_every_word(self, memory: UserMemory) -> None:
        tea = await memory.remember(TENANT, USER, "Prefers green TEA in the morning", key="k1")
        await memory.remember(TENANT, USER, "Prefers coffee in the morning", key="k2")
        evening = await memory.remember(TENANT, USER, "Drinks tea in the evening", key="k3")
        assert await memory.recall(TENANT, USER, query="tea") == [evening, tea]
        assert await memory.recall(TENANT, USER, query="Tea  MORNING") == [tea]
        assert await memory.recall(TENANT, USER, query="tea biscuits") == []
        assert await memory.recall(TENANT, USER, query="tea", limit=1) == [evening]

    @pytest.mark.asyncio
    async def test_an_empty_query_is_no_filter(self, memory: UserMemory) -> None:
        facts = [await memory.remember(TENANT, USER, f"fact {n}", key=f"k{n}") for n in range(3)]
        assert await memory.recall(TENANT, USER, query="") == facts[::-1]
        assert await memory.recall(TENANT, USER, query="   ") == facts[::-1]

    @pytest.mark.asyncio
    async def test_a_query_matches_words_inside_the_text(self, memory: UserMemory) -> None:
        fact = await memory.remember(TENANT, USER, "Allergic to peanuts.", key="k1")
        assert await memory.recall(TENANT, USER, query="peanut") == [fact]
        assert await memory.recall(TENANT, USER, query="peanuts.") == [fact]

    @pytest.mark.asyncio
    async def test_a_query_ignores_case_in_every_script(self, memory: UserMemory) -> None:
        street = await memory.remember(TENANT, USER, "Wohnt in der Hauptstraße", key="k1")
        greek = await memory.remember(TENANT, USER, "Ονομάζεται ΣΟΦΙΑ", key="k2")
        assert await memory.recall(TENANT, USER, query="HAUPTSTRASSE") == [street]
        assert await memory.recall(TENANT, USER, query="σοφια") == [greek]

    @pytest.mark.asyncio
    async def test_query_characters_are_not_patterns(self, memory: UserMemory) -> None:
        percent = await memory.remember(TENANT, USER, "Tips 15% always", key="k1")
        await memory.remember(TENANT, USER, "Tips 15 euros", key="k2")
        await memory.remember(TENANT, USER, "snake_case fan", key="k3")
        assert await memory.recall(TENANT, USER, query="15%") == [percent]
        assert await memory.recall(TENANT, USER, query="%") == [percent]
        assert await memory.recall(TENANT, USER, query="s_ake") == []
        assert await memory.recall(TENANT, USER, query="'; DROP TABLE x; --") == []

    # -- forget -------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_forget_deletes_one_fact(self, memory: UserMemory) -> None:
        keep = await memory.remember(TENANT, USER, "keep", key="k1")
        drop = await memory.remember(TENANT, USER, "drop", key="k2")
        assert await memory.forget(TENANT, USER, drop.id) is True
        assert await memory.recall(TENANT, USER) == [keep]
        assert await memory.forget(TENANT, USER, drop.id) is False, "forgotten already"

    @pytest.mark.asyncio
    async def test_forget_of_an_unknown_id_is_false(self, memory: UserMemory) -> None:
        assert await memory.forget(TENANT, USER, "no-such-fact") is False
        await memory.remember(TENANT, USER, "kept", key="k1")
        assert await memory.forget(TENANT, USER, "no-such-fact") is False
        assert len(await memory.recall(TENANT, USER)) == 1

    # -- erase --------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_erase_deletes_everything_of_the_user(self, memory: UserMemory) -> None:
        old = [await memory.remember(TENANT, USER, f"fact {n}", key=f"k{n}") for n in range(3)]
        assert await memory.erase(TENANT, USER) == 3
        assert await memory.recall(TENANT, USER) == []
        assert await memory.recall(TENANT, USER, query="fact") == []
        for fact in old:
            assert await memory.forget(TENANT, USER, fact.id) is False
        anew = await memory.remember(TENANT, USER, "fact 0", key="k0")
        assert anew.id not in {fact.id for fact in old}, "an old key stores anew"
        assert await memory.recall(TENANT, USER) == [anew]

    @pytest.mark.asyncio
    async def test_erase_of_an_unknown_user_is_zero(self, memory: UserMemory) -> None:
        assert await memory.erase(TENANT, USER) == 0
        await memory.remember(TENANT, USER, "fact", key="k1")
        assert await memory.erase(TENANT, USER) == 1
        assert await memory.erase(TENANT, USER) == 0

    @pytest.mark.asyncio
    async def test_erase_leaves_other_users_and_tenants(self, memory: UserMemory) -> None:
        await memory.remember(TENANT, USER, "erased", key="k1")
        neighbour = await memory.remember(TENANT, OTHER_USER, "kept", key="k1")
        namesake = await memory.remember(OTHER_TENANT, USER, "kept too", key="k1")
        assert await memory.erase(TENANT, USER) == 1
        assert await memory.recall(TENANT, OTHER_USER) == [neighbour]
        assert await memory.recall(OTHER_TENANT, USER) == [namesake]

    # -- isolation ----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_the_same_user_name_in_two_tenants_is_two_memories(
        self, memory: UserMemory
    ) -> None:
        mine = await memory.remember(TENANT, USER, "Prefers tea", key="k1")
        assert await memory.recall(OTHER_TENANT, USER) == []
        assert await memory.recall(OTHER_TENANT, USER, query="tea") == []
        assert await memory.forget(OTHER_TENANT, USER, mine.id) is False
        assert await memory.erase(OTHER_TENANT, USER) == 0
        theirs = await memory.remember(OTHER_TENANT, USER, "Prefers tea", key="k1")
        assert theirs.id != mine.id, "a key of another tenant's user is one never used"
        assert await memory.recall(TENANT, USER) == [mine]
        assert await memory.recall(OTHER_TENANT, USER) == [theirs]

    @pytest.mark.asyncio
    async def test_two_users_of_one_tenant_are_two_memories(self, memory: UserMemory) -> None:
        mine = await memory.remember(TENANT, USER, "Prefers tea", key="k1")
        assert await memory.recall(TENANT, OTHER_USER) == []
        assert await memory.forget(TENANT, OTHER_USER, mine.id) is False
        assert await memory.erase(TENANT, OTHER_USER) == 0
        theirs = await memory.remember(TENANT, OTHER_USER, "Prefers coffee", key="k1")
        assert theirs.id != mine.id
        assert await memory.recall(TENANT, USER) == [mine]
        assert await memory.recall(TENANT, OTHER_USER) == [theirs]

    @pytest.mark.asyncio
    async def test_names_are_compared_exactly(self, memory: UserMemory) -> None:
        mine = await memory.remember(TENANT, USER, "fact", key="k1")
        for tenant, user in ((TENANT, USER.upper()), (TENANT, USER + " "), (TENANT + "%", USER)):
            assert await memory.recall(tenant, user) == []
            assert await memory.forget(tenant, user, mine.id) is False
        assert await memory.recall(TENANT, USER) == [mine]

    # -- limits -------------------------------------------------------------------------------

    @pytest.mark.asyncio
    @pytest.mark.parametrize("text", ["", "   ", "\n\t"])
    async def test_an_empty_fact_is_refused(self, memory: UserMemory, text: str) -> None:
        with pytest.raises(InvalidFact, match="empty"):
            await memory.remember(TENANT, USER, text, key="k1")
        assert await memory.recall(TENANT, USER) == []

    @pytest.mark.asyncio
    async def test_a_fact_too_long_is_refused(self, memory: UserMemory) -> None:
        with pytest.raises(InvalidFact, match=f"at most {MAX_FACT_CHARS}"):
            await memory.remember(TENANT, USER, "x" * (MAX_FACT_CHARS + 1), key="k1")
        assert await memory.recall(TENANT, USER) == []
        fact = await memory.remember(TENANT, USER, "short", key="k1")
        assert await memory.recall(TENANT, USER) == [fact], "the refused call kept no key"

    @pytest.mark.asyncio
    @pytest.mark.parametrize("text", ["nul \x00 inside", "lone \ud800 surrogate"])
    async def test_a_fact_that_is_not_text_is_refused(self, memory: UserMemory, text: str) -> None:
        with pytest.raises(InvalidFact, match="Unicode"):
            await memory.remember(TENANT, USER, text, key="k1")
        assert await memory.recall(TENANT, USER) == []

    @pytest.mark.asyncio
    async def test_bad_keys_and_owners_are_refused(self, memory: UserMemory) -> None:
        for key in ("", "k" * (MAX_KEY_CHARS + 1), "nul\x00"):
            with pytest.raises(ValueError, match="key"):
                await memory.remember(TENANT, USER, "fact", key=key)
        for tenant, user in (("", USER), (TENANT, "")):
            with pytest.raises(ValueError, match="tenant and user"):
                await memory.remember(tenant, user, "fact", key="k1")
            with pytest.raises(ValueError, match="tenant and user"):
                await memory.recall(tenant, user)
            with pytest.raises(ValueError, match="tenant and user"):
                await memory.forget(tenant, user, "id")
            with pytest.raises(ValueError, match="tenant and user"):
                await memory.erase(tenant, user)
        fact = await memory.remember(TENANT, USER, "fact", key="k" * MAX_KEY_CHARS)
        assert await memory.recall(TENANT, USER) == [fact]

    @pytest.mark.asyncio
    @pytest.mark.parametrize("limit", [0, -1, MAX_RECALL + 1])
    async def test_a_limit_out_of_range_is_refused(self, memory: UserMemory, limit: int) -> None:
        with pytest.raises(ValueError, match="limit"):
            await memory.recall(TENANT, USER, limit=limit)


__all__ = ["OTHER_TENANT", "OTHER_USER", "TENANT", "USER", "UserMemoryContract"]

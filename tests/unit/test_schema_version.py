"""A store's schema version against its adapter's (`SchemaVersion.state`), and
`psych_runtime.ports.schema_version`: the store's own answer, the inner store's through an
`OffloadingStore`, None for a store that keeps no versioned schema. The stores' own answers
are tested on real databases in tests/contract/test_*_store.py."""

from __future__ import annotations

import pytest

from psych_runtime import MemoryBlobStore, MemoryStore, OffloadingStore
from psych_runtime.errors import StoreUnavailable
from psych_runtime.ports import SchemaVersion, VersionedSchema, schema_version


@pytest.mark.parametrize(
    ("applied", "known", "state"),
    [
        (0, 2, "behind"),  # never migrated
        (1, 2, "behind"),  # migrated by an older release
        (2, 2, "current"),
        (3, 2, "ahead"),  # migrated by a newer release
    ],
)
def test_the_state_compares_what_the_store_applied_with_what_the_adapter_knows(
    applied: int, known: int, state: str
) -> None:
    assert SchemaVersion(applied=applied, known=known).state == state


class VersionedMemory(MemoryStore):
    """A store that reports a schema version (as the SQL and DynamoDB stores do)."""

    def __init__(self, answer: SchemaVersion | Exception) -> None:
        super().__init__()
        self.answer = answer
        self.asked = 0

    async def schema_version(self) -> SchemaVersion:
        self.asked += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_a_store_without_a_versioned_schema_answers_none() -> None:
    memory = MemoryStore()
    assert not isinstance(memory, VersionedSchema)
    assert await schema_version(memory) is None
    assert await schema_version(OffloadingStore(memory, MemoryBlobStore())) is None


async def test_a_versioned_store_answers_itself_and_through_offloading_stores() -> None:
    found = SchemaVersion(applied=1, known=2)
    inner = VersionedMemory(found)
    assert isinstance(inner, VersionedSchema)
    offloading = OffloadingStore(inner, MemoryBlobStore())
    twice = OffloadingStore(offloading, MemoryBlobStore())
    assert isinstance(offloading, VersionedSchema)

    assert await schema_version(inner) == found
    assert await schema_version(offloading) == found
    assert await schema_version(twice) == found
    assert await offloading.schema_version() == found
    assert await twice.schema_version() == found
    assert inner.asked == 5


async def test_an_offloading_store_over_one_without_a_version_refuses_to_make_one_up() -> None:
    offloading = OffloadingStore(MemoryStore(), MemoryBlobStore())
    with pytest.raises(TypeError, match=r"psych_runtime\.ports\.schema_version\(store\)"):
        await offloading.schema_version()


async def test_a_store_that_cannot_be_read_raises_rather_than_answering_none() -> None:
    down = VersionedMemory(StoreUnavailable("the database restarts"))
    with pytest.raises(StoreUnavailable, match="the database restarts"):
        await schema_version(OffloadingStore(down, MemoryBlobStore()))

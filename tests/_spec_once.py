"""What every SQL and DynamoDB store's contract file checks of its spec texts: a version is
read once and written once per store instance (the adapter kit's `SpecTexts`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from psych_core import Store

VERSION = "sha256:s"


async def check_read_once_and_written_once(
    store: Store, forget: Callable[[], Awaitable[None]], fresh: Callable[[], Store]
) -> None:
    """`forget` deletes the version's row behind `store`'s back; `fresh` opens another
    instance of the same store. A version's JSON never changes nor goes away, so `store` asks
    its database once: a worker reads its run's spec at every claim, an app writes it at every
    admission."""
    await store.put_spec(VERSION, "{}")
    assert await store.get_spec(VERSION) == "{}"
    await forget()
    assert await store.get_spec(VERSION) == "{}", "read again"
    await store.put_spec(VERSION, "{}")
    async with fresh() as other:
        assert await other.get_spec(VERSION) is None, "written again"

"""`SpecTexts`: the spec versions a store has written or read, so it asks the database once.

A spec's version is the hash of its canonical JSON, and a version's JSON never changes nor
goes away (`Store.put_spec` leaves a stored version as it is; no call deletes one). A worker
reads its run's spec at every claim and an app writes it at every admission, so without this
each claim costs a round trip for the spec and each admission a write that changes nothing.
What is kept is bounded: past `kept` versions the memory is emptied, and versions still in
use come back at their next read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

SPECS_KEPT = 256
"""The versions a `SpecTexts` keeps before it empties itself."""


class SpecTexts:
    """What one store instance knows of the specs its database holds.

    Args:
        kept: how many versions to keep of each kind (read with their JSON, seen stored).
    """

    def __init__(self, kept: int = SPECS_KEPT) -> None:
        if kept < 1:
            raise ValueError(f"kept must be at least 1, got {kept}")
        self._kept = kept
        self._texts: dict[str, str] = {}
        self._stored: set[str] = set()

    async def put(self, version: str, write: Callable[[], Awaitable[None]]) -> None:
        """`write` the spec unless this store has already seen `version` stored (written or
        read); remembered only once `write` returns, so a write that failed is tried again."""
        if version in self._stored:
            return
        await write()
        self._seen_stored(version)

    async def get(self, version: str, read: Callable[[], Awaitable[str | None]]) -> str | None:
        """The JSON of `version`: the one `read` returned before, else `read`'s answer, kept
        when there is one. A version not found is asked again next time (another process may
        store it meanwhile)."""
        text = self._texts.get(version)
        if text is not None:
            return text
        text = await read()
        if text is not None:
            if len(self._texts) >= self._kept:
                self._texts.clear()
            self._texts[version] = text
            self._seen_stored(version)
        return text

    def _seen_stored(self, version: str) -> None:
        if len(self._stored) >= self._kept:
            self._stored.clear()
        self._stored.add(version)

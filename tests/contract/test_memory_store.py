"""MemoryStore passes the store contract suite: it is the reference every adapter matches."""

from __future__ import annotations

import pytest

from psych_runtime import MemoryStore
from psych_runtime.testing.store_contract import StoreContract

pytestmark = pytest.mark.contract


class TestMemoryStore(StoreContract):
    async def create_store(self) -> MemoryStore:
        return MemoryStore()

"""The store contract suite: one abstract pytest class every `Store` adapter must pass.

Certify an adapter with a few lines::

    from psych_runtime.testing.store_contract import StoreContract
    from my_store import MyStore


    class TestMyStore(StoreContract):
        async def create_store(self) -> MyStore:
            store = MyStore(...)  # fresh: no other test uses or sees into it
            await store.migrate()
            return store

        async def close_store(self, store: MyStore) -> None:  # optional
            await store.close()

The suite is async (pytest-asyncio; it marks its own tests, so strict mode works too) and runs
against a real database: it sleeps through short leases rather than faking a clock, so a store
whose leases follow its database's clock is tested as it runs. What it covers:

- the log: `create_run` and `read` order, idempotent dispatch (per tenant, `IdempotencyConflict`
  for another request), append order and atomicity, seq conflicts, fencing by attempt
  (`LeaseLost` before `Conflict`), re-sent batches written once, unicode round trips;
- claims and leases: oldest runnable first, `AttemptStarted` written by the claim, attempt
  numbers without gaps, two claimers racing (exactly one wins), lease expiry and re-claim,
  renew and release, suspended and finished runs holding no lease, timed waits, ``max_attempts``;
- runs as a whole: tenant isolation on every call, listing pages, deletion, specs, `wait`;
- limits: records and batches at exactly `store.limits` kept, one byte or record more refused
  with `RecordTooLarge`, and nothing written;
- the inbox: signals numbered in commit order, keys single-use (two racing decisions: one
  wins), waiting runs woken, leased runs told through `renew` and `append`, an append that
  suspends or ends refused while entries are unseen (and no signal lost to a racing suspend),
  notices written by appends, `due`, and ``max_attempts`` counting claims since a suspend.

Each part is a class of its own, so an adapter can run part of the suite while it grows
(``class TestMyStore(LeaseContract): ...``); certification is `StoreContract`, all of them.

This module imports pytest: it ships in the ``psych-runtime[testing]`` extra, and the runtime
itself never imports it.
"""

from __future__ import annotations

from psych_runtime.testing._contract_group import GroupCommitContract
from psych_runtime.testing._contract_harness import StoreHarness
from psych_runtime.testing._contract_inbox import InboxContract
from psych_runtime.testing._contract_leases import (
    AttemptLimitContract,
    ClaimContract,
    LeaseContract,
)
from psych_runtime.testing._contract_limits import LimitsContract
from psych_runtime.testing._contract_log import AdmissionContract, AppendContract, UnicodeContract
from psych_runtime.testing._contract_runs import (
    DeletionContract,
    ListingContract,
    SpecContract,
    TenancyContract,
    WaitContract,
)


class StoreContract(
    AdmissionContract,
    AppendContract,
    GroupCommitContract,
    UnicodeContract,
    LimitsContract,
    ClaimContract,
    LeaseContract,
    AttemptLimitContract,
    TenancyContract,
    ListingContract,
    DeletionContract,
    SpecContract,
    WaitContract,
    InboxContract,
):
    """Every test of the store contract. Subclass it and implement `create_store`.

    pytest collects the subclass (name it ``Test...``), never this class itself.
    """


__all__ = [
    "AdmissionContract",
    "AppendContract",
    "AttemptLimitContract",
    "ClaimContract",
    "DeletionContract",
    "GroupCommitContract",
    "InboxContract",
    "LeaseContract",
    "LimitsContract",
    "ListingContract",
    "SpecContract",
    "StoreContract",
    "StoreHarness",
    "TenancyContract",
    "UnicodeContract",
    "WaitContract",
]


def _claim_exports() -> None:
    # The parts report this module as their home: it is the one path users import from.
    for name in __all__:
        globals()[name].__module__ = __name__


_claim_exports()

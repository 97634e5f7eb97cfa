"""`Claim.log` for a run's first claim: record 0 as the store keeps it, decoded; never an error
in the claim when it does not decode (the attempt's read of the log meets that, as before)."""

from __future__ import annotations

import datetime as dt

from psych_core.ports import first_claim_log, record_json
from psych_runtime import AgentSpec, MemoryStore, ModelRef, Scope, dispatch

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="support", model=ModelRef(model="fake"))
TTL = dt.timedelta(seconds=30)


async def test_record_0_decodes_and_what_does_not_decode_is_no_log() -> None:
    store = MemoryStore()
    run_id = await dispatch(store.scoped(SCOPE), SPEC, "hi")
    (record_0,) = await store.read(run_id)
    assert first_claim_log(record_json(record_0)) == (record_0,)
    assert first_claim_log(record_json(record_0).decode()) == (record_0,)
    assert first_claim_log(None) is None
    for broken in (b"", b"{", b'{"run_id": 1}', record_json(record_0)[:-1]):
        assert first_claim_log(broken) is None, broken


async def test_a_first_claim_whose_record_0_does_not_decode_claims_without_a_log() -> None:
    store = MemoryStore()
    run_id = await dispatch(store.scoped(SCOPE), SPEC, "hi")
    store._runs[run_id].log[0] = b'{"not": "a record"}'  # what no writer of ours leaves
    claim = await store.claim("worker-1", TTL)
    assert claim is not None and claim.run_id == run_id
    assert claim.log is None, "the attempt reads its log, and meets the damage there"

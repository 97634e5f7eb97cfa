"""A2A peer connections are pooled per (tenant, peer, credential): two tenants with their own
credential for the same peer URL never share a connection, under concurrency, and no
credential reaches the log."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from psych_runtime import AgentSpec, MemoryStore, ModelRef, Runtime, Scope, Worker, dispatch
from psych_runtime.a2a import A2AHttp, A2APeer
from psych_runtime.adapters import EnvSecretResolver
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.records import ToolCallFinished
from tests.integration._a2a import demo_peer, ledger_lines
from tests.integration._scripted import ByTurn

pytestmark = pytest.mark.timeout(120)

TOKENS = {"PEER_alpha": "tok-alpha-77d0", "PEER_beta": "tok-beta-31aa"}
SPEC = AgentSpec(name="who", model=ModelRef(model="scripted"), tools=(A2APeer(name="peer"),))
RUNS_PER_TENANT = 10


async def test_two_tenants_never_share_a_connection_or_a_credential(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    store = MemoryStore()
    with demo_peer(ledger) as url:
        connection = A2AHttp(
            url=url, headers={"Authorization": "Bearer {credential}"}, credential="PEER_{tenant}"
        )
        runtime = Runtime(
            model=ByTurn([[("peer__whoami", {"message": "who am I?"})] * 2]),
            a2a_peers={"peer": connection},
            secrets=EnvSecretResolver(environ=TOKENS),
            egress=EgressPolicy(allow_loopback=True),
        )
        runs: dict[str, str] = {}
        for i in range(RUNS_PER_TENANT):
            for tenant in ("alpha", "beta"):
                scoped = store.scoped(Scope(tenant=tenant))
                runs[await dispatch(scoped, SPEC, f"who {i}")] = tenant
        worker = Worker(store, runtime, concurrency=8, poll_interval=0.05)
        await worker.run_until_idle()
    seen: collections.Counter[str] = collections.Counter()
    for run_id, tenant in runs.items():
        records = await store.scoped(Scope(tenant=tenant)).read(run_id)
        results = [r.body.result for r in records if isinstance(r.body, ToolCallFinished)]
        # The peer answered each call with the credential it came with; the log holds only
        # the mark of the secret that value is: this tenant's own.
        assert results == [f"Bearer [redacted:PEER_{tenant}]"] * 2, (tenant, results)
        for record in records:
            text = record.model_dump_json()
            assert all(token not in text for token in TOKENS.values())
        seen[tenant] += len(results)
    assert seen == {"alpha": 2 * RUNS_PER_TENANT, "beta": 2 * RUNS_PER_TENANT}
    # Every call the peer saw carried one of the two credentials, as many of each as that
    # tenant's calls; each tenant's card was read with its own credential, once.
    lines = ledger_lines(tmp_path / "ledger")
    calls = collections.Counter(line[1] for line in lines if line[0] == "whoami")
    assert calls == {
        "Bearer_tok-alpha-77d0": 2 * RUNS_PER_TENANT,
        "Bearer_tok-beta-31aa": 2 * RUNS_PER_TENANT,
    }
    cards = collections.Counter(line[1] for line in lines if line[0] == "card")
    assert cards == {"Bearer_tok-alpha-77d0": 1, "Bearer_tok-beta-31aa": 1}

"""MCP sessions are pooled per (tenant, server, credential): two tenants with their own
credential for the same server URL never share a session, under concurrency, and no
credential reaches the log."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from psych_runtime import AgentSpec, MemoryStore, ModelRef, Runtime, Scope, Worker, dispatch
from psych_runtime.adapters import EnvSecretResolver
from psych_runtime.mcp import McpHttp, McpServer
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.records import ToolCallFinished
from tests.integration._mcp import demo_http, ledger_lines
from tests.integration._scripted import ByTurn

pytestmark = pytest.mark.timeout(120)

TOKENS = {"DEMO_alpha": "tok-alpha-5e1f", "DEMO_beta": "tok-beta-9c07"}
SPEC = AgentSpec(name="who", model=ModelRef(model="scripted"), tools=(McpServer(name="web"),))
RUNS_PER_TENANT = 12


async def test_two_tenants_never_share_a_session_or_a_credential(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    store = MemoryStore()
    with demo_http(ledger) as url:
        connection = McpHttp(
            url=url, headers={"Authorization": "Bearer {credential}"}, credential="DEMO_{tenant}"
        )
        runtime = Runtime(
            model=ByTurn([[("web__whoami", {})] * 2]),
            mcp_servers={"web": connection},
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
        # The server answered each call with the credential it came with; the log holds only
        # the mark of the secret that value is: this tenant's own.
        assert results == [{"result": f"Bearer [redacted:DEMO_{tenant}]"}] * 2, (tenant, results)
        for record in records:
            text = record.model_dump_json()
            assert all(token not in text for token in TOKENS.values())
        seen[tenant] += len(results)
    assert seen == {"alpha": 2 * RUNS_PER_TENANT, "beta": 2 * RUNS_PER_TENANT}
    # Every request the server saw carried one of the two credentials, as many of each as
    # that tenant's calls.
    tokens = collections.Counter(line[1] for line in ledger_lines(ledger) if line[0] == "whoami")
    assert tokens == {
        "Bearer_tok-alpha-5e1f": 2 * RUNS_PER_TENANT,
        "Bearer_tok-beta-9c07": 2 * RUNS_PER_TENANT,
    }

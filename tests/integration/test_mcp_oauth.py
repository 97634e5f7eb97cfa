"""OAuth 2.1 for protected MCP servers, against a real authorization server on loopback (built
with the SDK's server-side auth support: `tests.integration.mcp_oauth_server`): client
credentials per tenant, the authorization code flow with PKCE through the application's
redirect port, refresh after a restart, scope step-up, and no token in any record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from psych_runtime import (
    AgentSpec,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Worker,
    dispatch,
    read_log,
    session,
)
from psych_runtime.adapters import EnvSecretResolver
from psych_runtime.mcp import (
    McpAuthorizationRequest,
    McpAuthorizationResponse,
    McpHttp,
    McpOAuth,
    McpServer,
    McpTokenKey,
    MemoryTokenStore,
)
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.records import Record, ToolCallFinished
from psych_runtime.testing import FakeModel
from tests.integration._mcp import ledger_lines, oauth_http
from tests.integration._scripted import ByTurn

pytestmark = pytest.mark.timeout(120)

LOOPBACK = EgressPolicy(allow_loopback=True)
REDIRECT = "http://app.example/oauth/callback"
SECRETS = {"MCP_SECRET_alpha": "s3cret-alpha-71", "MCP_SECRET_beta": "s3cret-beta-24"}
CLIENTS = json.dumps(
    {"svc-alpha": SECRETS["MCP_SECRET_alpha"], "svc-beta": SECRETS["MCP_SECRET_beta"]}
)


def agent() -> AgentSpec:
    return AgentSpec(
        name="protected-user", model=ModelRef(model="fake"), tools=(McpServer(name="vault"),)
    )


def results(records: Sequence[Record]) -> list[Any]:
    return [r.body.result for r in records if isinstance(r.body, ToolCallFinished)]


async def secrets_in(store: MemoryTokenStore) -> list[str]:
    """The access and refresh tokens the store holds now."""
    found: list[str] = []
    for key in store.keys:
        record = await store.load(key)
        tokens = (record or {}).get("tokens") or {}
        found += [tokens[k] for k in ("access_token", "refresh_token") if tokens.get(k)]
    return found


def assert_no_token_in(records: Sequence[Record], tokens: Sequence[str]) -> None:
    assert tokens, "the store should hold tokens to look for"
    for record in records:
        text = record.model_dump_json()
        assert not any(token in text for token in tokens), record


class Person:
    """The application's redirect port, with a person who always consents: opens the
    authorization URL, and hands back what the authorization server redirected to."""

    def __init__(self) -> None:
        self.requests: list[McpAuthorizationRequest] = []

    async def authorize(self, request: McpAuthorizationRequest) -> McpAuthorizationResponse:
        self.requests.append(request)
        async with httpx.AsyncClient() as browser:
            answer = await browser.get(request.url)
        assert answer.status_code in (302, 307), answer.text
        location = answer.headers["location"]
        assert location.startswith(REDIRECT)
        query = parse_qs(urlparse(location).query)
        assert "code" in query, f"the authorization server refused: {location}"
        return McpAuthorizationResponse(
            code=query["code"][0], state=query.get("state", [None])[0], iss=None
        )


class SlowPerson(Person):
    """Consents, after a while."""

    async def authorize(self, request: McpAuthorizationRequest) -> McpAuthorizationResponse:
        await asyncio.sleep(1.5)
        return await super().authorize(request)


class Nobody:
    """A redirect port whose person never comes back."""

    async def authorize(self, request: McpAuthorizationRequest) -> McpAuthorizationResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def service_flow(base: str, tokens: MemoryTokenStore) -> McpHttp:
    """Client credentials: a client per tenant, its secret a secret per tenant."""
    return McpHttp(
        url=f"{base}/mcp",
        oauth=McpOAuth(
            tokens=tokens,
            grant="client_credentials",
            client_id="svc-{tenant}",
            client_secret="MCP_SECRET_{tenant}",
            issuer=base,
            scope="mcp",
        ),
    )


def code_flow(base: str, tokens: MemoryTokenStore, authorizer: Any, **oauth: Any) -> McpHttp:
    return McpHttp(
        url=f"{base}/mcp",
        oauth=McpOAuth(
            tokens=tokens, authorizer=authorizer, redirect_uri=REDIRECT, scope="mcp", **oauth
        ),
    )


async def test_client_credentials_per_tenant_under_concurrency(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    tokens = MemoryTokenStore()
    store = MemoryStore()
    runs: dict[str, str] = {}
    with oauth_http(ledger, DEMO_CLIENTS=CLIENTS) as base:
        runtime = Runtime(
            model=ByTurn([[("vault__whoami", {})] * 2], text="ok"),
            mcp_servers={"vault": service_flow(base, tokens)},
            secrets=EnvSecretResolver(environ=SECRETS),
            egress=LOOPBACK,
        )
        for i in range(6):
            for tenant in ("alpha", "beta"):
                scoped = store.scoped(Scope(tenant=tenant))
                runs[await dispatch(scoped, agent(), f"who {i}")] = tenant
        worker = Worker(store, runtime, concurrency=6, poll_interval=0.05)
        await worker.run_until_idle()
    held = await secrets_in(tokens)
    for run_id, tenant in runs.items():
        records = await store.scoped(Scope(tenant=tenant)).read(run_id)
        # The server saw this tenant's own client on every call.
        assert results(records) == [{"result": f"svc-{tenant} mcp"}] * 2, (tenant, records)
        assert_no_token_in(records, held)
    lines = ledger_lines(ledger)
    grants = [line for line in lines if line[:2] == ["grant", "client_credentials"]]
    # One grant per tenant: its session (and token) is reused across its runs.
    assert sorted(line[2] for line in grants) == ["svc-alpha", "svc-beta"]
    calls = [line[2] for line in lines if line[:2] == ["call", "whoami"]]
    assert sorted(calls) == ["svc-alpha"] * 12 + ["svc-beta"] * 12
    assert sorted(tokens.keys, key=lambda k: k.tenant) == [
        McpTokenKey(tenant="alpha", server="vault"),
        McpTokenKey(tenant="beta", server="vault"),
    ]


async def test_authorization_code_with_pkce_through_the_redirect_port(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    tokens = MemoryTokenStore()
    person = Person()
    model = (
        FakeModel()
        .turn(tool_calls=[("vault__whoami", {})])
        .turn(text="first")
        .turn(tool_calls=[("vault__whoami", {})])
        .turn(text="second")
    )
    with oauth_http(ledger) as base:
        runtime = Runtime(
            model=model, mcp_servers={"vault": code_flow(base, tokens, person)}, egress=LOOPBACK
        )
        async with session(runtime=runtime, scope=Scope(tenant="acme")) as s:
            first = await s.ask(agent(), "who am I?")
            second = await s.ask(agent(), "and now?")
            records = [
                *await read_log(s.store, first.run_id),
                *await read_log(s.store, second.run_id),
            ]
    assert first.status == second.status == "completed"
    # One consent: the second run reused the session (and the token) of the first.
    (asked,) = person.requests
    assert (asked.tenant, asked.server, asked.scope) == ("acme", "vault", "mcp")
    query = parse_qs(urlparse(asked.url).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]
    assert query["redirect_uri"] == [REDIRECT]
    (registered,) = [line[1] for line in ledger_lines(ledger) if line[0] == "register"]
    assert results(records) == [{"result": f"{registered} mcp"}] * 2
    record = await tokens.load(McpTokenKey(tenant="acme", server="vault"))
    assert record is not None and record["client"]["client_id"] == registered
    assert record["tokens"]["refresh_token"]
    assert_no_token_in(records, await secrets_in(tokens))


async def test_a_person_has_longer_than_the_connection_timeout_to_consent(
    tmp_path: Path,
) -> None:
    tokens = MemoryTokenStore()
    model = FakeModel().turn(tool_calls=[("vault__whoami", {})]).turn(text="done")
    with oauth_http(tmp_path / "ledger") as base:
        slow = McpHttp(
            url=f"{base}/mcp",
            timeout=1.0,
            oauth=McpOAuth(
                tokens=tokens,
                authorizer=SlowPerson(),
                redirect_uri=REDIRECT,
                scope="mcp",
                authorize_timeout=10,
            ),
        )
        runtime = Runtime(model=model, mcp_servers={"vault": slow}, egress=LOOPBACK)
        async with session(runtime=runtime, scope=Scope(tenant="acme")) as s:
            view = await s.ask(agent(), "who am I?")
    assert view.status == "completed", view.error


async def test_an_expired_token_is_refreshed_by_a_restarted_worker(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    tokens = MemoryTokenStore()
    person = Person()
    with oauth_http(ledger, DEMO_TOKEN_TTL="2") as base:
        for label in ("before", "after"):
            model = FakeModel().turn(tool_calls=[("vault__whoami", {})]).turn(text=label)
            # A new runtime each time: a worker started afresh, with only the token store.
            runtime = Runtime(
                model=model, mcp_servers={"vault": code_flow(base, tokens, person)}, egress=LOOPBACK
            )
            async with session(runtime=runtime, scope=Scope(tenant="acme")) as s:
                view = await s.ask(agent(), "who am I?")
                records = await read_log(s.store, view.run_id)
            assert view.status == "completed", view.error
            assert results(records)[0]["result"].endswith(" mcp")
            assert_no_token_in(records, await secrets_in(tokens))
            if label == "before":
                await asyncio.sleep(2.5)  # the access token expires; the refresh token lives
    grants = [line[:2] for line in ledger_lines(ledger) if line[0] == "grant"]
    assert grants == [["grant", "code"], ["grant", "refresh"]]
    assert len(person.requests) == 1  # nobody was asked again


async def test_a_call_needing_more_scope_steps_up_and_runs_once(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    tokens = MemoryTokenStore()
    person = Person()
    model = FakeModel().turn(tool_calls=[("vault__charge", {"cents": 250})]).turn(text="paid")
    with oauth_http(ledger) as base:
        runtime = Runtime(
            model=model, mcp_servers={"vault": code_flow(base, tokens, person)}, egress=LOOPBACK
        )
        async with session(runtime=runtime, scope=Scope(tenant="acme")) as s:
            view = await s.ask(agent(), "pay")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed", view.error
    assert [r.scope for r in person.requests] == ["mcp", "mcp write"]
    (result,) = results(records)
    assert result["result"].startswith("charged 250 for ")
    lines = ledger_lines(ledger)
    assert [line[0] for line in lines if line[0] in ("step-up", "call")] == ["step-up", "call"]
    assert [line[:2] for line in lines if line[0] == "call"] == [["call", "charge"]]
    record = await tokens.load(McpTokenKey(tenant="acme", server="vault"))
    assert record is not None and set(record["tokens"]["scope"].split()) == {"mcp", "write"}
    assert_no_token_in(records, await secrets_in(tokens))


async def test_client_credentials_step_up_asks_for_the_wider_scope(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    tokens = MemoryTokenStore()
    model = FakeModel().turn(tool_calls=[("vault__charge", {"cents": 5})]).turn(text="paid")
    with oauth_http(ledger, DEMO_CLIENTS=CLIENTS) as base:
        runtime = Runtime(
            model=model,
            mcp_servers={"vault": service_flow(base, tokens)},
            secrets=EnvSecretResolver(environ=SECRETS),
            egress=LOOPBACK,
        )
        async with session(runtime=runtime, scope=Scope(tenant="beta")) as s:
            view = await s.ask(agent(), "pay")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed", view.error
    assert results(records) == [{"result": "charged 5 for svc-beta"}]
    grants = [line[3] for line in ledger_lines(ledger) if line[0] == "grant"]
    assert grants == ["mcp", "mcp,write"]
    assert_no_token_in(records, await secrets_in(tokens))


async def test_consent_that_never_comes_fails_the_run_naming_server_and_tenant(
    tmp_path: Path,
) -> None:
    tokens = MemoryTokenStore()
    model = FakeModel().turn(text="never asked")
    with oauth_http(tmp_path / "ledger") as base:
        runtime = Runtime(
            model=model,
            mcp_servers={"vault": code_flow(base, tokens, Nobody(), authorize_timeout=0.5)},
            egress=LOOPBACK,
        )
        async with session(runtime=runtime, scope=Scope(tenant="acme")) as s:
            view = await s.ask(agent(), "who am I?")
    assert view.status == "failed"
    assert view.error is not None
    assert "MCP server 'vault'" in view.error and "'acme'" in view.error, view.error
    assert model.requests == []
    assert tokens.keys == () or (await tokens.load(tokens.keys[0]) or {}).get("tokens") is None

"""`EnvSecretResolver`, the `Redactor`, the egress policy's address rules, and redaction in a
run driven by `FakeModel` (no network)."""

from __future__ import annotations

import ipaddress
from decimal import Decimal

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    EgressPolicy,
    EnvSecretResolver,
    ModelRef,
    PriceTable,
    Usage,
)
from psych_runtime.errors import ModelError
from psych_runtime.model.egress import Redactor, address_kind
from psych_runtime.ports import SecretResolver
from psych_runtime.records import (
    ModelCallFailed,
    RunFailed,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallStarted,
)
from psych_runtime.testing.fake_model import FakeModel

TOKEN = "tok-ABCDEF-123456"

# -- EnvSecretResolver -------------------------------------------------------------------------


async def test_a_named_resolver_serves_and_knows_only_its_names() -> None:
    env = {"A_KEY": "value-of-a", "B_KEY": "value-of-b", "PATH": "/usr/bin"}
    secrets = EnvSecretResolver(["A_KEY", "MISSING"], environ=env)
    assert isinstance(secrets, SecretResolver)
    assert secrets.known() == {"A_KEY": "value-of-a"}  # known before any request asked
    assert await secrets.resolve("A_KEY") == "value-of-a"
    assert await secrets.resolve("PATH") is None
    assert await secrets.resolve("MISSING") is None
    assert repr(secrets) == "EnvSecretResolver(names=('A_KEY', 'MISSING'))"


async def test_an_open_resolver_knows_what_it_has_served() -> None:
    secrets = EnvSecretResolver(environ={"A_KEY": "value-of-a", "EMPTY": ""})
    assert secrets.known() == {}
    assert await secrets.resolve("A_KEY") == "value-of-a"
    assert await secrets.resolve("EMPTY") is None
    assert secrets.known() == {"A_KEY": "value-of-a"}
    assert "value-of-a" not in repr(secrets)


# -- Redactor ------------------------------------------------------------------------------------


def test_the_redactor_replaces_every_known_value_longest_first() -> None:
    env = {"SHORT": "abcd1234", "LONG": "abcd1234-and-more", "TINY": "x"}
    redactor = Redactor(EnvSecretResolver(["SHORT", "LONG", "TINY"], environ=env))
    text = "a abcd1234-and-more b abcd1234 c x"
    # TINY is too short to redact: it would hide every "x" and protect nothing.
    assert redactor.text(text) == "a [redacted:LONG] b [redacted:SHORT] c x"
    assert redactor.json({"abcd1234": [1, "abcd1234", {"n": 12}], "ok": True}) == {
        "[redacted:SHORT]": [1, "[redacted:SHORT]", {"n": 12}],
        "ok": True,
    }


def test_a_number_that_spells_a_secret_is_redacted() -> None:
    redactor = Redactor(EnvSecretResolver(["PIN"], environ={"PIN": "918273"}))
    assert redactor.json({"pin": 918273, "other": 5}) == {"pin": "[redacted:PIN]", "other": 5}


def test_without_secrets_nothing_changes() -> None:
    body = ToolCallFinished(call_id="1.0", result={"a": TOKEN})
    assert Redactor().body(body) is body
    assert Redactor(EnvSecretResolver(environ={})).text(TOKEN) == TOKEN


def test_tool_and_error_texts_are_redacted() -> None:
    # Every other body type, and every encoding: test_redaction_of_bodies.py and
    # test_redaction_encodings.py.
    redactor = Redactor(EnvSecretResolver(["T"], environ={"T": TOKEN}))
    assert redactor.body(ToolCallFailed(call_id="1.0", reason="error", error=TOKEN)).error == (
        "[redacted:T]"
    )
    assert redactor.body(ModelCallFailed(model="m", error=f"x {TOKEN}")).error == "x [redacted:T]"
    assert redactor.body(RunFailed(reason="r", error=TOKEN)).error == "[redacted:T]"
    started = ToolCallStarted(call_id="1.0", name="t")
    assert redactor.body(started) is started


# -- redaction in a run, with the fake model ---------------------------------------------------


async def leak() -> dict[str, str]:
    """Return the token, as a careless tool might."""
    return {"token": TOKEN}


async def test_a_session_with_secrets_redacts_tool_results_and_model_errors() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("leak", {})])
        .fail(ModelError(f"provider said: bad key {TOKEN}", model="fake", status=401))
    )
    secrets = EnvSecretResolver(["TOKEN"], environ={"TOKEN": TOKEN})
    spec = AgentSpec(name="a", model=ModelRef(model="fake"), tools=(CodeTool(name="leak"),))
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=model, tools=[leak], secrets=secrets)
    ) as s:
        view = await s.ask(spec, "go")
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert all(TOKEN not in record.model_dump_json() for record in log)
    assert view.error is not None and "[redacted:TOKEN]" in view.error
    # The model was shown the redacted result, never the token.
    assert TOKEN not in repr(model.requests[-1].messages)


# -- prices passed to the session --------------------------------------------------------------


async def test_a_session_prices_calls_the_model_client_did_not_price() -> None:
    model = FakeModel().turn(text="Hi.", usage=Usage(input=1000, output=500))
    prices = PriceTable({"fake-model": {"input": "1", "output": "2"}})
    spec = AgentSpec(name="a", model=ModelRef(model="fake-model"))
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=model, prices=prices)
    ) as s:
        view = await s.ask(spec, "hi")
        report = await psych_runtime.report(s.store, view.run_id)
    assert report.totals.cost is not None
    assert (report.totals.cost.amount, report.totals.cost.source) == (Decimal("0.002"), "override")
    assert report.totals.unpriced_calls == 0


# -- the egress policy's address rules ---------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.0.1", "private"),
        ("100.64.0.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link_local"),
        ("fe80::1", "link_local"),
        ("0.0.0.0", "reserved"),
        ("224.0.0.1", "reserved"),
        ("240.0.0.1", "reserved"),
        ("93.184.216.34", "public"),
        ("2606:4700:4700::1111", "public"),
    ],
)
def test_addresses_are_classified(address: str, kind: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) == kind


def test_the_policy_refuses_all_but_public_addresses_unless_told() -> None:
    def refused(policy: EgressPolicy, address: str) -> bool:
        return policy.address_refusal(ipaddress.ip_address(address)) is not None

    strict = EgressPolicy()
    assert [
        a for a in ("8.8.8.8", "127.0.0.1", "10.0.0.1", "169.254.169.254") if refused(strict, a)
    ] == [
        "127.0.0.1",
        "10.0.0.1",
        "169.254.169.254",
    ]
    loose = EgressPolicy(allow_loopback=True, allow_private=True)
    assert not refused(loose, "127.0.0.1")
    assert not refused(loose, "10.0.0.1")
    assert refused(loose, "169.254.169.254")  # only an explicit network lets that through
    assert not refused(EgressPolicy(allow_networks=("169.254.0.0/16",)), "169.254.169.254")


def test_host_patterns() -> None:
    policy = EgressPolicy(allow_hosts=("API.Example.com.", "*.models.example"))
    assert policy.host_allowed("api.example.com")
    assert policy.host_allowed("eu.models.example")
    assert policy.host_allowed("a.b.models.example")
    assert not policy.host_allowed("models.example")
    assert not policy.host_allowed("example.com")
    assert not policy.host_allowed("api.example.com.evil.test")
    assert EgressPolicy().host_allowed("anything.test")


async def test_a_signal_waits_in_the_inbox_with_the_stores_secrets_redacted() -> None:
    key = "sk-live-0123456789abcdef"
    secrets = psych_runtime.EnvSecretResolver(["API_KEY"], environ={"API_KEY": key})
    store = psych_runtime.MemoryStore()
    spec = psych_runtime.AgentSpec(name="ops", model=psych_runtime.ModelRef(model="fake"))
    for resolver, expected in ((secrets, "[redacted:API_KEY]"), (None, key)):
        scoped = store.scoped(psych_runtime.Scope(tenant="acme"), secrets=resolver)
        run_id = await psych_runtime.dispatch(scoped, spec, f"use {key}")
        await psych_runtime.resume(scoped, run_id, {"token": key, "note": f"the key is {key}"})
        await psych_runtime.interrupt(scoped, run_id, f"also {key}")
        [resumed, message] = await store.signals(run_id)
        admitted = (await psych_runtime.read_log(scoped, run_id))[0].body
        shown = [resumed.signal.model_dump_json(), message.signal.model_dump_json()]
        assert all(expected in text for text in shown), shown
        assert expected in admitted.model_dump_json()
        # Without a resolver nothing can be redacted: the check above can fail.
        assert (key in " ".join(shown)) is (resolver is None)

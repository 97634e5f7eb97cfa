"""Secret values never reach the log: not from a tool's result, a tool's error, nor the model's;
not raw, and not in any common encoding; nor a report, a status, a stream, an exception or a
log line."""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from pydantic import BaseModel

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    EgressPolicy,
    EnvSecretResolver,
    MemoryStore,
    ModelRef,
    OpenAIChatClient,
    Runtime,
    Scope,
    WaitFor,
    Worker,
)
from psych_runtime.errors import ModelError, NotAwaitingApproval
from psych_runtime.ports import Store
from psych_runtime.records import (
    ModelCallFailed,
    RunFailed,
    SignalReceived,
    ToolCallFailed,
    ToolCallFinished,
)
from psych_runtime.testing.fake_model import FakeModel
from tests._postgres import connect, drop_schema, new_schema, test_dsn
from tests.integration._chat_server import ChatServer, completion, error, serve, tool_call

API_KEY = "sk-live-4c1d2b3a5e6f7081928374655"
DB_PASSWORD = "hunter2-correct-horse-battery"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with serve() as running:
        yield running


def read_config() -> dict[str, object]:
    """The service's configuration, as a careless tool might return it."""
    return {
        "host": "db.internal",
        "password": DB_PASSWORD,
        "dsns": [f"postgres://app:{DB_PASSWORD}@db.internal/app"],
        DB_PASSWORD: "even as a key",
    }


def call_billing() -> str:
    """Ask the billing API, whose error quotes the key it was sent."""
    raise PermissionError(f"billing API refused key {API_KEY}")


async def test_a_run_leaves_no_trace_of_a_secret_in_any_record(server: ChatServer) -> None:
    secrets = EnvSecretResolver(
        ["OPENAI_API_KEY", "DB_PASSWORD"],
        environ={"OPENAI_API_KEY": API_KEY, "DB_PASSWORD": DB_PASSWORD},
    )
    server.reply(
        completion(
            tool_calls=[tool_call("read_config", {}, "a"), tool_call("call_billing", {}, "b")]
        ),
        error(401, f"Incorrect API key provided: {API_KEY}. You can find your key at ..."),
    )
    spec = AgentSpec(
        name="ops",
        model=ModelRef(model="gpt-test"),
        tools=(CodeTool(name="read_config"), CodeTool(name="call_billing")),
    )
    async with (
        OpenAIChatClient(
            server.base_url, egress=EgressPolicy(allow_loopback=True), secrets=secrets
        ) as client,
        psych_runtime.session(
            runtime=psych_runtime.Runtime(
                model=client, tools=[read_config, call_billing], secrets=secrets
            )
        ) as s,
    ):
        view = await s.ask(spec, "check the config and the billing")
        log = await psych_runtime.read_log(s.store, view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)

    # The key did reach the server, where it belongs ...
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    # ... and nothing of either secret is in any record, nor in the report.
    for record in log:
        text = record.model_dump_json()
        assert API_KEY not in text, record
        assert DB_PASSWORD not in text, record
    assert API_KEY not in report.model_dump_json()
    assert DB_PASSWORD not in report.model_dump_json()

    [finished] = [r.body for r in log if isinstance(r.body, ToolCallFinished)]
    assert finished.result == {
        "host": "db.internal",
        "password": "[redacted:DB_PASSWORD]",
        "dsns": ["postgres://app:[redacted:DB_PASSWORD]@db.internal/app"],
        "[redacted:DB_PASSWORD]": "even as a key",
    }
    [tool_failed] = [r.body for r in log if isinstance(r.body, ToolCallFailed)]
    assert tool_failed.error == "PermissionError: billing API refused key [redacted:OPENAI_API_KEY]"
    [model_failed] = [r.body for r in log if isinstance(r.body, ModelCallFailed)]
    assert "Incorrect API key provided: [redacted:OPENAI_API_KEY]." in model_failed.error
    run_failed = log[-1].body
    assert isinstance(run_failed, RunFailed)
    assert "[redacted:OPENAI_API_KEY]" in run_failed.error
    assert view.status == "failed"

    # The model never saw the password either: the conversation is read from the log.
    second_request = str(server.requests[1].body)
    assert DB_PASSWORD not in second_request
    assert "[redacted:DB_PASSWORD]" in second_request


# -- every spelling, everywhere ----------------------------------------------------------------

SECRET = "sk-live/\"w\u00f6 rd+'42?~>x"
"""A key with a slash, quotes, a non-ASCII letter, a space, a plus and bytes whose base64 has
a ``+``: each encoding below spells it differently."""
PIN = "918273"
SECRETS = {"API_KEY": SECRET, "PIN": PIN}
SCOPE = Scope(tenant="acme")


def lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


def spellings(secret: str) -> dict[str, str]:
    """The secret raw and in each encoding a log, an error or a URL may carry it in."""
    data = secret.encode()
    standard = base64.b64encode(data).decode()
    url_safe = base64.urlsafe_b64encode(data).decode()
    return {
        "raw": secret,
        "JSON": json.dumps(secret)[1:-1],
        "JSON, UTF-8": json.dumps(secret, ensure_ascii=False)[1:-1],
        "bytes literal": repr(data)[2:-1],
        "quote": quote(secret),
        "quote, safe=''": quote(secret, safe=""),
        "quote, lower hex": lower_hex(quote(secret)),
        "quote_plus": quote_plus(secret),
        "quote_plus, lower hex": lower_hex(quote_plus(secret)),
        "base64": standard,
        "base64, unpadded": standard.rstrip("="),
        "base64url": url_safe,
        "base64url, unpadded": url_safe.rstrip("="),
        "Basic credential": base64.b64encode(b"ops:" + data).decode(),
    }


SPELLINGS = spellings(SECRET)
PAYLOAD = "; ".join(f"{name}: {value}" for name, value in SPELLINGS.items()) + f"; pin: {PIN}"
"""What the input, the model, the tools, the approver and the callback all say."""
PROBES = {
    **{f"API_KEY {name}": value for name, value in SPELLINGS.items()},
    **{f"API_KEY {name}, in JSON": json.dumps(value)[1:-1] for name, value in SPELLINGS.items()},
    "PIN": PIN,
}


def leaks(where: str, found: object) -> list[str]:
    """Each probe found in `found` (a model, a record, a text, or a list of them)."""
    texts: list[str] = []

    def collect(value: object) -> None:
        match value:
            case BaseModel():
                texts.append(value.model_dump_json())
                collect(value.model_dump(mode="json"))
            case str():
                texts.append(value)
            case dict():
                for key, item in value.items():
                    collect(key)
                    collect(item)
            case list() | tuple():
                for item in value:
                    collect(item)
            case int() | float():
                texts.append(str(value))

    collect(found)
    return sorted(
        {f"{where}: {name}" for name, probe in PROBES.items() for text in texts if probe in text}
    )


@pytest.fixture(params=["memory", "postgres"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    from psych_store_postgres import PostgresStore

    (await connect()).terminate()  # fails at once, saying how to start the server
    schema = new_schema("secrets")
    try:
        async with PostgresStore(test_dsn(), schema=schema, max_size=4) as postgres:
            await postgres.migrate()
            yield postgres
    finally:
        await drop_schema(schema)


def test_each_spelling_of_the_test_secret_is_a_different_text() -> None:
    # Else an encoding would be checked only by the check of another.
    assert len(set(SPELLINGS.values())) == len(SPELLINGS)


async def test_no_spelling_of_a_secret_reaches_a_record_a_reading_an_exception_or_a_log_line(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="psych_runtime")
    secrets = EnvSecretResolver(list(SECRETS), environ=SECRETS)
    tools_were_given: list[str] = []

    def echo(note: str) -> dict[str, Any]:
        """Echo the note, with the key, as a careless tool might."""
        tools_were_given.append(note)
        return {"echo": note, "config": PAYLOAD, "pin": int(PIN), PAYLOAD: "as a key"}

    def explode(note: str) -> str:
        """Fail, quoting the key."""
        raise RuntimeError(f"upstream refused {PAYLOAD}")

    def send(note: str) -> str:
        """Send the note (needs approval)."""
        tools_were_given.append(note)
        return "sent"

    def wait_for_callback() -> WaitFor:
        """Wait for the callback."""
        return WaitFor(note="the provider's callback")

    spec = AgentSpec(
        name="ops",
        model=ModelRef(model="fake"),
        tools=(
            CodeTool(name="echo"),
            CodeTool(name="explode"),
            CodeTool(name="send", requires_approval=True),
            CodeTool(name="wait_for_callback"),
        ),
    )
    model = (
        FakeModel()
        .turn(
            text=f"I was told {PAYLOAD}",
            tool_calls=[("echo", {"note": PAYLOAD}), ("explode", {"note": PAYLOAD})],
        )
        .turn(text=f"Sending {PAYLOAD}", tool_calls=[("send", {"note": PAYLOAD})])
        .turn(tool_calls=[("wait_for_callback", {})])
        .fail(ModelError(f"provider said: bad key {PAYLOAD}", model="fake", status=401))
    )
    scoped = store.scoped(SCOPE, secrets=secrets)
    worker = Worker(
        store, Runtime(model=model, tools=[echo, explode, send, wait_for_callback], secrets=secrets)
    )
    raised: list[BaseException] = []

    run_id = await psych_runtime.dispatch(scoped, spec, f"please use {PAYLOAD}")
    await worker.run_until_idle()
    waiting = await psych_runtime.status(scoped, run_id)
    assert waiting.waiting == "approval", waiting
    [call_id] = waiting.waiting_for
    await psych_runtime.interrupt(scoped, run_id, f"and also {PAYLOAD}")
    await psych_runtime.approve(
        scoped,
        run_id,
        call_id,
        by="ana",
        note=f"fine, {PAYLOAD}",
        arguments={"note": f"edited {PAYLOAD}"},
    )
    with pytest.raises(NotAwaitingApproval) as twice:
        await psych_runtime.approve(scoped, run_id, call_id, by="bo", note=PAYLOAD)
    raised.append(twice.value)
    await worker.run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).waiting == "external"
    await psych_runtime.resume(scoped, run_id, {"callback": PAYLOAD, "pin": int(PIN)})
    await worker.run_until_idle()

    log = await psych_runtime.read_log(scoped, run_id)
    report = await psych_runtime.report(scoped, run_id)
    final = await psych_runtime.status(scoped, run_id)
    streamed = [record async for record in psych_runtime.stream(scoped, run_id, poll=0.05)]
    assert final.status == "failed" and isinstance(log[-1].body, RunFailed)
    assert {record.body.type for record in log} >= {
        "run_admitted",
        "model_call_finished",
        "tool_call_finished",
        "tool_call_failed",
        "approval_decided",
        "signal_received",
        "model_call_failed",
        "run_failed",
    }
    signals = {r.body.signal.kind for r in log if isinstance(r.body, SignalReceived)}
    assert signals >= {"user_input", "resume"}
    assert caplog.records, "the worker logged nothing: the log-line check would prove nothing"
    # The tools ran, with the arguments as recorded: the send with the approver's edit.
    assert len(tools_were_given) == 2 and tools_were_given[1].startswith("edited ")

    inbox = await store.signals(run_id)
    assert {entry.signal.kind for entry in inbox} >= {"approve", "user_input", "resume"}
    found = [
        *leaks("input", log[0].body),
        *[leak for entry in inbox for leak in leaks(f"inbox entry {entry.number}", entry)],
        *[
            leak
            for record in log
            for leak in leaks(f"seq {record.seq} ({record.body.type})", record)
        ],
        *leaks("report", report),
        *leaks("status", final),
        *[leak for record in streamed for leak in leaks(f"streamed seq {record.seq}", record)],
        *[leak for exc in raised for leak in leaks(type(exc).__name__, str(exc))],
        *[
            leak
            for line in caplog.records
            for leak in leaks(f"log {line.name}", line.getMessage() + (line.exc_text or ""))
        ],
        *leaks("what the model was shown", repr(model.requests)),
        *leaks("what the tools were given", tools_were_given),
    ]
    assert found == []
    # The records say where each secret was: the model's reply, the approval, the callback.
    assert "[redacted:API_KEY]" in log[0].body.model_dump_json()
    assert sum("[redacted:API_KEY]" in record.model_dump_json() for record in log) >= 8
    assert "[redacted:PIN]" in json.dumps([r.body.model_dump(mode="json") for r in log])


async def test_a_key_read_with_its_newline_is_redacted_from_the_http_clients_header_error(
    server: ChatServer,
) -> None:
    # A key read from a file keeps its newline; httpx refuses the header and quotes its bytes,
    # so the value appears escaped (``\n``), never as itself.
    key = "sk-from-a-file-5e6f7a8b9c0d\n"
    secrets = EnvSecretResolver(["OPENAI_API_KEY"], environ={"OPENAI_API_KEY": key})
    spec = AgentSpec(name="ops", model=ModelRef(model="gpt-test"))
    async with (
        OpenAIChatClient(
            server.base_url, egress=EgressPolicy(allow_loopback=True), secrets=secrets
        ) as client,
        psych_runtime.session(runtime=psych_runtime.Runtime(model=client, secrets=secrets)) as s,
    ):
        view = await s.ask(spec, "hello")
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "failed"
    spelled = repr(key.encode())[2:-1]
    assert spelled == "sk-from-a-file-5e6f7a8b9c0d\\n"
    failures = [r.body for r in log if isinstance(r.body, ModelCallFailed)]
    assert failures
    for record in log:
        assert spelled not in record.model_dump_json() and key.strip() not in str(record), record
    assert any("b'Bearer [redacted:OPENAI_API_KEY]'" in failed.error for failed in failures)
    assert server.requests == []  # refused before anything was sent

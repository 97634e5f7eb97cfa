"""Secret values never reach the log: not from a tool's result, a tool's error, nor the model's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    EgressPolicy,
    EnvSecretResolver,
    ModelCallFailed,
    ModelRef,
    OpenAIChatClient,
    RunFailed,
    ToolCallFailed,
    ToolCallFinished,
)
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
        psych_runtime.session(client, tools=[read_config, call_billing], secrets=secrets) as s,
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

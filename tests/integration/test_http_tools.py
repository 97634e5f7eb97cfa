"""Http tools against a real HTTP server on 127.0.0.1, through the egress seam."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    EgressPolicy,
    EnvSecretResolver,
    HttpTool,
    MemoryStore,
    ModelRef,
    Report,
    Runtime,
    Scope,
    ToolCallReport,
    Worker,
)
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import Record
from psych_runtime.testing.fake_model import FakeModel, ScriptedCall
from psych_runtime.tools import ToolContext, ToolOutcomeUnknown, ToolRaised
from psych_runtime.tools._http import HttpTools
from tests.integration._http_server import Server, serve

SECRET = "tok-live-9f8e7d6c5b4a3f2e"
LOOPBACK = EgressPolicy(allow_loopback=True)


@pytest.fixture
def server() -> Iterator[Server]:
    with serve() as running:
        yield running


def spec_of(*tools: HttpTool) -> AgentSpec:
    return AgentSpec(name="ops", model=ModelRef(model="fake"), tools=tools)


async def run_calls(
    tools: tuple[HttpTool, ...],
    calls: list[ScriptedCall],
    *,
    egress: EgressPolicy | None = LOOPBACK,
    secrets: EnvSecretResolver | None = None,
) -> tuple[Report, list[Record], FakeModel]:
    """One run that makes `calls` (in one turn) and then answers; its report, log and model."""
    model = FakeModel().turn(tool_calls=calls).turn(text="done")
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=model, secrets=secrets, egress=egress)
    ) as s:
        view = await s.ask(spec_of(*tools), "go")
        assert view.status == "completed", view.error
        report = await psych_runtime.report(s.store, view.run_id)
        log = await psych_runtime.read_log(s.store, view.run_id)
    return report, log, model


def only(report: Report) -> ToolCallReport:
    [call] = report.tool_calls
    return call


async def test_path_and_query_parameters_are_filled_in_and_encoded(server: Server) -> None:
    tool = HttpTool(
        name="get_order",
        url=f"{server.base}/orders/{{order_id}}?expand={{expand}}&limit={{limit}}&v=2",
        parameters={
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "expand": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1},
            },
            "required": ["order_id"],
        },
        safe_to_retry=True,
    )
    report, _log, _model = await run_calls(
        (tool,),
        [
            ("get_order", {"order_id": "A 1?x#y", "expand": "lines & notes", "limit": 5}),
            ("get_order", {"order_id": "B2"}),
        ],
    )
    first, second = report.tool_calls
    assert first.outcome == "succeeded"
    assert isinstance(first.result, dict)
    # " ", "?" and "#" stay inside the one path segment; the query keeps its literal pair.
    assert first.result["path"] == "/orders/A%201%3Fx%23y"
    assert first.result["query"] == {"expand": ["lines & notes"], "limit": ["5"], "v": ["2"]}
    # The two calls run at once, so the server may see them in either order.
    assert "/orders/A%201%3Fx%23y" in [request.path for request in server.requests]
    # Optional query arguments left out drop their pairs; literal pairs stay.
    assert isinstance(second.result, dict)
    assert second.result["query"] == {"v": ["2"]}


async def test_a_post_sends_the_other_arguments_as_a_json_body(server: Server) -> None:
    tool = HttpTool(
        name="create_order",
        method="POST",
        url=f"{server.base}/orders/{{shop}}",
        parameters={
            "type": "object",
            "properties": {
                "shop": {"type": "string"},
                "sku": {"type": "string"},
                "quantity": {"type": "integer"},
            },
            "required": ["shop", "sku", "quantity"],
            "additionalProperties": False,
        },
    )
    report, _log, _model = await run_calls(
        (tool,), [("create_order", {"shop": "north", "sku": "X-1", "quantity": 3})]
    )
    result = only(report).result
    assert isinstance(result, dict)
    assert result["method"] == "POST"
    assert result["body"] == {"sku": "X-1", "quantity": 3}
    assert server.requests[0].headers["content-type"] == "application/json"


async def test_a_secret_header_is_sent_and_never_recorded(server: Server) -> None:
    secrets = EnvSecretResolver(["BILLING_TOKEN"], environ={"BILLING_TOKEN": SECRET})
    tool = HttpTool(
        name="get_order",
        url=f"{server.base}/orders/{{order_id}}",
        headers={"Authorization": "Bearer {BILLING_TOKEN}", "Accept": "application/json"},
    )
    report, log, model = await run_calls(
        (tool,), [("get_order", {"order_id": "A1"})], secrets=secrets
    )
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    # The server echoed the header back: the value is redacted before it is recorded.
    result = only(report).result
    assert isinstance(result, dict)
    assert result["authorization"] == "Bearer [redacted:BILLING_TOKEN]"
    for record in log:
        assert SECRET not in record.model_dump_json(), f"seq {record.seq} holds the secret"
    for request in model.requests:
        assert SECRET not in repr(request)


async def test_404_and_500_come_back_as_readable_error_results(server: Server) -> None:
    tool = HttpTool(
        name="get_status",
        url=f"{server.base}/status/{{code}}",
        parameters={
            "type": "object",
            "properties": {"code": {"type": "integer"}},
            "required": ["code"],
        },
    )
    report, _log, model = await run_calls(
        (tool,), [("get_status", {"code": 404}), ("get_status", {"code": 500})]
    )
    missing, broken = report.tool_calls
    for call, code, status in (
        (missing, 404, "HTTP 404 Not Found"),
        (broken, 500, "HTTP 500 Internal Server Error"),
    ):
        assert call.outcome == "failed" and call.reason == "error"
        assert call.error is not None
        assert call.error.startswith(f"{status} from GET {server.base}/status/{code}: status")
        assert "details details" in call.error
        # The body is bounded: the server sent about 4.8 KB.
        assert "[the body goes on past 2048 bytes]" in call.error
        assert len(call.error) < 2048 + 300
    shown = {m.call_id: m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)}
    assert [m.is_error for m in shown.values()] == [True, True]
    # Results are answered as they arrive; the 404 is the first call's, whenever it came.
    first_call = report.tool_calls[0].call_id
    assert shown[first_call].content.startswith("Error (error): HTTP 404 Not Found from GET")


async def test_a_response_above_the_limit_is_cut_with_a_note(server: Server) -> None:
    tool = HttpTool(
        name="download",
        url=f"{server.base}/bytes/{{size}}",
        max_response_bytes=1000,
        safe_to_retry=True,
    )
    report, _log, _model = await run_calls(
        (tool,), [("download", {"size": "5000"}), ("download", {"size": "1000"})]
    )
    cut, whole = report.tool_calls
    assert isinstance(cut.result, str) and isinstance(whole.result, str)
    body, _, note = cut.result.partition("\n")
    assert body == "x" * 1000
    assert note.startswith("[cut: the response is longer than 1000 bytes")
    assert whole.result == "x" * 1000


async def test_loopback_is_refused_unless_the_egress_policy_allows_it(server: Server) -> None:
    tool = HttpTool(name="get_order", url=f"{server.base}/orders/{{order_id}}")
    report, _log, _model = await run_calls(
        (tool,), [("get_order", {"order_id": "A1"})], egress=None
    )
    call = only(report)
    assert call.outcome == "failed" and call.reason == "error"
    assert call.error is not None and "loopback" in call.error
    assert "allow_loopback=True" in call.error
    assert server.requests == [], "nothing reached the server"


async def test_each_tool_reaches_only_its_own_host(server: Server) -> None:
    # The app's policy allows localhost only; the tool's declaration adds 127.0.0.1 for it.
    policy = EgressPolicy(allow_hosts=("localhost",), allow_loopback=True)
    tool = HttpTool(name="get_order", url=f"{server.base}/orders/{{order_id}}")
    report, _log, _model = await run_calls(
        (tool,), [("get_order", {"order_id": "A1"})], egress=policy
    )
    assert only(report).outcome == "succeeded"


async def test_invalid_arguments_are_refused_before_anything_is_sent(server: Server) -> None:
    tool = HttpTool(
        name="get_order",
        url=f"{server.base}/orders/{{order_id}}?limit={{limit}}",
        parameters={
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "pattern": "^[A-Z][0-9]+$"},
                "limit": {"type": "integer", "maximum": 50},
            },
            "required": ["order_id"],
            "additionalProperties": False,
        },
    )
    report, _log, _model = await run_calls(
        (tool,), [("get_order", {"order_id": "a-1", "limit": 500, "extra": True})]
    )
    call = only(report)
    assert (call.outcome, call.reason) == ("failed", "invalid_arguments")
    assert call.error is not None
    for problem in ("order_id: does not match", "limit: more than the maximum 50", "extra:"):
        assert problem in call.error
    assert server.requests == []


@pytest.mark.parametrize(
    "value",
    [".", "..", "", "a/b", "a\\b", "%2e%2e", "%2F", "%252e%252E", "..%2f..%2fadmin"],
)
async def test_a_path_argument_that_is_not_one_segment_is_refused_and_nothing_is_sent(
    server: Server, value: str
) -> None:
    # /users/{id}/profile with id=".." would be /profile: a path argument fills exactly one
    # segment, and servers decode %2F and resolve %2E%2E, so such values are refused.
    tool = HttpTool(name="profile", url=f"{server.base}/orders/{{id}}/profile")
    report, _log, model = await run_calls((tool,), [("profile", {"id": value})])
    call = only(report)
    assert (call.outcome, call.reason) == ("failed", "invalid_arguments")
    assert call.error is not None and f"id: {value!r} " in call.error
    assert "path" in call.error
    assert server.requests == []
    shown = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert "id: " in shown[0].content, "the model is told what to fix"


async def test_placeholders_that_together_make_a_dot_segment_are_refused(server: Server) -> None:
    tool = HttpTool(name="file", url=f"{server.base}/orders/{{name}}{{ext}}")
    report, _log, _model = await run_calls((tool,), [("file", {"name": ".", "ext": "."})])
    call = only(report)
    assert (call.outcome, call.reason) == ("failed", "invalid_arguments")
    assert call.error is not None and "into '..'" in call.error
    assert server.requests == []


async def test_dots_inside_one_segment_are_fine(server: Server) -> None:
    tool = HttpTool(name="get", url=f"{server.base}/orders/{{id}}", safe_to_retry=True)
    report, _log, _model = await run_calls(
        (tool,), [("get", {"id": "v1.2"}), ("get", {"id": "...x"})]
    )
    assert [call.outcome for call in report.tool_calls] == ["succeeded", "succeeded"]
    assert sorted(request.path for request in server.requests) == ["/orders/...x", "/orders/v1.2"]


@pytest.mark.parametrize("safe", [True, False])
async def test_a_server_that_drips_for_ever_is_cut_off_at_the_total_timeout(
    server: Server, safe: bool
) -> None:
    # No HttpTool.timeout: each byte resets the read timeout, the total one still ends it.
    tool = HttpTool(name="drip", url=f"{server.base}/drip/{{every}}", safe_to_retry=safe)
    tools = HttpTools(LOOPBACK, total_timeout=0.5)
    call = tools.bind(tool)
    context = ToolContext(
        run_id="run-1",
        call_id="1.0",
        tool="drip",
        attempt=1,
        idempotency_key="run-1:1.0",
        scope=Scope(tenant="t"),
    )
    try:
        async with asyncio.timeout(20):  # the test's own bound: the tool must end far sooner
            with pytest.raises((ToolRaised, ToolOutcomeUnknown)) as ended:
                await call.invoke(call.validate('{"every": "0.1"}'), context)
    finally:
        await tools.aclose()
    assert "no whole response within the total timeout of 0.5 s" in str(ended.value)
    if safe:
        assert isinstance(ended.value, ToolRaised) and ended.value.reason == "timeout"
    else:
        assert isinstance(ended.value, ToolOutcomeUnknown), "it may have reached the server"


@pytest.mark.parametrize(
    ("safe", "outcome", "reason"), [(True, "failed", "timeout"), (False, "unknown", None)]
)
async def test_a_timeout_fails_a_safe_tool_and_settles_an_unsafe_one_unknown(
    server: Server, safe: bool, outcome: str, reason: str | None
) -> None:
    tool = HttpTool(
        name="slow", url=f"{server.base}/slow/{{seconds}}", timeout=0.3, safe_to_retry=safe
    )
    report, _log, _model = await run_calls((tool,), [("slow", {"seconds": "2"})])
    call = only(report)
    assert (call.outcome, call.reason) == (outcome, reason)


async def test_a_dropped_connection_settles_an_unsafe_request_unknown(server: Server) -> None:
    tools = (
        HttpTool(name="pay", method="POST", url=f"{server.base}/drop"),
        HttpTool(name="look", url=f"{server.base}/drop", safe_to_retry=True),
    )
    report, _log, model = await run_calls(tools, [("pay", {}), ("look", {})])
    pay, look = report.tool_calls
    assert pay.outcome == "unknown", "the request reached the server: it may have taken effect"
    assert (look.outcome, look.reason) == ("failed", "error")
    shown = {m.call_id: m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)}
    assert "unknown" in shown[pay.call_id].content


async def test_no_server_listening_fails_even_an_unsafe_tool(server: Server) -> None:
    with serve() as gone:
        port = gone.port
    tool = HttpTool(name="pay", method="POST", url=f"http://127.0.0.1:{port}/orders/x")
    report, _log, _model = await run_calls((tool,), [("pay", {})])
    call = only(report)
    assert (call.outcome, call.reason) == ("failed", "error"), "it certainly never ran"
    assert call.error is not None and "ConnectError" in call.error


async def test_the_model_is_offered_the_declared_schema(server: Server) -> None:
    tool = HttpTool(
        name="get_order",
        description="Look an order up by its id.",
        url=f"{server.base}/orders/{{order_id}}",
    )
    _report, _log, model = await run_calls((tool,), [("get_order", {"order_id": "A1"})])
    [offered] = model.requests[0].tools
    assert offered.name == "get_order"
    assert offered.description == "Look an order up by its id."
    assert offered.parameters == {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
        "additionalProperties": False,
    }


async def test_a_worker_runs_http_tools_with_its_egress_and_secrets(server: Server) -> None:
    store = MemoryStore()
    secrets = EnvSecretResolver(["BILLING_TOKEN"], environ={"BILLING_TOKEN": SECRET})
    tool = HttpTool(
        name="get_order",
        url=f"{server.base}/orders/{{order_id}}",
        headers={"Authorization": "Bearer {BILLING_TOKEN}"},
    )
    model = FakeModel().turn(tool_calls=[("get_order", {"order_id": "A7"})]).turn(text="ok")
    run_id = await psych_runtime.dispatch(store.scoped(Scope(tenant="t")), spec_of(tool), "go")
    worker = Worker(store, Runtime(model=model, secrets=secrets, egress=LOOPBACK))
    await worker.run_until_idle()
    report = await psych_runtime.report(store.scoped(Scope(tenant="t")), run_id)
    result = only(report).result
    assert isinstance(result, dict) and result["path"] == "/orders/A7"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    log = await store.read(run_id)
    assert all(SECRET not in r.model_dump_json() for r in log)


def test_declarations_are_checked_when_made() -> None:
    bad: list[dict[str, Any]] = [
        {"url": "http://{host}/x"},
        {"url": "http://user:pw@api.example.com/x"},
        {"url": "ftp://api.example.com/x"},
        {"url": "https://api.example.com/x#frag"},
        {"url": "https://api.example.com/{id:>5}"},
        {"url": "https://api.example.com/x", "headers": {"Bad Header": "v"}},
        {
            "url": "https://api.example.com/x",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
        {
            "url": "https://api.example.com/{id}",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
        {
            "url": "https://api.example.com/x",
            "method": "POST",
            "parameters": {"type": "object", "properties": {"q": {"not": {}}}},
        },
    ]
    for fields in bad:
        with pytest.raises(ValueError, match=r"tool 'bad'|url"):
            HttpTool(name="bad", **fields)
    ok = HttpTool(name="ok", url="https://api.example.com/v1/{id}?q={q}")
    assert json.loads(ok.model_dump_json())["kind"] == "http"

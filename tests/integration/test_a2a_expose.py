"""Runs served to A2A clients: an app built with the SDK's route builders and Psych's
`RunRequestHandler`, served by uvicorn on 127.0.0.1 (an ephemeral port), and the official
a2a-sdk client talking to it over loopback.

A real `Worker` runs the runs from the same `MemoryStore` (the model is a scripted
`FakeModel`, the only stand-in). The caller's identity is a bearer token the app maps to a
tenant, as an app's authentication would.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

import httpx
import pytest
import uvicorn
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers import get_artifact_text, get_message_text, new_data_part, new_text_message
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from fastapi import FastAPI, HTTPException, Request

import psych_runtime
from psych_runtime import (
    AgentSpec,
    CodeTool,
    Leases,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    ScopedStore,
    Skill,
    WaitFor,
    Worker,
    WorkflowSpec,
)
from psych_runtime.a2a import RunRequestHandler, agent_card
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import RunCancelled
from psych_runtime.testing import FakeModel
from psych_runtime.workflows import Workflow

pytestmark = pytest.mark.integration

TOKENS = {
    "token-a": Scope(tenant="tenant-a", principal="alice"),
    "token-b": Scope(tenant="tenant-b"),
}

SPEC = AgentSpec(
    name="support",
    instructions="You answer questions about orders.\nUse the tools.",
    model=ModelRef(model="gpt-4.1-mini"),
    tools=(
        CodeTool(name="lookup_order", safe_to_retry=True),
        CodeTool(name="ask_customer"),
        CodeTool(name="refund_order", requires_approval=True),
    ),
    skills=(
        Skill(name="order-status", description="Where an order is", instructions="Look it up."),
        Skill(name="refunds", description="Refund an order", instructions="Ask first."),
    ),
)


@dataclass
class World:
    """The app on loopback, its store, the worker's model and the gate its lookups wait at."""

    url: str
    store: MemoryStore
    model: FakeModel
    gate: asyncio.Event
    stack: AsyncExitStack
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    def scoped(self, token: str) -> ScopedStore:
        return self.store.scoped(TOKENS[token])

    async def client(
        self, token: str = "token-a", *, streaming: bool = False, polling: bool = False
    ) -> Client:
        """The SDK's client, resolving the card at the app's well-known path."""
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        self.clients.append(http)
        config = ClientConfig(streaming=streaming, polling=polling, httpx_client=http)
        client = await create_client(self.url, client_config=config)
        await self.stack.enter_async_context(client)
        return client


def build_app(store: MemoryStore, url: str, spec: AgentSpec | WorkflowSpec) -> FastAPI:
    """The app: the SDK's card, JSON-RPC and REST routes, with Psych's handler."""

    def scoped_store(request: Request) -> ScopedStore:
        # The tenant comes from who the caller is (their token), never from the request body.
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in TOKENS:
            raise HTTPException(401, "unknown caller")
        return store.scoped(TOKENS[token])

    handler = RunRequestHandler(spec, scoped=scoped_store, wait=20, poll=0.05)
    card = agent_card(spec, url=f"{url}/a2a", rest_url=f"{url}/a2a/rest")
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/a2a", context_builder=handler.context_builder),
        *create_rest_routes(
            handler, context_builder=handler.context_builder, path_prefix="/a2a/rest"
        ),
    ]
    app = FastAPI()
    app.router.routes.extend(routes)
    return app


@asynccontextmanager
async def serving(model: FakeModel, spec: AgentSpec | WorkflowSpec = SPEC) -> AsyncIterator[World]:
    store = MemoryStore()
    gate = asyncio.Event()

    async def lookup_order(order_id: str) -> dict[str, str]:
        """Look up an order (once the test opens the gate)."""
        await gate.wait()
        return {"order_id": order_id, "status": "shipped"}

    def ask_customer(question: str) -> WaitFor:
        """Ask the customer something and wait for the answer."""
        return WaitFor(note=question)

    def refund_order(order_id: str) -> dict[str, str]:
        """Refund an order."""
        return {"order_id": order_id, "refund": "issued"}

    # A cancel reaches a busy attempt at its next heartbeat; its calls get the grace period.
    leases = Leases(ttl=dt.timedelta(seconds=5), heartbeat=dt.timedelta(seconds=0.2))
    tools = [lookup_order, ask_customer, refund_order]
    runtime = Runtime(model=model, tools=tools, leases=leases, cancel_grace=0.2)
    worker = Worker(store, runtime, poll_interval=0.05)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = build_app(store, url, spec)
    config = uvicorn.Config(
        app,
        lifespan="off",
        ws="none",
        http="h11",
        log_level="critical",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    served = asyncio.create_task(server.serve(sockets=[sock]))
    working = asyncio.create_task(worker.run())
    async with asyncio.timeout(10):
        while not server.started:  # noqa: ASYNC110 - uvicorn sets a flag, with no event
            await asyncio.sleep(0.01)
    async with AsyncExitStack() as stack:
        world = World(url, store, model, gate, stack)
        try:
            yield world
        finally:
            gate.set()
            await stack.aclose()
            for http in world.clients:
                await http.aclose()
            server.should_exit = True
            worker.stop()
            await asyncio.gather(served, working)
            sock.close()


def text(
    said: str, *, task_id: str | None = None, message_id: str | None = None
) -> SendMessageRequest:
    """A user's text message (on the task `task_id`, when given)."""
    message = new_text_message(said, task_id=task_id, role=Role.ROLE_USER)
    if message_id is not None:
        message.message_id = message_id
    return SendMessageRequest(message=message)


async def events_of(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    async with asyncio.timeout(20):
        return [event async for event in client.send_message(request)]


async def only_task(client: Client, request: SendMessageRequest) -> Task:
    [event] = await events_of(client, request)
    assert event.HasField("task"), event
    return event.task


async def wait_for_state(client: Client, task_id: str, *states: TaskState) -> Task:
    async with asyncio.timeout(20):
        while True:
            task = await client.get_task(GetTaskRequest(id=task_id))
            if task.status.state in states:
                return task
            await asyncio.sleep(0.02)


def states_of(events: Sequence[StreamResponse]) -> list[str]:
    found = []
    for event in events:
        if event.HasField("task"):
            found.append(TaskState.Name(event.task.status.state))
        elif event.HasField("status_update"):
            found.append(TaskState.Name(event.status_update.status.state))
        elif event.HasField("artifact_update"):
            found.append("artifact:" + get_artifact_text(event.artifact_update.artifact))
    return found


def looking_up(order: str = "A1") -> FakeModel:
    return (
        FakeModel()
        .turn(tool_calls=[("lookup_order", {"order_id": order})])
        .turn(text=f"Order {order} has shipped.")
    )


async def test_the_card_describes_the_spec_and_where_to_send() -> None:
    async with serving(FakeModel()) as world, httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, world.url).get_agent_card()
    assert card.name == "support"
    assert card.description == "You answer questions about orders."
    assert card.version == SPEC.version
    assert [(s.id, s.description) for s in card.skills] == [
        ("order-status", "Where an order is"),
        ("refunds", "Refund an order"),
    ]
    interfaces = [(i.protocol_binding, i.url) for i in card.supported_interfaces]
    assert interfaces == [
        (TransportProtocol.JSONRPC, f"{world.url}/a2a"),
        (TransportProtocol.HTTP_JSON, f"{world.url}/a2a/rest"),
    ]
    assert card.capabilities.streaming and not card.capabilities.push_notifications


async def test_send_admits_a_run_and_get_follows_it_from_working_to_completed() -> None:
    async with serving(looking_up()) as world:
        client = await world.client(polling=True)  # return at once: the task as admitted
        task = await only_task(client, text("Where is order A1?"))
        assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
        # The task id is the run id, in the caller's tenant.
        assert (await psych_runtime.status(world.scoped("token-a"), task.id)).agent == "support"

        working = await wait_for_state(client, task.id, TaskState.TASK_STATE_WORKING)
        assert working.metadata["psych"]["status"] == "running"
        world.gate.set()  # the lookup answers
        done = await wait_for_state(client, task.id, TaskState.TASK_STATE_COMPLETED)

    [artifact] = done.artifacts
    assert (artifact.name, get_artifact_text(artifact)) == ("output", "Order A1 has shipped.")
    assert [get_message_text(m) for m in done.history] == [
        "Where is order A1?",
        "Order A1 has shipped.",
    ]
    status = await psych_runtime.status(world.scoped("token-a"), task.id)
    assert (status.status, status.tool_calls) == ("completed", 1)


async def test_a_blocking_send_answers_with_the_completed_task() -> None:
    async with serving(looking_up("B2")) as world:
        world.gate.set()
        client = await world.client()  # neither streaming nor polling: send blocks
        task = await only_task(client, text("Where is order B2?"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == "Order B2 has shipped."


async def test_the_same_message_sent_twice_is_one_run() -> None:
    async with serving(looking_up()) as world:
        world.gate.set()
        client = await world.client(polling=True)
        first = await only_task(client, text("Where is A1?", message_id="m-1"))
        again = await only_task(client, text("Where is A1?", message_id="m-1"))
        assert again.id == first.id
        page = await world.scoped("token-a").list_runs()
        assert [row.run_id for row in page.items] == [first.id]


async def test_streaming_yields_status_updates_until_the_run_completes() -> None:
    async with serving(looking_up()) as world:
        world.gate.set()
        client = await world.client(streaming=True)
        events = await events_of(client, text("Where is order A1?"))
    seen = states_of(events)
    assert seen[0] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"), seen
    assert seen[-2:] == ["artifact:Order A1 has shipped.", "TASK_STATE_COMPLETED"], seen
    assert "TASK_STATE_WORKING" in seen
    # One update per change of state: never the same state twice in a row.
    assert all(a != b for a, b in itertools.pairwise(seen)), seen


async def test_a_client_can_subscribe_to_a_task_it_sent_earlier() -> None:
    async with serving(looking_up()) as world:  # the lookup waits at the gate
        sender = await world.client(polling=True)
        task = await only_task(sender, text("Where is order A1?"))
        await wait_for_state(sender, task.id, TaskState.TASK_STATE_WORKING)

        watcher = await world.client(streaming=True)
        seen: list[StreamResponse] = []
        async with asyncio.timeout(20):
            async for event in watcher.subscribe(SubscribeToTaskRequest(id=task.id)):
                seen.append(event)
                if len(seen) == 1:
                    world.gate.set()  # subscribed: now let the lookup answer
        assert states_of(seen) == [
            "TASK_STATE_WORKING",
            "artifact:Order A1 has shipped.",
            "TASK_STATE_COMPLETED",
        ]
        # An ended task has nothing more to stream.
        with pytest.raises(UnsupportedOperationError, match="has ended"):
            async for _ in watcher.subscribe(SubscribeToTaskRequest(id=task.id)):
                pass


async def test_cancel_cancels_the_run() -> None:
    async with serving(looking_up()) as world:  # the gate stays shut: the lookup hangs
        client = await world.client(polling=True)
        task = await only_task(client, text("Where is order A1?"))
        await wait_for_state(client, task.id, TaskState.TASK_STATE_WORKING)
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert "cancelled by an A2A client" in get_message_text(cancelled.status.message)

        store = world.scoped("token-a")
        assert (await psych_runtime.status(store, task.id)).status == "cancelled"
        [ended] = [
            r.body
            for r in await psych_runtime.read_log(store, task.id)
            if isinstance(r.body, RunCancelled)
        ]
        assert ended.reason == "cancelled by an A2A client"
        # An ended task cannot be cancelled again.
        with pytest.raises(Exception, match="already ended") as refused:
            await client.cancel_task(CancelTaskRequest(id=task.id))
        assert type(refused.value).__name__ == "TaskNotCancelableError"


async def test_a_question_is_input_required_and_a_message_on_the_task_answers_it() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("ask_customer", {"question": "Which order do you mean?"})])
        .turn(text="Order A7 has shipped.")
    )
    async with serving(model) as world:
        client = await world.client()
        asked = await only_task(client, text("Where is my order?"))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert get_message_text(asked.status.message) == "Which order do you mean?"
        status = await psych_runtime.status(world.scoped("token-a"), asked.id)
        assert (status.status, status.waiting) == ("waiting", "external")

        streaming = await world.client(streaming=True)
        follow_up = text("A7", task_id=asked.id)
        events = await events_of(streaming, follow_up)

    seen = states_of(events)
    # The answer was taken: the task works on (never asks again), then completes.
    assert seen[0] == "TASK_STATE_WORKING", seen
    assert seen[-2:] == ["artifact:Order A7 has shipped.", "TASK_STATE_COMPLETED"], seen
    assert "TASK_STATE_INPUT_REQUIRED" not in seen
    [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert result.content == "A7"  # the answer, as the waiting call's result


async def test_a_workflow_asks_a_person_and_a_message_on_the_task_is_the_answer() -> None:
    flow = Workflow("intake")
    flow.human("size", "Which size?", answer_schema={"type": "string", "enum": ["S", "M"]})
    async with serving(FakeModel(), flow.build()) as world:
        client = await world.client()
        request = SendMessageRequest(
            message=Message(message_id="w-1", role=Role.ROLE_USER, parts=[new_data_part({})])
        )
        asked = await only_task(client, request)
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert get_message_text(asked.status.message) == "step size asks: Which size?"

        done = await only_task(client, text("M", task_id=asked.id))  # `answer` for the step
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(done.artifacts[0]) == "M"
    view = await psych_runtime.workflow_view(world.scoped("token-a"), asked.id)
    assert [(step.name, step.status) for step in view.steps] == [("size", "completed")]


async def test_an_approval_is_auth_required_and_no_message_decides_it() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("refund_order", {"order_id": "B7"})])
        .turn(text="Order B7 has been refunded.")
    )
    async with serving(model) as world:
        client = await world.client()
        task = await only_task(client, text("Refund order B7"))
        assert task.status.state == TaskState.TASK_STATE_AUTH_REQUIRED
        assert "refund_order" in get_message_text(task.status.message)
        [call_id] = task.metadata["psych"]["waiting_for"]

        with pytest.raises(UnsupportedOperationError, match="a person's decision"):
            await only_task(client, text("yes, do it", task_id=task.id))

        # The app's own approval route decides it; the A2A task follows.
        await psych_runtime.approve(world.scoped("token-a"), task.id, call_id, by="alice")
        done = await wait_for_state(client, task.id, TaskState.TASK_STATE_COMPLETED)
    assert get_artifact_text(done.artifacts[0]) == "Order B7 has been refunded."


async def test_the_scope_comes_from_the_caller_never_from_the_request() -> None:
    async with serving(looking_up()) as world:  # the lookup hangs: the run stays working
        alice = await world.client("token-a", polling=True)
        bob = await world.client("token-b", polling=True)
        # A tenant named in the request body is not who the caller is.
        request = text("Where is order A1?")
        request.tenant = "tenant-b"
        task = await only_task(alice, request)
        await psych_runtime.status(world.scoped("token-a"), task.id)
        with pytest.raises(psych_runtime.errors.RunNotFound):
            await psych_runtime.status(world.scoped("token-b"), task.id)

        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await bob.cancel_task(CancelTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await only_task(bob, text("A2", task_id=task.id))
        working = await wait_for_state(alice, task.id, TaskState.TASK_STATE_WORKING)
        assert working.id == task.id
        status = await psych_runtime.status(world.scoped("token-a"), task.id)
        assert status.status == "running"  # Bob's cancel never reached it

        # No credentials, no answer: the app's own 401.
        async with httpx.AsyncClient() as anonymous:
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.id}}
            response = await anonymous.post(
                f"{world.url}/a2a", json=body, headers={"A2A-Version": "1.0"}
            )
        assert response.status_code == 401


async def test_the_rest_binding_serves_the_same_tasks() -> None:
    async with serving(looking_up()) as world:
        world.gate.set()
        async with httpx.AsyncClient(headers={"Authorization": "Bearer token-a"}) as http:
            config = ClientConfig(
                streaming=False,
                httpx_client=http,
                supported_protocol_bindings=[TransportProtocol.HTTP_JSON],
            )
            async with await create_client(world.url, client_config=config) as client:
                task = await only_task(client, text("Where is order A1?"))
                again = await client.get_task(GetTaskRequest(id=task.id))
    assert task.status.state == again.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(again.artifacts[0]) == "Order A1 has shipped."

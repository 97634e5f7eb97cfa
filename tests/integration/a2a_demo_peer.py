"""An A2A agent built with the official SDK's server API, for the A2A peer tests.

Run as ``python -m tests.integration.a2a_demo_peer PORT``: a JSON-RPC endpoint at ``/`` and
the Agent Card at ``/.well-known/agent-card.json``, on loopback. Environment: ``DEMO_LEDGER``
(a file each effect appends a line to: what, an argument, the pid), ``DEMO_STREAMING``
(``0``: the card says the agent does not stream, so clients poll), ``DEMO_NAME`` (the agent's
name on its card; changing it between two reads shows a card was read again).

Skills, chosen by the ``skill`` key of the request's metadata (A2A has no field for it):

- ``echo`` (tagged ``read-only``): a text artifact, ``echo: MESSAGE``.
- ``book`` (no tag: unsafe): a data artifact ``{"booked": MESSAGE, "nights": N}``.
- ``slow`` (no tag): works ``data.seconds`` seconds (30 by default), then a text artifact;
  cancellable (the ledger says ``slow-cancelled``).
- ``slow_read`` (tagged ``idempotent``): the same, safe to run again.
- ``fail``: the task fails, saying why.
- ``reject``: the agent rejects the task.
- ``ask``: the task waits for input, asking which city.
- ``whoami`` (tagged ``read-only``): the Authorization header the request came with.

Every request for the card, and every cancel, is in the ledger too, with the Authorization
header it came with.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import uvicorn
from a2a.helpers import (
    get_data_parts,
    new_data_artifact,
    new_task,
    new_text_artifact,
    new_text_message,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    TaskState,
)
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

CARD_PATH = "/.well-known/agent-card.json"


def _effect(what: str, argument: object) -> None:
    ledger = os.environ.get("DEMO_LEDGER")
    if ledger:
        text = str(argument).replace(" ", "_") or "-"
        with open(ledger, "a", encoding="utf-8") as out:
            out.write(f"{what} {text} {os.getpid()}\n")
            out.flush()
            os.fsync(out.fileno())


def _skill(skill_id: str, description: str, *tags: str) -> AgentSkill:
    return AgentSkill(
        id=skill_id, name=skill_id, description=description, tags=list(tags) or ["demo"]
    )


SKILLS = [
    _skill("echo", "Say the message back.", "read-only"),
    _skill("book", "Book a room; data.nights says how many nights."),
    _skill("slow", "Work for data.seconds seconds, then say so."),
    _skill("slow_read", "Read for data.seconds seconds, then say so.", "idempotent"),
    _skill("fail", "Always fails."),
    _skill("reject", "Always rejects the task."),
    _skill("ask", "Asks which city before it can go on."),
    _skill("whoami", "The credential this request came with.", "read-only"),
]


class DemoExecutor(AgentExecutor):
    """Runs each skill as a task: working, then an artifact and a final state."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await event_queue.enqueue_event(
            context.current_task
            or new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED)
        )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        skill = str(context.metadata.get("skill", ""))
        text = context.get_user_input()
        data = _data(context)
        await updater.start_work()
        match skill:
            case "echo":
                _effect("echo", text)
                await _finish(updater, new_text_artifact("echo", f"echo: {text}"))
            case "book":
                nights = int(data.get("nights", 1))
                _effect("book", f"{text}/{nights}")
                artifact = new_data_artifact("booking", {"booked": text, "nights": nights})
                await _finish(updater, artifact)
            case "slow" | "slow_read":
                seconds = float(data.get("seconds", 30))
                _effect(f"{skill}-begun", context.task_id)
                try:
                    await asyncio.sleep(seconds)
                except asyncio.CancelledError:
                    _effect(f"{skill}-cancelled", context.task_id)
                    raise
                _effect(skill, context.task_id)
                await _finish(updater, new_text_artifact("done", f"{skill} done"))
            case "fail":
                _effect("fail", text)
                await updater.failed(_said(updater, "the fail skill always fails"))
            case "reject":
                await updater.reject(_said(updater, "I do not take such tasks"))
            case "ask":
                _effect("ask", text)
                await updater.requires_input(_said(updater, "Which city?"))
            case "whoami":
                headers = context.call_context.state.get("headers", {})
                seen = headers.get("authorization", "none")
                _effect("whoami", seen)
                await _finish(updater, new_text_artifact("credential", seen))
            case _:
                await updater.failed(_said(updater, f"no skill {skill!r}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        headers = context.call_context.state.get("headers", {})
        _effect("cancel", f"{context.task_id}/{headers.get('authorization', 'none')}")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def _data(context: RequestContext) -> dict[str, Any]:
    message = context.message
    if message is None:
        return {}
    for value in get_data_parts(message.parts):
        if isinstance(value, dict):
            return value
    return {}


async def _finish(updater: TaskUpdater, artifact: Any) -> None:
    await updater.add_artifact(
        list(artifact.parts), artifact_id=artifact.artifact_id, name=artifact.name
    )
    await updater.complete()


def _said(updater: TaskUpdater, text: str) -> Any:
    return new_text_message(
        text, context_id=updater.context_id, task_id=updater.task_id, role=Role.ROLE_AGENT
    )


class CardLedger:
    """Writes each read of the card to the ledger, with the credential it came with."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == CARD_PATH:
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            _effect("card", headers.get("authorization", "none"))
        await self.app(scope, receive, send)


def build(port: int) -> ASGIApp:
    streaming = os.environ.get("DEMO_STREAMING", "1") != "0"
    card = AgentCard(
        name=os.environ.get("DEMO_NAME", "demo peer"),
        description="An A2A agent for Psych's tests.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=SKILLS,
    )
    handler = DefaultRequestHandler(
        agent_executor=DemoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    return CardLedger(Starlette(routes=routes))


def main() -> None:
    port = int(sys.argv[1])
    uvicorn.run(build(port), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()

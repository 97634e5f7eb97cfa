"""An A2A peer's skills as Psych tools: one executor per skill on the peer's card.

A call sends the peer one message for the skill and follows the task it starts to its end:
by the task's event stream when the peer streams (and by polling when the stream breaks off),
else by polling. A call cut off on Psych's side (the run cancelled, the attempt ending, its
timeout) cancels the remote task before it ends.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any

from a2a.client import A2AClientError, Client
from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
)
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtensionSupportRequiredError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from pydantic import JsonValue

from psych_core import A2APeer, ApprovalRule, EgressError, ToolDefinition
from psych_runtime.tools._a2a._config import SAFE_SKILL_TAGS
from psych_runtime.tools._a2a._pool import CLEANUP_TIMEOUT, PeerConnection, never_sent
from psych_runtime.tools._a2a._results import (
    ENDED,
    WAITING,
    failure,
    message_result,
    task_result,
)
from psych_runtime.tools._code import InvalidArguments, ToolOutcomeUnknown, ToolRaised
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import json_object

log = logging.getLogger("psych_runtime.a2a")

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""The names a model may be offered; a skill whose ``{peer}__{id}`` is not one is left out."""

SKILL_METADATA = "skill"
"""The key under which the message's metadata names the skill (A2A has no field for it)."""

REFUSALS = (
    ContentTypeNotSupportedError,
    ExtensionSupportRequiredError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
"""The errors with which a peer turns a message away before any work begins: a failed call,
never an unknown one. Any other error after the message was sent may follow an effect."""

_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "what to ask the agent, in words"},
        "data": {
            "type": "object",
            "description": "structured input, when the skill's description asks for some",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}


def safe_to_retry(ref: A2APeer, skill: AgentSkill) -> bool:
    """Whether running the call twice does no harm: the peer tags the skill ``read-only`` or
    ``idempotent``, or the spec lists it in `A2APeer.safe_skills`."""
    tags = {tag.lower() for tag in skill.tags}
    return skill.id in ref.safe_skills or any(tag in tags for tag in SAFE_SKILL_TAGS)


class A2ASkillCall:
    """Calls one skill of an A2A peer over the connection made for the run's scope."""

    def __init__(
        self, ref: A2APeer, agent: str, skill: AgentSkill, connection: PeerConnection
    ) -> None:
        self.ref = ref
        self.agent = agent
        self.skill = skill
        self.connection = connection
        self.name = ref.tool_name(skill.id)

    def definition(self, description: str | None = None) -> ToolDefinition:
        """The skill as the peer's card describes it, under its Psych name."""
        text = description or self.skill.description or self.skill.name or self.skill.id
        text = f"{text} (A2A agent {self.agent or self.ref.name!r})"
        if self.skill.examples:
            text += "\nExamples: " + "; ".join(self.skill.examples[:5])
        return ToolDefinition(self.name, text, dict(_PARAMETERS))

    def validate(self, arguments: str) -> dict[str, Any]:
        """``{"message": "...", "data": {...}}``, the data optional."""
        raw = json_object(arguments)
        if (
            not isinstance(raw.get("message"), str)
            or not isinstance(raw.get("data", {}), dict)
            or set(raw) - {"message", "data"}
        ):
            raise InvalidArguments('arguments must be {"message": "<text>", "data": {...}}')
        return raw

    def safe_to_retry(self, arguments: Mapping[str, Any]) -> bool:
        """What the peer's card (or the spec) says, recorded when the call starts."""
        return safe_to_retry(self.ref, self.skill)

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """When the call needs approval: the reference's rule."""
        return self.ref.requires_approval

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue:
        """Send the peer the message and follow its task to the end."""
        self.connection.in_flight += 1
        try:
            return await self._call(arguments, context)
        finally:
            self.connection.in_flight -= 1

    async def _call(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue:
        where = f"A2A peer {self.ref.name!r} skill {self.skill.id!r}"
        client = self.connection.client
        follow = _Follower(client, self.connection.connection.poll_interval)
        try:
            try:
                reply = await follow.send(self._request(arguments, context))
            except (A2AError, EgressError) as exc:
                if follow.task_id is None and isinstance(exc, REFUSALS):
                    raise ToolRaised(f"{where}: the peer refused the call: {exc}") from None
                if follow.task_id is None:
                    raise self._broken(where, exc, sent=not never_sent(exc)) from None
                log.info("%s: the event stream broke off (%s); polling the task", where, exc)
                reply = None
            if isinstance(reply, Message):
                return message_result(reply)
            try:
                task = await follow.to_end(reply)
            except (A2AError, EgressError) as exc:
                raise self._broken(where, exc, sent=True) from None
        except asyncio.CancelledError:
            # Cut off here (the run was cancelled, the attempt is ending, the timeout ran
            # out): the peer is told to stop. Done in a task of its own, so that a second
            # cancel of this call does not cut the request to cancel short.
            if follow.task_id is not None and not follow.ended:
                self.connection.in_background(_cancel(client, follow.task_id, where))
            raise
        if task.status.state in WAITING:
            self.connection.in_background(_cancel(client, task.id, where))
        problem = failure(task, where)
        if problem is not None:
            raise ToolRaised(problem)
        return task_result(task)

    def _request(self, arguments: dict[str, Any], context: ToolContext) -> SendMessageRequest:
        parts = [new_text_part(arguments["message"])]
        if arguments.get("data"):
            parts.append(new_data_part(arguments["data"]))
        message = Message(
            # The idempotency key: the same on every attempt of this call, so a careful peer
            # can tell a call run again after a crash from a new one.
            message_id=context.idempotency_key,
            role=Role.ROLE_USER,
            parts=parts,
            metadata={SKILL_METADATA: self.skill.id},
        )
        return SendMessageRequest(
            message=message,
            metadata={SKILL_METADATA: self.skill.id},
            configuration=SendMessageConfiguration(return_immediately=not self.connection.streams),
        )

    def _broken(self, where: str, exc: BaseException, *, sent: bool) -> Exception:
        message = f"{where}: the call failed ({_describe(exc)})"
        if not sent or safe_to_retry(self.ref, self.skill):
            return ToolRaised(message)
        return ToolOutcomeUnknown(f"{message}; it may have taken effect at the peer")


class _Follower:
    """Follows one task: its event stream, then polling until it ends."""

    def __init__(self, client: Client, poll_interval: float) -> None:
        self.client = client
        self.poll_interval = poll_interval
        self.task_id: str | None = None
        self.ended = False

    async def send(self, request: SendMessageRequest) -> Message | Task | None:
        """Send the message; the reply (a message), or the task as the stream left it."""
        last: Task | None = None
        async for event in self.client.send_message(request):
            if event.HasField("message"):
                self.ended = True
                return event.message
            if event.HasField("task"):
                last = event.task
                self.task_id = event.task.id
                state = event.task.status.state
            elif event.HasField("status_update"):
                self.task_id = event.status_update.task_id
                state = event.status_update.status.state
            elif event.HasField("artifact_update"):
                self.task_id = event.artifact_update.task_id
                continue
            else:
                continue
            if state in ENDED or state in WAITING:
                self.ended = state in ENDED
                return None  # read whole, artifacts and all, by `to_end`
        return last

    async def to_end(self, task: Task | None) -> Task:
        """The task once it has ended or waits for its client, read whole from the peer."""
        if self.task_id is None:
            raise A2AClientError("the peer answered with neither a task nor a message")
        while True:
            if task is None or task.status.state not in ENDED | WAITING:
                task = await self.client.get_task(GetTaskRequest(id=self.task_id))
            if task.status.state in ENDED or task.status.state in WAITING:
                self.ended = task.status.state in ENDED
                return task
            await asyncio.sleep(self.poll_interval)
            task = None


async def _cancel(client: Client, task_id: str, where: str) -> None:
    """Ask the peer to cancel the task; what went wrong, if anything, is logged, never raised
    (the call it belongs to has already ended)."""
    try:
        async with asyncio.timeout(CLEANUP_TIMEOUT):
            await client.cancel_task(CancelTaskRequest(id=task_id))
    except TimeoutError:
        why = f"no answer within {CLEANUP_TIMEOUT:g} s"
    except Exception as exc:
        why = _describe(exc)
    else:
        log.info("%s: cancelled remote task %s", where, task_id)
        return
    log.warning("%s: remote task %s could not be cancelled (%s)", where, task_id, why)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

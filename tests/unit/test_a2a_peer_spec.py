"""`A2APeer` in a spec, `A2AHttp` in the runtime, the egress seam's httpx client, and what a
remote task's end becomes: checked without a peer."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest
from a2a.helpers import new_data_part, new_text_message, new_text_part
from a2a.types import AgentSkill, Artifact, Part, Task, TaskState, TaskStatus
from pydantic import ValidationError

from psych_runtime import AgentSpec, ModelRef, Runtime, Scope, session
from psych_runtime.a2a import SAFE_SKILL_TAGS, A2AHttp, A2APeer
from psych_runtime.errors import A2APeerNotConfigured, EgressError, EgressRefused, SpecError
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.model.egress._httpx import guarded_httpx_client, never_sent
from psych_runtime.testing import FakeModel
from psych_runtime.tools._a2a._config import credential_name
from psych_runtime.tools._a2a._results import failure, state_name, task_result
from psych_runtime.tools._a2a._skills import safe_to_retry
from psych_runtime.tools._credentials import filled

MODEL = ModelRef(model="fake")


# ------------------------------------------------------------------------------ the reference


@pytest.mark.parametrize("name", ["travel", "a-b_c", "X" * 32])
def test_a_peer_name_is_a_short_word(name: str) -> None:
    assert A2APeer(name=name).tool_name("book") == f"{name}__book"


@pytest.mark.parametrize("name", ["", "has__separator", "has space", "x" * 33, "dot.ted"])
def test_a_peer_name_that_cannot_prefix_tool_names_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="A2A peer name"):
        A2APeer(name=name)


def test_defaults_are_unsafe_required_and_every_skill() -> None:
    peer = A2APeer(name="travel")
    assert peer.kind == "a2a" and peer.required and peer.skills is None
    assert peer.safe_to_retry is False and peer.timeout == 300.0
    assert peer.offers("anything")
    narrowed = A2APeer(name="travel", skills=("book",))
    assert narrowed.offers("book") and not narrowed.offers("cancel")
    with pytest.raises(ValidationError):
        A2APeer(name="travel", timeout=0)


def test_a_spec_with_a_peer_round_trips_by_its_kind_and_hashes_stably() -> None:
    spec = AgentSpec(
        name="planner",
        model=MODEL,
        tools=[A2APeer(name="travel", skills=("book",), safe_skills=("quote",))],
    )
    again = AgentSpec.model_validate_json(spec.model_dump_json())
    assert again == spec and isinstance(again.tools[0], A2APeer)
    assert again.version == spec.version
    # Fields left at their defaults are left out of the canonical form.
    assert '"required"' not in spec.canonical_json()
    with pytest.raises(ValidationError, match="twice"):
        AgentSpec(name="p", model=MODEL, tools=[A2APeer(name="x"), A2APeer(name="x")])


def test_a_skill_is_safe_when_the_card_tags_it_or_the_spec_says() -> None:
    ref = A2APeer(name="travel", safe_skills=("quote",))
    assert SAFE_SKILL_TAGS == ("read-only", "idempotent")
    assert safe_to_retry(ref, AgentSkill(id="search", tags=["Read-Only"]))
    assert safe_to_retry(ref, AgentSkill(id="status", tags=["idempotent", "travel"]))
    assert safe_to_retry(ref, AgentSkill(id="quote", tags=["pricing"]))
    assert not safe_to_retry(ref, AgentSkill(id="book", tags=["travel"]))
    assert not safe_to_retry(ref, AgentSkill(id="book"))


# ----------------------------------------------------------------------------- the connection


def test_a_connection_fills_the_tenant_and_the_credential() -> None:
    peer = A2AHttp(
        url="https://travel.example.com",
        headers={"Authorization": "Bearer {credential}", "X-Agent": "psych"},
        credential="TRAVEL_{tenant}",
    )
    assert credential_name(peer, Scope(tenant="acme")) == "TRAVEL_acme"
    assert filled(peer.headers, "s3cret") == {"Authorization": "Bearer s3cret", "X-Agent": "psych"}
    assert credential_name(A2AHttp(url="https://x.example"), Scope(tenant="acme")) is None


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"url": "ftp://x.example"}, "http:// or https://"),
        ({"url": "https://x", "headers": {"A": "{token}"}, "credential": "T"}, "only {credential}"),
        ({"url": "https://x", "headers": {"A": "Bearer {credential}"}}, "no credential is named"),
        ({"url": "https://x", "credential": "{tenant}"}, "a secret's name"),
        ({"url": "https://x", "credential": "T_{who}"}, "a secret's name"),
        ({"url": "https://x", "timeout": 0}, "timeout must be positive"),
        ({"url": "https://x", "card_ttl": -1}, "card_ttl must not be negative"),
    ],
)
def test_a_connection_that_cannot_work_is_refused_when_made(
    options: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        A2AHttp(**options)  # type: ignore[arg-type]


def test_the_runtime_keeps_its_peers_frozen() -> None:
    peers = {"travel": A2AHttp(url="https://travel.example.com")}
    runtime = Runtime(model=FakeModel(), a2a_peers=peers)
    peers.clear()
    assert list(runtime.a2a_peers) == ["travel"]
    with pytest.raises(TypeError):
        runtime.a2a_peers["other"] = A2AHttp(url="https://x.example")  # type: ignore[index]


async def test_a_spec_naming_a_peer_the_runtime_lacks_is_refused_naming_it() -> None:
    spec = AgentSpec(name="planner", model=MODEL, tools=[A2APeer(name="travel")])
    runtime = Runtime(model=FakeModel(), a2a_peers={"weather": A2AHttp(url="https://w.example")})
    async with session(runtime=runtime) as s:
        with pytest.raises(A2APeerNotConfigured) as refused:
            await s.ask(spec, "go")
    assert refused.value.tool == "travel" and refused.value.registered == ("weather",)
    assert "Runtime(a2a_peers={'travel': A2AHttp(url=...)})" in str(refused.value)


async def test_without_the_sdk_a_run_needing_a_peer_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What an installation without the `a2a` extra sees: the SDK-backed module cannot load.
    monkeypatch.setitem(sys.modules, "psych_runtime.tools._a2a._source", None)
    spec = AgentSpec(name="planner", model=MODEL, tools=[A2APeer(name="travel")])
    runtime = Runtime(model=FakeModel(), a2a_peers={"travel": A2AHttp(url="https://t.example")})
    async with session(runtime=runtime) as s:
        with pytest.raises(SpecError, match=r"install psych-runtime\[a2a\]"):
            await s.ask(spec, "go")


# ------------------------------------------------------------------------------ the seam's client


@pytest.fixture
async def listener() -> AsyncIterator[list[int]]:
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    accepted.append(server.sockets[0].getsockname()[1])  # the port first
    async with server:
        yield accepted


async def test_the_seam_s_httpx_client_refuses_before_connecting(listener: list[int]) -> None:
    port = listener[0]
    async with guarded_httpx_client(None) as refusing:
        with pytest.raises(EgressRefused, match="loopback") as refused:
            await refusing.get(f"http://127.0.0.1:{port}/")
    assert never_sent(refused.value)
    assert len(listener) == 1  # the port only: no connection was made
    async with guarded_httpx_client(EgressPolicy(allow_loopback=True)) as allowed:
        response = await allowed.get(f"http://127.0.0.1:{port}/")
    assert response.text == "ok" and len(listener) == 2
    # Bodies, whole or streamed, are held to a size cap, as `Egress`'s are.
    capped = guarded_httpx_client(EgressPolicy(allow_loopback=True), max_response_bytes=1)
    async with capped:
        with pytest.raises(EgressError, match="longer than 1 bytes"):
            await capped.get(f"http://127.0.0.1:{port}/")


# ---------------------------------------------------------------------------- a task's end


def _task(state: TaskState, *artifacts: Artifact, said: str | None = None) -> Task:
    status = TaskStatus(state=state)
    if said is not None:
        status.message.CopyFrom(new_text_message(said))
    return Task(id="t1", context_id="c1", status=status, artifacts=list(artifacts))


def test_a_completed_task_s_artifacts_become_the_result() -> None:
    text = Artifact(artifact_id="a", name="answer", parts=[new_text_part("Sunny")])
    assert task_result(_task(TaskState.TASK_STATE_COMPLETED, text)) == "Sunny"
    data = Artifact(artifact_id="b", parts=[new_data_part({"rate": 99.5, "nights": 3})])
    booked = task_result(_task(TaskState.TASK_STATE_COMPLETED, data))
    # Whole numbers come back whole (protobuf made them doubles), keys in one order.
    assert booked == {"nights": 3, "rate": 99.5} and list(booked) == ["nights", "rate"]
    assert isinstance(booked["nights"], int)
    two = Artifact(artifact_id="c", parts=[new_text_part("one"), new_text_part("two")])
    assert task_result(_task(TaskState.TASK_STATE_COMPLETED, two)) == "one\n\ntwo"
    picture = Part(raw=b"\x89PNG", media_type="image/png", filename="p.png")
    mixed = Artifact(artifact_id="d", name="report", parts=[new_text_part("see"), picture])
    assert task_result(_task(TaskState.TASK_STATE_COMPLETED, mixed)) == {
        "artifacts": [
            {
                "name": "report",
                "parts": [
                    {"type": "text", "text": "see"},
                    {
                        "type": "file",
                        "data": "iVBORw==",
                        "media_type": "image/png",
                        "filename": "p.png",
                    },
                ],
            }
        ]
    }
    # No artifact: the final status message is the answer.
    assert task_result(_task(TaskState.TASK_STATE_COMPLETED, said="Done.")) == "Done."
    assert failure(_task(TaskState.TASK_STATE_COMPLETED), "peer") is None


@pytest.mark.parametrize(
    ("state", "said"),
    [
        (TaskState.TASK_STATE_FAILED, "failed: out of rooms"),
        (TaskState.TASK_STATE_REJECTED, "rejected the task: out of rooms"),
        (TaskState.TASK_STATE_CANCELED, "cancelled the task: out of rooms"),
        (TaskState.TASK_STATE_INPUT_REQUIRED, "needs more input: out of rooms (the remote"),
        (TaskState.TASK_STATE_AUTH_REQUIRED, "needs authentication: out of rooms (the remote"),
    ],
)
def test_every_other_end_is_a_failure_saying_what_the_peer_said(
    state: TaskState, said: str
) -> None:
    problem = failure(_task(state, said="out of rooms"), "A2A peer 'travel' skill 'book'")
    assert problem is not None and problem.startswith(f"A2A peer 'travel' skill 'book' {said}")


def test_states_are_named_as_a2a_writes_them() -> None:
    assert state_name(TaskState.TASK_STATE_INPUT_REQUIRED) == "input-required"
    assert state_name(TaskState.TASK_STATE_COMPLETED) == "completed"

"""The playground on PostgreSQL, set up as compose.yaml sets it up: PSYCH_STORE a postgresql://
URL, the server and a worker as two processes on it. On a fresh database made for this module
on the test server (PSYCH_TEST_POSTGRES_DSN), and dropped after it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests._postgres import connect, test_dsn
from tests.playground._processes import Playground, running
from tests.playground._sse import events


async def _admin(statement: str) -> None:
    conn = await connect()
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def on_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Playground]:
    database = f"playground_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f"CREATE DATABASE {database}"))
    url = urlunsplit(urlsplit(test_dsn())._replace(path=f"/{database}"))
    env = {"PSYCH_STORE": url, "PLAYGROUND_DEMO_DELAY": "0.05"}
    try:
        with running(tmp_path_factory.mktemp("postgres"), env) as started:
            yield started
    finally:
        asyncio.run(_admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"))


def test_health_on_postgres_has_live_text(on_postgres: Playground) -> None:
    assert on_postgres.api.get("/api/health").json() == {
        "ok": True,
        "store": "postgresql",
        "model": "demo",
        "live_text": True,
    }
    names = [agent["name"] for agent in on_postgres.api.get("/api/agents").json()]
    assert names == ["order_check", "support"]


def test_publish_is_idempotent_on_postgres(on_postgres: Playground) -> None:
    spec = {"name": "pg-agent", "model": {"model": "demo"}, "ask_user": True}
    first = on_postgres.api.post("/api/agents", json={"kind": "agent", "spec": spec})
    assert (first.status_code, first.json()["created"]) == (201, True)
    again = on_postgres.api.post("/api/agents", json={"kind": "agent", "spec": spec})
    assert (again.status_code, again.json()["created"]) == (200, False)
    assert again.json()["version"] == first.json()["version"]


def test_chat_shows_the_words_as_the_model_writes_them(on_postgres: Playground) -> None:
    # The tool waits a second before the model answers: time for the screen to subscribe.
    run_id = on_postgres.run('wait_a_bit {"seconds": 1}')
    said = list(events(on_postgres.api, f"/api/runs/{run_id}/text"))
    *texts, end = said
    assert end.event == "end"
    assert end.json() == {"status": "completed"}
    kinds = [event.json()["kind"] for event in texts]
    assert kinds[-1] == "final"
    deltas = [event.json()["text"] for event in texts if event.json()["kind"] == "delta"]
    final = texts[-1].json()
    assert final["text"] == 'wait_a_bit returned: {"waited":1.0}'
    assert len(deltas) >= 2, kinds  # word by word, before the log had the message
    assert "".join(deltas) == final["text"]
    assert all(event.id is None for event in texts[:-1])
    assert texts[-1].id == str(final["seq"])
    thread = on_postgres.api.get(f"/api/runs/{run_id}/thread").json()
    assert [m["text"] for m in thread["messages"] if m["role"] == "assistant"] == [final["text"]]


def test_an_approval_and_the_report_on_postgres(on_postgres: Playground) -> None:
    run_id = on_postgres.run('refund {"order_id": "P1", "amount": 500}')
    detail = on_postgres.wait_for(run_id, "waiting")
    [pending] = detail["approvals"]
    assert (pending["tool"], pending["arguments"]) == ("refund", {"order_id": "P1", "amount": 500})
    waiting = on_postgres.api.get("/api/runs", params={"waiting": "approval"}).json()["items"]
    assert [run["run_id"] for run in waiting] == [run_id]
    decision = {"approve": True, "by": "ann", "arguments": {"order_id": "P1", "amount": 120}}
    approved = on_postgres.api.post(
        f"/api/runs/{run_id}/approvals/{pending['call_id']}", json=decision
    )
    assert approved.status_code == 202, approved.text
    on_postgres.wait_for(run_id, "completed")
    report = on_postgres.api.get(f"/api/runs/{run_id}/report").json()
    [refund] = report["tool_calls"]
    assert (refund["outcome"], refund["result"]) == (
        "succeeded",
        {"order_id": "P1", "refunded": 120.0},
    )
    assert report["totals"]["cost"] is None
    timeline = on_postgres.api.get(f"/api/runs/{run_id}/timeline").json()
    assert ("approval", "approved") in [(bar["kind"], bar["outcome"]) for bar in timeline["bars"]]

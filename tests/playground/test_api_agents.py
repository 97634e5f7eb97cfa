"""/api/agents against the running server: the catalog it seeds, publishing (new, repeated,
refused), history and diff."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from tests.playground._processes import Playground


def _agent(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "model": {"model": "demo"},
        "tools": [{"kind": "code", "name": "lookup_order"}],
        **fields,
    }


def _publish(playground: Playground, spec: Any, kind: str = "agent") -> Any:
    return playground.api.post("/api/agents", json={"kind": kind, "spec": spec})


def test_health_says_what_the_server_runs_on(playground: Playground) -> None:
    assert playground.api.get("/api/health").json() == {
        "ok": True,
        "store": "sqlite",
        "model": "demo",
        "live_text": False,
    }


def test_the_examples_are_published_at_first_start(playground: Playground) -> None:
    listed = {agent["name"]: agent for agent in playground.api.get("/api/agents").json()}
    examples = playground.api.get("/api/agents/examples").json()
    assert listed["support"]["kind"] == "agent"
    assert listed["order_check"]["kind"] == "workflow"
    support = playground.api.get("/api/agents/support").json()
    assert support["versions"][-1]["spec"] == examples["agent"]
    tools = {tool["name"]: tool for tool in examples["agent"]["tools"]}
    assert set(tools) == {"lookup_order", "refund", "fetch_page", "wait_a_bit"}
    assert tools["refund"]["requires_approval"] == {"path": "amount", "op": "gt", "value": 100}
    assert examples["agent"]["ask_user"] is True
    assert examples["agent"]["max_turns"] >= 2001
    names = [agent["name"] for agent in playground.api.get("/api/agents").json()]
    assert names == sorted(names)


def test_publishing_is_idempotent_by_version(playground: Playground) -> None:
    name = f"agent-{uuid.uuid4().hex[:8]}"
    first = _publish(playground, _agent(name))
    assert first.status_code == 201, first.text
    published = first.json()
    assert published["created"] is True
    assert published["version"].startswith("sha256:")
    again = _publish(playground, _agent(name))
    assert again.status_code == 200
    assert again.json() == {**published, "created": False}
    # The same spec, written differently (a default spelt out, keys in another order), is the
    # same version.
    spelt_out = {"max_turns": 10, **_agent(name)}
    assert _publish(playground, spelt_out).json()["version"] == published["version"]
    listed = {a["name"]: a for a in playground.api.get("/api/agents").json()}[name]
    assert (listed["versions"], listed["latest_version"]) == (1, published["version"])


def test_a_bad_spec_is_refused_with_the_path_of_each_problem_and_nothing_kept(
    playground: Playground,
) -> None:
    name = f"bad-{uuid.uuid4().hex[:8]}"
    spec = _agent(
        name, tools=[{"kind": "code", "name": "lookup_order"}, {"kind": "code", "name": ""}]
    )
    spec["max_turns"] = 0
    refused = _publish(playground, spec)
    assert refused.status_code == 422
    problems = {tuple(p["loc"]): p for p in refused.json()["detail"]}
    assert set(problems) == {("tools", 1, "name"), ("max_turns",)}
    assert problems[("max_turns",)]["type"] == "greater_than"
    unserved = _publish(playground, _agent(name, tools=[{"kind": "code", "name": "send_mail"}]))
    assert unserved.status_code == 422
    [problem] = unserved.json()["detail"]
    assert problem["loc"] == ["tools", 0, "name"]
    assert "no code tool named 'send_mail'" in problem["msg"]
    whole = _publish(playground, "not a spec")
    assert (whole.status_code, whole.json()["detail"][0]["loc"]) == (422, [])
    reserved = _publish(playground, _agent("schema"))
    assert (reserved.status_code, reserved.json()["detail"][0]["loc"]) == (422, ["name"])
    assert playground.api.get(f"/api/agents/{name}").status_code == 404


def test_a_name_keeps_its_kind(playground: Playground) -> None:
    flow = {
        "kind": "workflow",
        "name": "support",
        "steps": [{"kind": "map", "name": "m", "output": {"kind": "lit", "value": 1}}],
    }
    taken = _publish(playground, flow, kind="workflow")
    assert taken.status_code == 409
    assert "'support' is the name of a published agent" in taken.json()["detail"]


def test_history_newest_first_and_the_diff_of_two_versions(playground: Playground) -> None:
    name = f"history-{uuid.uuid4().hex[:8]}"
    first = _publish(playground, _agent(name)).json()["version"]
    edited = copy.deepcopy(_agent(name, instructions="Be brief."))
    edited["tools"][0]["name"] = "fetch_page"
    second = _publish(playground, edited).json()["version"]
    history = playground.api.get(f"/api/agents/{name}").json()
    assert history["kind"] == "agent"
    assert [v["version"] for v in history["versions"]] == [second, first]
    assert history["versions"][0]["spec"]["instructions"] == "Be brief."
    diff = playground.api.get(f"/api/agents/{name}/diff", params={"from": first, "to": second})
    assert diff.status_code == 200, diff.text
    assert diff.json() == {
        "from": first,
        "to": second,
        "changes": [
            {"path": "instructions", "op": "added", "before": None, "after": "Be brief."},
            {
                "path": "tools/0/name",
                "op": "changed",
                "before": "lookup_order",
                "after": "fetch_page",
            },
        ],
    }
    missing = playground.api.get(
        f"/api/agents/{name}/diff", params={"from": first, "to": "sha256:0"}
    )
    assert missing.status_code == 404
    assert missing.json()["detail"] == f"{name!r} has no published version sha256:0"


def test_unknown_names_and_the_schemas(playground: Playground) -> None:
    unknown = playground.api.get("/api/agents/nobody")
    assert unknown.status_code == 404
    assert unknown.json() == {"detail": "no agent or workflow named 'nobody' is published"}
    for kind, model, fields in (
        ("agent", "AgentSpec", {"name", "model", "tools"}),
        ("workflow", "WorkflowSpec", {"name", "steps"}),
    ):
        schema = playground.api.get("/api/agents/schema", params={"kind": kind}).json()
        # The specs nest (an agent tool holds an agent): the schema is a reference into $defs.
        assert schema["$ref"] == f"#/$defs/{model}"
        assert fields <= set(schema["$defs"][model]["properties"])

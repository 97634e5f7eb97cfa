"""Reading runs back through the running server: the log a page at a time, the report, the
timeline, the runs list and its filters, and a tool's hostile output handed over unchanged."""

from __future__ import annotations

import uuid

from psych_playground.demo_tools import HOSTILE_PAGE
from psych_playground.runs_query import encode_cursor
from tests.playground._processes import Playground


def test_the_log_comes_in_pages_with_no_gap_and_no_repeat(playground: Playground) -> None:
    run_id = playground.run("repeat 30 lookup_order")
    done = playground.wait_for(run_id, "completed")
    last_seq = done["status"]["last_seq"]
    assert last_seq > 90  # a model turn, a start and a result per call
    seqs: list[int] = []
    after: int | None = -1
    pages = 0
    while after is not None:
        page = playground.api.get(f"/api/runs/{run_id}/log", params={"after": after, "limit": 25})
        assert page.status_code == 200, page.text
        body = page.json()
        assert body["last_seq"] == last_seq
        assert len(body["records"]) <= 25
        seqs += [record["seq"] for record in body["records"]]
        after = body["next_after"]
        pages += 1
    assert seqs == list(range(last_seq + 1))
    assert pages == last_seq // 25 + 1
    first = playground.api.get(f"/api/runs/{run_id}/log", params={"limit": 1}).json()
    assert first["records"][0]["body"]["type"] == "run_admitted"
    assert first["records"][0]["body"]["input"] == "repeat 30 lookup_order"
    assert playground.api.get(f"/api/runs/{run_id}/log", params={"limit": 1001}).status_code == 422
    done_page = playground.api.get(f"/api/runs/{run_id}/log", params={"after": last_seq}).json()
    assert (done_page["records"], done_page["next_after"]) == ([], None)


def test_the_report_counts_every_call_and_never_prices_an_unknown_cost(
    playground: Playground,
) -> None:
    run_id = playground.run("repeat 4 wait_a_bit")
    playground.wait_for(run_id, "completed")
    report = playground.api.get(f"/api/runs/{run_id}/report").json()
    assert report["output"] == "Called wait_a_bit 4 times."
    assert [call["outcome"] for call in report["tool_calls"]] == ["succeeded"] * 4
    assert report["model_calls"] == 5
    totals = report["totals"]
    assert totals["cost"] is None  # the demo model has no price: unknown, never 0
    assert totals["usage"]["output"] > 0
    missing = playground.api.get("/api/runs/NOPE/report")
    assert (missing.status_code, missing.json()) == (
        404,
        {"detail": "no run NOPE in tenant 'default'"},
    )


def test_the_timeline_of_an_approved_refund(playground: Playground) -> None:
    run_id = playground.run('refund {"order_id": "A2", "amount": 150}')
    detail = playground.wait_for(run_id, "waiting")
    open_timeline = playground.api.get(f"/api/runs/{run_id}/timeline").json()
    approval = next(bar for bar in open_timeline["bars"] if bar["kind"] == "approval")
    assert (approval["end"], approval["outcome"], approval["lane"]) == (None, None, 3)
    call = detail["approvals"][0]["call_id"]
    playground.api.post(f"/api/runs/{run_id}/approvals/{call}", json={"approve": True, "by": "ann"})
    playground.wait_for(run_id, "completed")
    timeline = playground.api.get(f"/api/runs/{run_id}/timeline").json()
    kinds = [(bar["kind"], bar["outcome"]) for bar in timeline["bars"]]
    assert kinds.count(("attempt", "suspended")) == 1
    assert kinds.count(("attempt", "completed")) == 1
    assert ("approval", "approved") in kinds
    assert ("tool", "finished") in kinds
    assert [mark["kind"] for mark in timeline["marks"]][-1] == "end"
    assert timeline["end"] >= timeline["start"]
    assert all(bar["end"] is not None for bar in timeline["bars"])


def test_the_runs_list_filters_and_pages(playground: Playground) -> None:
    tiny = f"tiny-{uuid.uuid4().hex[:8]}"
    spec = {
        "name": tiny,
        "model": {"model": "demo"},
        "tools": [{"kind": "code", "name": "lookup_order", "safe_to_retry": True}],
        "max_turns": 1,
    }
    assert (
        playground.api.post("/api/agents", json={"kind": "agent", "spec": spec}).status_code == 201
    )
    # One model call is all a message may take: a call then an answer is one too many.
    failed = playground.run('lookup_order {"order_id": "A1"}', agent=tiny)
    done = [playground.run(f"hello {n}", agent=tiny) for n in range(5)]
    playground.wait_for(failed, "failed")
    for run_id in done:
        playground.wait_for(run_id, "completed")

    def listed(**params: str) -> list[str]:
        page = playground.api.get("/api/runs", params={"agent": tiny, **params})
        assert page.status_code == 200, page.text
        return [run["run_id"] for run in page.json()["items"]]

    assert listed() == [*reversed(done), failed]  # newest first
    # A form's empty fields filter nothing.
    assert listed(status="", waiting="", failed="", stuck="", q="", cursor="") == listed()
    assert listed(status="completed") == list(reversed(done))
    assert listed(failed="true") == [failed]
    assert listed(failed="true", status="completed") == []
    assert listed(waiting="any") == []
    assert listed(q=failed[:14].lower()) == [failed]
    assert listed(q=done[2]) == [done[2]]
    summary = playground.api.get("/api/runs", params={"q": failed}).json()["items"][0]
    assert (summary["agent"], summary["status"], summary["stuck"]) == (tiny, "failed", None)

    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = playground.api.get("/api/runs", params={"agent": tiny, **params}).json()
        seen += [run["run_id"] for run in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(page["items"]) == 2
    assert seen == [*reversed(done), failed]

    bad = playground.api.get("/api/runs", params={"cursor": "garbage"})
    assert bad.status_code == 422
    assert "cursor 'garbage' was not issued by this server" in bad.json()["detail"]
    forged = encode_cursor("not a position", None)  # well formed, but no store made it
    refused = playground.api.get("/api/runs", params={"cursor": forged})
    assert refused.status_code == 422
    assert f"cursor {forged!r} was not issued by this server" in refused.json()["detail"]
    assert playground.api.get("/api/runs", params={"status": "sleeping"}).status_code == 422


def test_hostile_tool_output_comes_back_as_data_unchanged(playground: Playground) -> None:
    run_id = playground.run('fetch_page {"url": "https://example.com"}')
    playground.wait_for(run_id, "completed")
    assert "\u202e" in HOSTILE_PAGE
    assert "\x1b[" in HOSTILE_PAGE
    assert "<script>" in HOSTILE_PAGE
    thread = playground.api.get(f"/api/runs/{run_id}/thread").json()
    tool = next(m for m in thread["messages"] if m["role"] == "tool")
    assert (tool["tool"], tool["text"]) == ("fetch_page", HOSTILE_PAGE)
    log = playground.api.get(f"/api/runs/{run_id}/log").json()["records"]
    finished = next(r for r in log if r["body"]["type"] == "tool_call_finished")
    assert finished["body"]["result"] == HOSTILE_PAGE
    report = playground.api.get(f"/api/runs/{run_id}/report").json()
    assert report["tool_calls"][0]["result"] == HOSTILE_PAGE
    response = playground.api.get(f"/api/runs/{run_id}/thread")
    assert response.headers["content-type"] == "application/json"


def test_the_ui_is_served_with_its_security_policy_and_api_paths_stay_json(
    playground: Playground,
) -> None:
    page = playground.api.get("/runs/SOMETHING?tab=log")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert playground.api.get("/api/nope").json() == {"detail": "no API route /api/nope"}
    rebinding = playground.api.get("/api/health", headers={"Host": "attacker.example"})
    assert rebinding.status_code == 400

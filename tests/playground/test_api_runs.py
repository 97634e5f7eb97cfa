"""Runs through the running server and worker: chat in threads, approvals (edited, denied),
questions to the user, a workflow with a human step, signals, and the errors each refusal
gives."""

from __future__ import annotations

import json
from typing import Any

from tests.playground._processes import Playground

REFUND_500 = 'please refund {"order_id": "A1", "amount": 500}'


def _approval_waiting(playground: Playground) -> tuple[str, dict[str, Any]]:
    run_id = playground.run(REFUND_500)
    detail = playground.wait_for(run_id, "waiting")
    return run_id, detail


def test_a_chat_thread_of_two_runs(playground: Playground) -> None:
    first = playground.run("hello")
    playground.wait_for(first, "completed")
    answer = playground.api.post(
        "/api/runs", json={"agent": "support", "message": "again", "continues": first}
    )
    assert answer.status_code == 202, answer.text
    started = answer.json()
    second = started["run_id"]
    support = playground.api.get("/api/agents/support").json()
    assert (started["agent"], started["version"]) == ("support", support["versions"][0]["version"])
    playground.wait_for(second, "completed")
    thread = playground.api.get(f"/api/runs/{second}/thread").json()
    assert thread["runs"] == [first, second]
    said = [(m["role"], m["text"], m["run_id"]) for m in thread["messages"]]
    assert said == [
        ("user", "hello", first),
        ("assistant", "You said: hello", first),
        ("user", "again", second),
        ("assistant", "You said: again", second),
    ]
    assert [m["seq"] for m in thread["messages"]][0::2] == [0, 0]
    assert playground.detail(first)["continued_by"] == second
    assert playground.detail(second)["continues"] == first
    # The same thread, read from its first run.
    assert playground.api.get(f"/api/runs/{first}/thread").json() == thread


def test_continuing_a_run_that_is_still_going_or_unknown_is_refused(playground: Playground) -> None:
    waiting, _ = _approval_waiting(playground)
    going = playground.api.post(
        "/api/runs", json={"agent": "support", "message": "more", "continues": waiting}
    )
    assert going.status_code == 409
    assert f"run {waiting} cannot be continued" in going.json()["detail"]
    unknown = playground.api.post(
        "/api/runs", json={"agent": "support", "message": "more", "continues": "NOPE"}
    )
    assert unknown.status_code == 404
    assert "run NOPE not found" in unknown.json()["detail"]
    playground.api.post(f"/api/runs/{waiting}/cancel", json={"reason": "test over"})
    playground.wait_for(waiting, "cancelled")


def test_a_refund_over_100_waits_and_is_approved_with_edited_arguments(
    playground: Playground,
) -> None:
    run_id, detail = _approval_waiting(playground)
    assert detail["status"]["waiting"] == "approval"
    [pending] = detail["approvals"]
    assert pending == {
        "call_id": pending["call_id"],
        "tool": "refund",
        "arguments": {"order_id": "A1", "amount": 500},
        "rule": "amount gt 100",
    }
    assert detail["status"]["waiting_for"] == [pending["call_id"]]
    call = pending["call_id"]
    decision = {"approve": True, "by": "ann", "arguments": {"order_id": "A1", "amount": 90}}
    approved = playground.api.post(f"/api/runs/{run_id}/approvals/{call}", json=decision)
    assert approved.status_code == 202, approved.text
    assert approved.json()["seq"] >= 1
    done = playground.wait_for(run_id, "completed")
    assert done["approvals"] == []
    report = playground.api.get(f"/api/runs/{run_id}/report").json()
    [refund] = report["tool_calls"]
    assert (refund["approved"], refund["decided_by"]) == (True, "ann")
    assert refund["edited_arguments"] == {"order_id": "A1", "amount": 90}
    assert refund["result"] == {"order_id": "A1", "refunded": 90.0}
    assert report["output"] == 'refund returned: {"order_id":"A1","refunded":90.0}'
    twice = playground.api.post(f"/api/runs/{run_id}/approvals/{call}", json=decision)
    assert twice.status_code == 409
    assert f"call {call} is not awaiting approval" in twice.json()["detail"]


def test_a_denied_refund_is_told_to_the_model(playground: Playground) -> None:
    run_id, detail = _approval_waiting(playground)
    call = detail["approvals"][0]["call_id"]
    with_arguments = {"approve": False, "by": "bob", "arguments": {"amount": 1}}
    refused = playground.api.post(f"/api/runs/{run_id}/approvals/{call}", json=with_arguments)
    assert refused.status_code == 422
    assert f"arguments edit call {call} when it is approved" in refused.json()["detail"]
    nobody = playground.api.post(f"/api/runs/{run_id}/approvals/{call}", json={"approve": False})
    assert nobody.status_code == 422  # who decides is required
    denied = playground.api.post(
        f"/api/runs/{run_id}/approvals/{call}",
        json={"approve": False, "by": "bob", "note": "too much"},
    )
    assert denied.status_code == 202, denied.text
    playground.wait_for(run_id, "completed")
    report = playground.api.get(f"/api/runs/{run_id}/report").json()
    [refund] = report["tool_calls"]
    assert (refund["outcome"], refund["reason"], refund["approved"]) == ("failed", "denied", False)
    assert "too much" in refund["error"]
    assert report["output"].startswith("refund returned: ")
    assert "too much" in report["output"]


def test_approving_what_does_not_wait_is_refused_naming_the_call(playground: Playground) -> None:
    run_id = playground.run("hello")
    playground.wait_for(run_id, "completed")
    answer = playground.api.post(
        f"/api/runs/{run_id}/approvals/9.9", json={"approve": True, "by": "ann"}
    )
    assert answer.status_code == 409
    assert answer.json()["detail"].startswith(f"run {run_id}: call 9.9 is not awaiting approval")
    missing = playground.api.post("/api/runs/NOPE/approvals/1.0", json={"approve": True, "by": "a"})
    assert missing.status_code == 404
    assert missing.json() == {"detail": "no run NOPE in tenant 'default'"}


def test_a_question_to_the_user_is_answered(playground: Playground) -> None:
    run_id = playground.run("please ask me something")
    detail = playground.wait_for(run_id, "waiting")
    [question] = detail["status"]["questions"]
    assert (question["question"], question["options"]) == ("Shall I go ahead?", ["yes", "no"])
    call = question["call_id"]
    waiting = playground.api.get("/api/runs", params={"waiting": "question"}).json()["items"]
    assert run_id in [run["run_id"] for run in waiting]
    approvals = playground.api.get("/api/runs", params={"waiting": "approval"}).json()["items"]
    assert run_id not in [run["run_id"] for run in approvals]
    wrong = playground.api.post(f"/api/runs/{run_id}/answers/{call}", json={"answer": "maybe"})
    assert wrong.status_code == 422
    assert f"question {call} takes one of ['yes', 'no']" in wrong.json()["detail"]
    elsewhere = playground.api.post(f"/api/runs/{run_id}/answers/1.7", json={"answer": "yes"})
    assert elsewhere.status_code == 409
    assert f"asks no question in 1.7 (it waits for: {call})" in elsewhere.json()["detail"]
    answered = playground.api.post(f"/api/runs/{run_id}/answers/{call}", json={"answer": "yes"})
    assert answered.status_code == 202, answered.text
    again = playground.api.post(f"/api/runs/{run_id}/answers/{call}", json={"answer": "yes"})
    assert again.status_code == 409  # an answer is single-use
    done = playground.wait_for(run_id, "completed")
    assert done["status"]["questions"] == []
    report = playground.api.get(f"/api/runs/{run_id}/report").json()
    assert report["output"] == "ask_user returned: yes"


def test_a_workflow_waits_for_a_person_then_replays_from_a_step(playground: Playground) -> None:
    refused = playground.api.post("/api/runs", json={"agent": "order_check", "message": "not json"})
    assert refused.status_code == 422
    assert "the input of workflow 'order_check' must be JSON text" in refused.json()["detail"]
    run_id = playground.run(json.dumps({"order_id": "A1"}), agent="order_check")
    detail = playground.wait_for(run_id, "waiting")
    assert detail["kind"] == "workflow"
    assert detail["status"]["waiting_for"] == ["confirm"]
    answered = playground.api.post(f"/api/runs/{run_id}/answers/confirm", json={"answer": "yes"})
    assert answered.status_code == 202, answered.text
    playground.wait_for(run_id, "completed")
    tree = playground.api.get(f"/api/runs/{run_id}/workflow").json()
    steps = {step["key"]: step["status"] for step in tree["steps"]}
    assert steps == {"lookup": "completed", "confirm": "completed", "refund": "completed"}
    replayed = playground.api.post(f"/api/runs/{run_id}/replay", json={"from_step": "refund"})
    assert replayed.status_code == 202, replayed.text
    again = replayed.json()["run_id"]
    playground.wait_for(again, "completed")
    copied = playground.api.get(f"/api/runs/{again}/workflow").json()
    assert {s["key"]: s["status"] for s in copied["steps"]}["lookup"] == "replayed"
    unknown_step = playground.api.post(f"/api/runs/{run_id}/replay", json={"from_step": "nope"})
    assert unknown_step.status_code == 409
    agent_run = playground.run("hello")
    not_a_workflow = playground.api.get(f"/api/runs/{agent_run}/workflow")
    assert not_a_workflow.status_code == 404
    assert f"run {agent_run}: it is a run of agent 'support'" in not_a_workflow.json()["detail"]


def test_cancel_interrupt_and_send(playground: Playground) -> None:
    run_id, _ = _approval_waiting(playground)
    empty = playground.api.post(f"/api/runs/{run_id}/interrupt", json={"message": ""})
    assert empty.status_code == 422
    queued = playground.api.post(
        f"/api/runs/{run_id}/send", json={"message": "and later", "queue": "next_run"}
    )
    assert queued.status_code == 202, queued.text
    bad_queue = playground.api.post(
        f"/api/runs/{run_id}/send", json={"message": "x", "queue": "someday"}
    )
    assert bad_queue.status_code == 422
    cancelled = playground.api.post(f"/api/runs/{run_id}/cancel", json={"reason": "changed mind"})
    assert cancelled.status_code == 202
    playground.wait_for(run_id, "cancelled")
    late = playground.api.post(f"/api/runs/{run_id}/interrupt", json={"message": "hello?"})
    assert late.status_code == 409
    assert late.json()["detail"] == (
        f"run {run_id} has ended (cancelled) and accepts no more signals"
    )
    # The message kept for the next run opens the run that continues this thread.
    follow = playground.run("now", continues=run_id)
    playground.wait_for(follow, "completed")
    said = [m["text"] for m in playground.api.get(f"/api/runs/{follow}/thread").json()["messages"]]
    assert said[-3:] == ["and later", "now", "You said: now"]


def test_admitting_a_run_of_something_unpublished_is_refused(playground: Playground) -> None:
    unknown = playground.api.post("/api/runs", json={"agent": "nobody", "message": "hi"})
    assert unknown.status_code == 404
    assert unknown.json() == {"detail": "no agent or workflow 'nobody' is published"}
    version = playground.api.post(
        "/api/runs", json={"agent": "support", "version": "sha256:0", "message": "hi"}
    )
    assert version.status_code == 404
    assert version.json() == {
        "detail": "no version sha256:0 of agent or workflow 'support' is published"
    }
    empty = playground.api.post("/api/runs", json={"agent": "support", "message": ""})
    assert empty.status_code == 422
    assert empty.json()["detail"][0]["loc"] == ["body", "message"]


def test_a_retried_request_with_an_idempotency_key_gets_the_same_run(
    playground: Playground,
) -> None:
    key = {"Idempotency-Key": f"order-{playground.run('hello')}"}  # a key no other test uses
    body = {"agent": "support", "message": "once only"}
    first = playground.api.post("/api/runs", json=body, headers=key)
    again = playground.api.post("/api/runs", json=body, headers=key)
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json() == first.json()
    other = playground.api.post("/api/runs", json={**body, "message": "another"}, headers=key)
    assert other.status_code == 409
    assert key["Idempotency-Key"] in other.json()["detail"]

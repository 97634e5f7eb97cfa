"""Following a run live through the running server: the records as server-sent events, a
disconnect and a reconnect with Last-Event-ID that loses nothing and repeats nothing, and the
assistant's words."""

from __future__ import annotations

from tests.playground._processes import Playground
from tests.playground._sse import events


def test_a_reconnect_with_last_event_id_gets_exactly_the_rest(playground: Playground) -> None:
    run_id = playground.run('repeat 15 wait_a_bit {"seconds": 0.1}')
    first = list(events(playground.api, f"/api/runs/{run_id}/events", limit=5))
    assert [event.event for event in first] == ["record"] * 5
    assert [event.id for event in first] == ["0", "1", "2", "3", "4"]
    assert [event.json()["seq"] for event in first] == [0, 1, 2, 3, 4]
    assert first[0].json()["body"]["type"] == "run_admitted"
    assert playground.detail(run_id)["status"]["status"] == "running"  # it goes on meanwhile
    # The tab closed while the run goes on; the browser comes back with the last id it saw.
    rest = list(
        events(
            playground.api, f"/api/runs/{run_id}/events?after=-1", headers={"Last-Event-ID": "4"}
        )
    )
    *records, end = rest
    assert end.event == "end"
    assert end.json() == {"status": "completed"}
    seqs = [int(event.id or -1) for event in records]
    assert seqs == list(range(5, 5 + len(records)))
    assert [event.json()["seq"] for event in records] == seqs
    assert records[-1].json()["body"]["type"] == "run_completed"
    last_seq = playground.detail(run_id)["status"]["last_seq"]
    assert seqs[-1] == last_seq
    # Coming back after the end: nothing more, and the end again.
    again = list(
        events(
            playground.api, f"/api/runs/{run_id}/events", headers={"Last-Event-ID": str(last_seq)}
        )
    )
    assert [event.event for event in again] == ["end"]
    # `after` starts the stream where a page of the log left off.
    tail = list(events(playground.api, f"/api/runs/{run_id}/events?after={last_seq - 2}"))
    assert [event.id for event in tail] == [str(last_seq - 1), str(last_seq), None]


def test_a_stream_of_an_unknown_run_or_a_bad_id_is_refused_before_it_starts(
    playground: Playground,
) -> None:
    missing = playground.api.get("/api/runs/NOPE/events")
    assert (missing.status_code, missing.json()) == (
        404,
        {"detail": "no run NOPE in tenant 'default'"},
    )
    run_id = playground.run("hello")
    bad = playground.api.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 422
    assert bad.json()["detail"] == "Last-Event-ID 'x' is not a seq this server sent"


def test_the_assistants_words_without_a_live_channel_are_the_final_texts(
    playground: Playground,
) -> None:
    run_id = playground.run('lookup_order {"order_id": "C3"}')
    texts = list(events(playground.api, f"/api/runs/{run_id}/text"))
    *said, end = texts
    assert end.event == "end"
    [final] = said  # a turn that only calls a tool says nothing
    assert final.event == "text"
    data = final.json()
    assert data == {
        "kind": "final",
        "run_id": run_id,
        "seq": data["seq"],
        "text": 'lookup_order returned: {"order_id":"C3","status":"shipped"}',
    }
    assert final.id == str(data["seq"])
    resumed = list(
        events(playground.api, f"/api/runs/{run_id}/text", headers={"Last-Event-ID": final.id})
    )
    assert [event.event for event in resumed] == ["end"]

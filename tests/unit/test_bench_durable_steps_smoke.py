"""The durable-step benchmark still works on the memory store with tiny sizes: its table and its
machine-readable last line carry every figure, the store-only figures (the raw floor with 32
connections, the recovery behind a queue) as n/a. No time is compared with a goal here (timed
tests flake); the recovery measure needs worker processes and a durable store, so it is tried
on SQLite in `test_bench_recovery`."""

from __future__ import annotations

import re
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from bench import durable_steps
from bench._agent import SCOPE
from bench._recovery import Recovery
from bench._stores import floor_runs_per_s, fresh_store
from psych_runtime import RunQuery


async def test_the_command_prints_every_figure_and_a_machine_readable_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["--store", "memory", "--rounds", "2", "--runs", "2", "--long", "40"]
    arguments += ["--rps-runs", "40"]
    monkeypatch.setattr(sys, "argv", ["durable_steps", *arguments, "--claims", "3"])
    await durable_steps.main()
    lines = capsys.readouterr().out.strip().splitlines()
    found = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    assert found["store"] == "memory"
    assert found["steps_per_run"] == "21"
    for key in ("per_step_ms", "ratio", "cpu_us_per_step", "cpu_calibration_us", "runs_per_s_32"):
        assert float(found[key]) > 0, key
    # The CPU per step, split at the store's append: the two parts add up to it.
    in_append, runtime = float(found["cpu_us_in_append"]), float(found["cpu_us_runtime"])
    assert in_append > 0
    assert runtime > 0
    assert in_append + runtime == pytest.approx(float(found["cpu_us_per_step"]), abs=0.25)
    assert 0 < float(found["in_flight_32"]) <= 32
    assert float(found["claim_p95_ms"]) >= float(found["claim_p50_ms"]) >= 0
    assert found["floor_runs_per_s_32"] == "n/a"
    assert found["recovery_s"] == "n/a"
    assert found["recovery_lease_s"] == "1.5"
    assert float(found["turn_ratio"]) > 0
    assert found["rps_runs"] == "40"
    assert float(found["append_ratio"]) >= 0
    for processes in (1, 2, 4):
        assert found[f"runs_per_s_{processes}p"] == "n/a", "the memory store has no processes"
    table = "\n".join(lines[:-1])
    assert re.search(r"raw floor runs/s, 32 connections at once +n/a", table)
    assert re.search(r"runs/s at 32: psych / raw floor +n/a", table)
    assert re.search(r"recovery behind 300 queued runs, lease 1.5 s: .* +n/a", table)


def test_the_raw_floor_in_flight_counts_runs_of_durable_commits(tmp_path: Path) -> None:
    rate = floor_runs_per_s(f"sqlite:///{tmp_path / 'floor.sqlite'}", 8, 3, 4)
    assert rate is not None
    assert rate > 0
    connection = sqlite3.connect(tmp_path / "floor.sqlite")
    try:
        rows = connection.execute("SELECT count(*), count(DISTINCT run_id) FROM floor").fetchone()
    finally:
        connection.close()
    assert rows == (24, 8)
    assert floor_runs_per_s("memory:", 8, 3, 4) is None


def test_the_recovery_rows_say_what_was_measured() -> None:
    recovery = Recovery(
        lease_s=1.5, expiry_to_resume_s=2.25, kill_to_resume_s=3.5, ahead=299, queue=300
    )
    rows = dict(durable_steps._recovery_rows(recovery, 300, 1.5))
    head = "recovery behind 300 queued runs, lease 1.5 s"
    assert rows == {
        f"{head}: lease expiry -> next attempt (s)": "2.25",
        f"{head}: SIGKILL -> next attempt (s)": "3.50",
        f"{head}: queued runs started before it": "299 of 300",
    }


async def test_the_warm_up_runs_are_served_before_the_clock_and_not_counted() -> None:
    # The memory store: the flavours check runs these tests without the SQLite store.
    cost = await durable_steps.per_step("memory:", 3, 2)
    assert cost.steps_per_run == 5, (
        "2 calls a run: 3 model turns and 2 results; the warm run left out"
    )
    async with fresh_store("memory:") as store:
        await durable_steps.warm_up(store, 4, 2)
        runs = await store.list_runs(SCOPE.tenant, RunQuery())
        assert [run.status for run in runs.items] == ["completed"] * 4


async def test_the_runs_per_second_measure_runs_as_many_runs_on_both_sides(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Psych's window and the floor's must hold the same number of runs, 32 at once: the
    # ratio between them is the figure the concurrency target is judged on.
    seen: list[tuple[str, int, int]] = []
    real_runs_per_second = durable_steps.runs_per_second

    async def psych_side(url: str, runs: int, calls: int, concurrency: int) -> tuple[float, float]:
        seen.append(("psych", runs, concurrency))
        return await real_runs_per_second(url, runs, calls, concurrency)

    def floor_side(url: str, runs: int, steps: int, connections: int) -> float | None:
        seen.append(("floor", runs, connections))
        return floor_runs_per_s(url, runs, steps, connections)

    monkeypatch.setattr(durable_steps, "runs_per_second", psych_side)
    monkeypatch.setattr(durable_steps, "floor_runs_per_s", floor_side)
    urls = iter(["memory:", f"sqlite:///{tmp_path / 'floor.sqlite'}"])
    measured = await durable_steps.runs_per_second_beside_floor(
        lambda _name: next(urls), rounds=1, calls=1, steps=3, runs=8
    )
    assert seen == [("psych", 8, 32), ("floor", 8, 32)]
    assert measured.floor_runs_per_s is not None
    assert measured.runs_per_s > 0
    assert measured.ratio == pytest.approx(measured.runs_per_s / measured.floor_runs_per_s)
    # 8 runs in 32 slots: never more than 8 at once, and some time with fewer (the claims).
    assert 0 < measured.in_flight < 8
    connection = sqlite3.connect(tmp_path / "floor.sqlite")
    try:
        runs = connection.execute("SELECT count(DISTINCT run_id) FROM floor").fetchone()[0]
    finally:
        connection.close()
    assert runs == 8


async def test_each_append_is_followed_by_the_idle_wait_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `--idle-us`: the process sleeps after each append, as a database's round trip makes it
    # wait, inside the window that the append's share of the CPU is timed over.
    slept: list[float] = []
    real_sleep = time.sleep

    def noted(seconds: float) -> None:
        slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", noted)
    cost = await durable_steps.per_step("memory:", 2, 1, idle_us=300)
    waits = [seconds for seconds in slept if seconds == pytest.approx(300e-6)]
    assert len(waits) == 2 * 3, "2 runs of 3 steps (2 model turns, 1 result): a wait after each"
    assert cost.ms >= 0.3, "each step waited 300 us"
    assert 0 < cost.cpu_in_append_us < cost.cpu_us


async def test_the_turn_ratio_is_the_median_of_several_long_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One long run on the memory store lasts a fraction of a second: a burst of load on the
    # machine during its late windows alone would read as a cost that grows with the log.
    measured = iter([(1.0, 1.5), (1.0, 1.0), (2.0, 2.1)])
    names: list[str] = []

    async def one_run(url: str, calls: int) -> tuple[float, float]:
        assert calls == 1000
        names.append(url)
        return next(measured)

    monkeypatch.setattr(durable_steps, "late_step_ratio", one_run)
    turns = await durable_steps.long_runs(lambda name: f"memory:{name}", 1000, 3)
    assert names == ["memory:long0", "memory:long1", "memory:long2"], "a fresh store each"
    assert turns.early_ms == 1.0
    assert turns.late_ms == 1.5
    assert turns.ratio == pytest.approx(1.05), "the median of the runs' own ratios"

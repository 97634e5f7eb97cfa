"""The benchmarks refuse, when they read their arguments, a number no measure can use, naming
the argument; and the least each accepts is one its measure can use."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

import pytest

from bench import durable_steps, thread_turns, workflow_steps


@pytest.mark.parametrize(
    ("module", "arguments", "said"),
    [
        (durable_steps, ["--store", "memory", "--runs", "0"], "argument --runs: 0 is too small"),
        (durable_steps, ["--store", "memory", "--long", "34"], "at least 35"),
        (durable_steps, ["--store", "memory", "--lease", "0"], "argument --lease: 0 is not a"),
        (durable_steps, ["--store", "memory", "--idle-us", "-1"], "argument --idle-us: -1"),
        (durable_steps, ["--store", "memory", "--calls", "ten"], "'ten' is not a whole number"),
        (workflow_steps, ["--store", "memory", "--long", "19"], "at least 20"),
        (workflow_steps, ["--store", "memory", "--rounds", "0"], "argument --rounds"),
        (thread_turns, ["--runs", "20"], "argument --runs: 20 is too small"),
    ],
)
async def test_a_number_no_measure_can_use_is_refused_before_anything_runs(
    module: object,
    arguments: list[str],
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    main: Callable[[], Awaitable[None]] = module.main  # type: ignore[attr-defined]
    monkeypatch.setattr(sys, "argv", ["bench", *arguments])
    with pytest.raises(SystemExit) as stopped:
        await main()
    assert stopped.value.code == 2  # argparse's usage error, before any store is opened
    assert said in capsys.readouterr().err


async def test_the_shortest_long_run_accepted_has_an_early_and_a_late_window() -> None:
    early, late = await durable_steps.late_step_ratio("memory:", durable_steps.MIN_LONG_TURNS)
    assert early > 0
    assert late > 0
    with pytest.raises(ValueError, match="too short"):
        await durable_steps.late_step_ratio("memory:", durable_steps.MIN_LONG_TURNS - 1)


async def test_the_late_loop_iteration_must_leave_the_early_one_its_own_iterations() -> None:
    least = workflow_steps.EARLY_ITERATION + workflow_steps.AROUND
    early, late = await workflow_steps.late_step_ratio("memory:", late=least)
    assert early > 0
    assert late > 0
    with pytest.raises(ValueError, match="would overlap"):
        await workflow_steps.late_step_ratio("memory:", late=least - 1)

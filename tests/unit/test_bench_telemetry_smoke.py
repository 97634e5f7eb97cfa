"""The telemetry benchmark still works: on the memory store with tiny sizes, each configuration
comes back with positive numbers, the "on" ones exported the spans the runs make, and a
configuration that exports nothing stops the benchmark instead of being reported. No time is
compared with a goal here (timed tests flake)."""

from __future__ import annotations

import dataclasses
import re
import sys

import pytest
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from bench import telemetry_cost

RUNS = 2
CALLS = 2
# A run of the benchmark agent with CALLS tool calls: one model turn per call plus the answer,
# each committed, and each tool result (2 * CALLS + 1 appends); one span for the run, one per
# model call and one per tool call (2 * CALLS + 2 spans).
STEPS_PER_RUN = 2 * CALLS + 1
SPANS_PER_RUN = 2 * CALLS + 2


@pytest.mark.parametrize("config", [telemetry_cost.ON, telemetry_cost.CONTENT])
async def test_a_traced_measure_is_positive_and_exported_every_span(config):
    measured = await telemetry_cost.measure("memory:", config, RUNS, CALLS)
    assert measured.ms_per_step > 0
    assert measured.cpu_us_per_step > 0
    assert measured.steps == RUNS * STEPS_PER_RUN
    assert measured.spans == RUNS * SPANS_PER_RUN


async def test_the_baseline_measure_is_positive_and_exports_nothing():
    measured = await telemetry_cost.measure("memory:", telemetry_cost.OFF, RUNS, CALLS)
    assert measured.ms_per_step > 0
    assert measured.cpu_us_per_step > 0
    assert measured.steps == RUNS * STEPS_PER_RUN
    assert measured.spans == 0


async def test_a_configuration_that_exports_no_spans_stops_the_benchmark():
    # The adapter runs, but a provider that samples nothing hands the exporter nothing: the
    # benchmark would time telemetry that produced no trace, and must refuse to.
    dark = dataclasses.replace(telemetry_cost.ON, name="dark", sampler=ALWAYS_OFF)
    with pytest.raises(SystemExit, match=r"\[dark\]: 2 runs exported no spans"):
        await telemetry_cost.measure("memory:", dark, RUNS, CALLS)


async def test_the_comparison_must_start_from_the_baseline(tmp_path):
    with pytest.raises(ValueError, match="start with OFF"):
        await telemetry_cost.compare("memory", (telemetry_cost.ON,), 1, RUNS, CALLS, tmp_path)


async def test_the_command_prints_its_table_and_a_machine_readable_line(monkeypatch, capsys):
    arguments = ["--store", "memory", "--rounds", "2", "--runs", str(RUNS), "--calls", str(CALLS)]
    monkeypatch.setattr(sys, "argv", ["telemetry_cost", *arguments])
    await telemetry_cost.main()
    lines = capsys.readouterr().out.strip().splitlines()
    labels = [telemetry_cost.LABELS[name] for name in ("off", "on", "content")]
    assert [line[: len(label)] for line, label in zip(lines[1:4], labels, strict=True)] == labels
    found = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    assert found["store"] == "memory"
    assert found["spans_per_run"] == str(SPANS_PER_RUN)
    for key in (
        "per_step_off_ms",
        "per_step_on_ms",
        "overhead_ratio",
        "cpu_us_off",
        "cpu_us_on",
        "per_step_content_ms",
        "cpu_us_content",
    ):
        assert float(found[key]) > 0, key
    # The overheads are differences of two timings: present and numeric, of either sign.
    for key in ("overhead_ms", "overhead_content_ms"):
        float(found[key])


async def test_without_content_the_line_has_no_content_measures(monkeypatch, capsys):
    arguments = ["--store", "memory", "--rounds", "1", "--runs", "1", "--calls", "1"]
    monkeypatch.setattr(sys, "argv", ["telemetry_cost", *arguments, "--no-content"])
    await telemetry_cost.main()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    found = dict(re.findall(r"(\w+)=(\S+)", last))
    assert found["spans_per_run"] == "4"
    assert "per_step_content_ms" not in found

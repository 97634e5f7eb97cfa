"""The README's performance table is built from the benchmark's last lines alone, says for each
target whether the run met it, and is written between the README's markers only."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bench import table

POSTGRES = (
    "store=postgres steps_per_run=21 per_step_ms=0.450 floor_ms=0.200 ratio=2.25 "
    "cpu_us_per_step=380.0 cpu_calibration_us=6.0 runs_per_s_32=230.0 in_flight_32=28.7 "
    "claim_p50_ms=2.10 claim_p95_ms=2.90 floor_runs_per_s_32=400.0 recovery_s=0.02 "
    "recovery_lease_s=1.5 append_ratio=1.25 turn_ratio=1.30 runs_per_s_1p=120.0 host_busy_1p=0.97 "
    "worker_cores_1p=0.95 runs_per_s_2p=110.0 host_busy_2p=0.99 worker_cores_2p=1.30 "
    "runs_per_s_4p=90.0 host_busy_4p=1.00 worker_cores_4p=1.40"
)
MEMORY = (
    "store=memory steps_per_run=21 per_step_ms=0.110 floor_ms=0.000 ratio=0.00 "
    "cpu_us_per_step=105.0 cpu_calibration_us=6.0 runs_per_s_32=450.0 claim_p50_ms=0.60 "
    "claim_p95_ms=0.70 floor_runs_per_s_32=n/a recovery_s=n/a recovery_lease_s=1.5 "
    "append_ratio=0.00 turn_ratio=1.10 runs_per_s_1p=n/a runs_per_s_2p=n/a runs_per_s_4p=n/a"
)


def test_each_target_is_judged_from_the_figures() -> None:
    verdicts = table.targets(table.figures_of(POSTGRES))
    assert verdicts == {
        "step at most 2x the floor": False,
        "append alone at most 1.3x the floor": True,
        "32 in flight at least 0.5x the floor's runs/s": True,
        "runs/s grows from 1 to 2 worker processes": False,
        "turn 1,000 at most 1.2x turn 10": False,
        "recovery within 2 leases of the expiry": True,
    }


def test_the_memory_store_is_judged_only_where_it_has_figures() -> None:
    verdicts = table.targets(table.figures_of(MEMORY))
    assert {name for name, ok in verdicts.items() if ok is not None} == {
        "turn 1,000 at most 1.2x turn 10"
    }


def test_the_table_carries_every_figure_and_the_verdicts() -> None:
    rows = [table.figures_of(MEMORY), table.figures_of(POSTGRES)]
    text = table.render(rows, dt.date(2026, 12, 5), "PostgreSQL 15 on this host")
    assert "Measured on 2026-12-05" in text
    assert "PostgreSQL 15 on this host" in text
    assert (
        "| postgres | 0.450 ms | 0.200 ms | 2.25 | 1.25 | 380.0 us | 230.0 (28.7) | 400.0 "
        "| 120.0 / 110.0 / 90.0 | 1.30 | 0.02 s (lease 1.5 s) | 2.10 / 2.90 ms |"
    ) in text
    # A line from before the benchmark said how many runs were held has the runs/s alone.
    assert "| memory | 0.110 ms | n/a | n/a | n/a | 105.0 us | 450.0 | n/a" in text
    assert "- postgres: step at most 2x the floor: not met; append alone" in text
    assert "- memory: turn 1,000 at most 1.2x turn 10: met." in text


def test_scale_out_says_where_growth_stops_and_whether_the_host_cpu_was_full() -> None:
    saturated = table.scale_out(table.figures_of(POSTGRES))
    assert saturated == (
        "stops growing after 1 worker process: with 2, the host's CPU was 99% busy: "
        "saturated on the host's CPU (1: 120 runs/s, host CPU 97% busy, workers 0.95 cores; "
        "2: 110 runs/s, host CPU 99% busy, workers 1.30 cores; 4: 90 runs/s, host CPU 100% "
        "busy, workers 1.40 cores)"
    )
    idle_host = (
        POSTGRES.replace("runs_per_s_2p=110.0", "runs_per_s_2p=200.0")
        .replace("host_busy_2p=0.99", "host_busy_2p=0.60")
        .replace("host_busy_4p=1.00", "host_busy_4p=0.65")
    )
    held = table.scale_out(table.figures_of(idle_host))
    assert held is not None
    assert held.startswith(
        "stops growing after 2 worker processes: with 4, the host's CPU was only 65% busy, "
        "so not the host's CPU: the database"
    )
    growing = idle_host.replace("runs_per_s_4p=90.0", "runs_per_s_4p=300.0")
    assert (table.scale_out(table.figures_of(growing)) or "").startswith(
        "grows to 4 worker processes (1: 120 runs/s"
    )
    assert table.scale_out(table.figures_of(MEMORY)) is None
    text = table.render([table.figures_of(POSTGRES)], dt.date(2026, 12, 5), "PostgreSQL 15")
    assert "  Scale-out stops growing after 1 worker process" in text


def test_the_table_is_written_between_the_markers_only(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{table.BEGIN}\nold table\n{table.END}\nafter\n")
    table.write(readme, "new table\n")
    assert readme.read_text() == f"before\n{table.BEGIN}\nnew table\n{table.END}\nafter\n"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="markers"):
        table.write(readme, "new table\n")

"""The README's performance table, from `bench.durable_steps` run for every store now.

    python -m bench.table                      # every store; print the table
    python -m bench.table --write README.md    # and put it between the README's markers
    python -m bench.table --stores sqlite postgres

Each store's benchmark runs in a process of its own, one after another (they would otherwise
share the machine), and the table is built from their machine-readable last lines only, so
what the README says is exactly what was measured, with the machine it was measured on and,
for each target of the performance goals, whether this run met it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import re
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from bench._stores import _mysql_connect_args, _postgres_url, bench_url, mysql_bench_url
from bench.durable_steps import STORES

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- bench.table: begin (python -m bench.table --write README.md) -->"
END = "<!-- bench.table: end -->"

type Figures = Mapping[str, str]
"""One store's last line, as its ``key=value`` pairs."""

STEP_TARGET = 2.0
"""A durable step at most this many raw floors (SQLite and PostgreSQL, on this kind of machine)."""
APPEND_TARGET = 1.3
"""The store's append alone at most this many raw floors."""
CONCURRENCY_TARGET = 0.5
"""With 32 runs in flight, at least this share of the floor's runs/s with 32 connections."""
TURN_TARGET = 1.2
"""A step at turn 1,000 at most this many steps at turn 10."""
RECOVERY_TARGET = 2.0
"""A crashed run behind a queue resumes within this many lease periods of its lease's expiry."""
SATURATED_BUSY = 0.9
"""A host whose cores were at least this busy during a scale-out measure had no CPU to give."""


def figures_of(line: str) -> dict[str, str]:
    """The ``key=value`` pairs of a benchmark's last line."""
    return dict(re.findall(r"(\w+)=(\S+)", line))


def measure(store: str, extra: Sequence[str]) -> dict[str, str]:
    """Run the benchmark for `store` (its table goes to stderr) and return its last line."""
    command = [sys.executable, "-m", "bench.durable_steps", "--store", store, *extra]
    print(f"$ {' '.join(command[1:])}", file=sys.stderr, flush=True)
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    sys.stderr.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"the benchmark for {store} failed with exit code {done.returncode}")
    return figures_of(done.stdout.strip().splitlines()[-1])


def _number(figures: Figures, key: str) -> float | None:
    value = figures.get(key, "n/a")
    return None if value == "n/a" else float(value)


def _met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "not met")


def targets(figures: Figures) -> dict[str, bool | None]:
    """Each target of the performance goals, for one store: met, not met, or None where the
    store has no such figure (the memory store has no floor, connections or processes)."""
    store = figures["store"]
    ratio = _number(figures, "ratio") if store != "memory" else None
    append = _number(figures, "append_ratio") if store != "memory" else None
    rate, floor = _number(figures, "runs_per_s_32"), _number(figures, "floor_runs_per_s_32")
    procs = [_number(figures, f"runs_per_s_{count}p") for count in (1, 2, 4)]
    recovery, lease = _number(figures, "recovery_s"), _number(figures, "recovery_lease_s")
    turn = _number(figures, "turn_ratio")
    return {
        f"step at most {STEP_TARGET:g}x the floor": None if ratio is None else ratio <= STEP_TARGET,
        f"append alone at most {APPEND_TARGET:g}x the floor": (
            None if append is None else append <= APPEND_TARGET
        ),
        f"32 in flight at least {CONCURRENCY_TARGET:g}x the floor's runs/s": (
            None if rate is None or floor is None else rate >= CONCURRENCY_TARGET * floor
        ),
        "runs/s grows from 1 to 2 worker processes": (
            None if procs[0] is None or procs[1] is None else procs[1] > procs[0]
        ),
        f"turn 1,000 at most {TURN_TARGET:g}x turn 10": (
            None if turn is None else turn <= TURN_TARGET
        ),
        f"recovery within {RECOVERY_TARGET:g} leases of the expiry": (
            None if recovery is None or lease is None else recovery <= RECOVERY_TARGET * lease
        ),
    }


def scale_out(figures: Figures) -> str | None:
    """Where runs/s stops growing with more worker processes, and why, for one store; None
    where the store has no scale-out figures.

    Growth stops at the first count of processes that does not beat the one before (or it
    grows to 4). The host's CPU busy share at that count (the processes that did not gain)
    says why: at `SATURATED_BUSY` or more, the added worker found no CPU left, the host's cores
    being shared by the workers and the database; below it, the database (or contention in it)
    held runs/s back.
    """
    counts = (1, 2, 4)
    rates = [
        rate for count in counts if (rate := _number(figures, f"runs_per_s_{count}p")) is not None
    ]
    if len(rates) < len(counts):
        return None
    busy = [_number(figures, f"host_busy_{count}p") for count in counts]
    cores = [_number(figures, f"worker_cores_{count}p") for count in counts]
    measured = "; ".join(
        f"{count}: {rate:g} runs/s"
        + ("" if share is None else f", host CPU {share:.0%} busy")
        + ("" if used is None else f", workers {used:.2f} cores")
        for count, rate, share, used in zip(counts, rates, busy, cores, strict=True)
    )
    stop = next(
        (index for index in range(1, len(counts)) if rates[index] <= rates[index - 1]), None
    )
    if stop is None:
        return f"grows to 4 worker processes ({measured})"
    last = stop - 1  # the most processes that still gained
    share = busy[stop]
    if share is None:
        why = "the host's CPU was not measured"
    elif share >= SATURATED_BUSY:
        why = f"the host's CPU was {share:.0%} busy: saturated on the host's CPU"
    else:
        why = (
            f"the host's CPU was only {share:.0%} busy, so not the host's CPU: the database "
            "(its commits or its locks) held it back"
        )
    plural = "es" if counts[last] > 1 else ""
    return (
        f"stops growing after {counts[last]} worker process{plural}: with {counts[stop]}, "
        f"{why} ({measured})"
    )


def machine() -> str:
    """The machine and the software measured, in one sentence."""
    cpu = platform.processor() or platform.machine()
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        names = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
    if names:
        cpu = names[0]
    with open("/proc/meminfo", encoding="utf-8") as info:
        kib = int(next(line for line in info if line.startswith("MemTotal")).split()[1])
    parts = [
        f"{os.cpu_count()} cores of {cpu}",
        f"{kib / 1024 / 1024:.0f} GiB",
        f"Linux {platform.release()}",
        f"Python {platform.python_version()}",
        f"SQLite {sqlite3.sqlite_version}",
    ]
    for label, distribution in (("asyncpg", "asyncpg"), ("moto", "moto")):
        try:
            parts.append(f"{label} {metadata.version(distribution)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(parts)


def servers(stores: Sequence[str]) -> str:
    """The database servers measured, by the version each reports (asked now)."""
    said: list[str] = []
    if "postgres" in stores:
        said.append(f"PostgreSQL {asyncio.run(_postgres_version())}")
    if "mysql" in stores:
        said.append(_mysql_version())
    if "dynamodb" in stores:
        said.append("DynamoDB as moto's server serves it")
    where = "on this host" if said else ""
    return f"{', '.join(said)} {where}".strip() or "no database server"


async def _postgres_version() -> str:
    import asyncpg

    dsn, _ = _postgres_url(bench_url("postgres", "version", Path(".")))
    connection = await asyncpg.connect(dsn)
    try:
        return str(await connection.fetchval("SHOW server_version")).split(" ")[0]
    finally:
        await connection.close()


def _mysql_version() -> str:
    import pymysql  # type: ignore[import-untyped]  # PyMySQL ships no type information

    args, _ = _mysql_connect_args(mysql_bench_url("version"))
    connection = pymysql.connect(**args)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            (version,) = cursor.fetchone()
    finally:
        connection.close()
    name = "MariaDB" if "mariadb" in str(version).lower() else "MySQL"
    return f"{name} {str(version).split('-')[0]}"


def _cell(figures: Figures, key: str, unit: str = "") -> str:
    value = figures.get(key, "n/a")
    return value if value == "n/a" else f"{value}{unit}"


def _with_held(figures: Figures) -> str:
    """The worker's runs/s with 32 slots, and how many runs it held in flight on average
    (a line from before the benchmark said so has the runs/s alone)."""
    rate, held = figures.get("runs_per_s_32", "n/a"), figures.get("in_flight_32")
    return rate if held is None or rate == "n/a" else f"{rate} ({held})"


def render(rows: Sequence[Figures], when: dt.date, servers: str) -> str:
    """The markdown the README holds between its markers."""
    lines = [
        f"Measured on {when.isoformat()} with `python -m bench.table`, one store after another "
        f"on {machine()}; {servers}. Ratios are medians of rounds that alternate psych and the "
        "raw floor, so load from elsewhere moves both alike.",
        "",
        "| store | per step | raw floor | ratio | append alone / floor | CPU per step "
        "| runs/s, 32 slots (runs held) | floor runs/s, 32 connections "
        "| runs/s, 1 / 2 / 4 processes "
        "| turn 1000 / turn 10 | recovery after lease expiry | claim p50 / p95 |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for figures in rows:
        processes = " / ".join(figures.get(f"runs_per_s_{n}p", "n/a") for n in (1, 2, 4))
        recovery = figures.get("recovery_s", "n/a")
        lease = figures.get("recovery_lease_s", "")
        lines.append(
            f"| {figures['store']} | {_cell(figures, 'per_step_ms', ' ms')} "
            f"| {_cell(figures, 'floor_ms', ' ms') if figures['store'] != 'memory' else 'n/a'} "
            f"| {figures['ratio'] if figures['store'] != 'memory' else 'n/a'} "
            f"| {figures.get('append_ratio', 'n/a') if figures['store'] != 'memory' else 'n/a'} "
            f"| {_cell(figures, 'cpu_us_per_step', ' us')} "
            f"| {_with_held(figures)} "
            f"| {figures.get('floor_runs_per_s_32', 'n/a')} | {processes} "
            f"| {figures.get('turn_ratio', 'n/a')} "
            f"| {recovery if recovery == 'n/a' else f'{recovery} s (lease {lease} s)'} "
            f"| {figures.get('claim_p50_ms', 'n/a')} / {figures.get('claim_p95_ms', 'n/a')} ms |"
        )
    lines += ["", "Targets (each store's row above, this run):", ""]
    for figures in rows:
        verdicts = targets(figures)
        said = "; ".join(f"{name}: {_met(ok)}" for name, ok in verdicts.items() if ok is not None)
        lines.append(f"- {figures['store']}: {said or 'no target applies'}.")
        scaled = scale_out(figures)
        if scaled is not None:
            lines.append(f"  Scale-out {scaled}.")
    return "\n".join(lines) + "\n"


def write(readme: Path, table: str) -> None:
    """Replace what is between the README's markers with `table`."""
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme} has no {BEGIN!r} ... {END!r} markers to write between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--write", type=Path, help="the README to write the table into")
    parser.add_argument(
        "--lines", type=Path, help="build from saved last lines (one per store) instead"
    )
    args, extra = parser.parse_known_args()
    if args.lines is not None:
        rows = [figures_of(line) for line in args.lines.read_text().splitlines() if line]
    else:
        rows = [measure(store, extra) for store in args.stores]
    table = render(rows, dt.date.today(), servers([row["store"] for row in rows]))
    print(table)
    if args.write is not None:
        write(args.write, table)


if __name__ == "__main__":
    main()

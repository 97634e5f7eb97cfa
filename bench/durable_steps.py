"""What a durable step costs, against the raw floor of the same store, measured in one run.

    python -m bench.durable_steps --store memory|sqlite|postgres|mysql|dynamodb [--result-bytes N]

A run of the benchmark agent makes 10 tool calls, one per model turn, then answers: 21 durable
steps (11 model turns, each committed with the starts of its calls or with the run's end, and
10 tool results). The floor is one INSERT and COMMIT per step with the same durability settings
(`synchronous=FULL` on SQLite; one autocommit INSERT on a server database, one PutItem on
DynamoDB), on the same server. The step, the floor and a bare `store.append` (no runtime
around it: what the store itself costs) are measured in alternating rounds (`--rounds`), and
each is the median over the rounds, so load from elsewhere on the machine moves them alike.
Every measure is timed warm, as the floors are (their connections open and their statement
prepared before the clock starts): the store has served runs untimed first (`warm_up`: one
run before the per-step measure, one at each of the worker's slots before the runs/s one), so
opening the pool's connections and preparing statements on them is not counted.
Each tool result is a few bytes of JSON; `--result-bytes N` makes the per-step measure's
results about N bytes (rows of a listing), for what a step costs with real tools' results.
The claim latency is the time from `dispatch` to the first record an idle worker writes (its
`AttemptStarted`), with the worker in its own process polling once a second, so what wakes it
is the store's notification (or its polling, where it has none).

Throughput: runs per second of one worker with 32 runs in flight, next to the raw floor's with
32 connections in flight (on the same server or file, in the same invocation; a floor run is
as many INSERT and COMMIT as a benchmark run has durable steps, on a connection of its own;
SQLite lets one of the 32 write at a time; three alternating rounds, medians), each over
`--rps-runs` runs (320: ten at each of the 32 slots, so that filling the slots at the start
and draining them at the end are a small share of the window; beside it, how many runs the
worker really held in flight on average, `bench._in_flight`), then with 1, 2
and 4 worker processes of 32 runs in flight each, sharing 320 runs (a second process adds a
process, not concurrency). Recovery (`bench._recovery`): a worker process is killed
(SIGKILL) in the middle of a run held with a short lease (`--lease`), `--queue` runs are
admitted behind it, and a fresh worker process serves them; the figure is the time from the
killed run's lease expiry to its next `AttemptStarted`. A claim takes a run whose lease
expired before any other, so the killed run should not wait behind the queue (the table says
how many queued runs started first). The memory store has no connections and no processes:
n/a there. The last line is machine-readable:

    store=NAME steps_per_run=21 per_step_ms=X floor_ms=Y ratio=Z cpu_us_per_step=C
        cpu_us_in_append=CA cpu_us_runtime=CR cpu_calibration_us=U runs_per_s_32=W
        in_flight_32=I claim_p50_ms=A claim_p95_ms=B
        floor_runs_per_s_32=F recovery_s=R recovery_lease_s=L append_ratio=P
        turn_ratio=T rps_runs=M runs_per_s_1p=N1 host_busy_1p=H1 worker_cores_1p=K1
        (and the same for 2p and 4p)                                      (all on one line)

Beside each scale-out figure: how busy the host's cores were over the timed window and how
many cores the worker processes used (`bench._host_cpu`), which tell a host saturated on CPU
from a database that has no more to give.

`python -m bench.table` runs this for every store and writes the README's performance table
from those lines.

The CPU per step is this process's CPU time (`time.process_time`) over the per-step measure,
divided by its steps: on the memory store, the runtime's own cost. Machines differ, so it is
printed next to a calibration unit (`bench._cpu.calibration_us`: a fixed piece of the kind of
Python work a step does, timed in the same rounds), and as their quotient, which is what to
compare between machines. `python -m bench.against_ref --ref REV` compares both figures with an
earlier commit's, side by side in one invocation. The CPU per step is also split at the store's
append: the CPU while a step's `store.append` was awaited (the store's client, and the event
loop until the append returned) and the rest, the runtime's own work. The same runtime code
can cost more on a database store than on the memory store: a round trip makes the process
wait, and on some virtual machines the code that runs after a wait costs two or three times
what it costs back to back. `--idle-us N` shows it apart: each append is followed by an idle
wait of N microseconds, so on the memory store the runtime's own CPU is measured with the
process sleeping between steps as it does on a database store, and compared with the figure
without.

Server stores read their server from the environment: PSYCH_BENCH_POSTGRES_DSN (else
PSYCH_TEST_POSTGRES_DSN, else the server `scripts/dev-services.sh start` brings up). Each
measure uses a fresh schema (or file, or table), removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from bench import _host_cpu as host_cpu
from bench._agent import SCOPE, StepModel, admit_runs, bench_spec, step, step_returning
from bench._arguments import at_least, not_negative, positive, seconds, zero_or_more
from bench._cpu import calibration_us
from bench._in_flight import mean_in_flight, spans
from bench._recovery import Recovery, recovery_behind_queue
from bench._stores import bench_url, count_appends, discard, floor_ms, floor_runs_per_s, fresh_store
from psych_runtime import RunQuery, Runtime, Worker, dispatch
from psych_runtime.ports import Batch, RunIndex, Store
from psych_runtime.records import AttemptStarted, Record, ToolCallFinished

ROOT = Path(__file__).resolve().parents[1]
STORES = ("memory", "sqlite", "postgres", "mysql", "dynamodb")
IN_FLIGHT = 32
"""Runs at once in the runs/s measure, and connections of the floor's."""
RPS_RUNS = 10 * IN_FLIGHT
"""Runs in each round of the runs/s measure, psych's and the floor's: ten at each slot. A
worker fills its slots one claim at a time and its runs end out of step, so with three at
each slot (96) it held about 25 runs in flight on average over the window, where the floor's
streams, which all start at once and end together, held 32; with ten, about 29."""
PROCESS_CONCURRENCY = IN_FLIGHT
"""Runs at once in each worker process of the scale-out measure: as many as the one worker
of the runs/s measure holds, so a second process adds a process, not concurrency."""
RECOVERY_CONCURRENCY = 8
"""Runs at once in the worker that serves the queue in the recovery measure."""
SCALE_OUT_RUNS = 320
"""Runs the worker processes of the scale-out measure share: more than 4 processes hold."""
LONG_RUNS = 3
"""Long runs in the turn 1,000 / turn 10 measure: its figures are their medians."""
WINDOW_STEPS = 20
"""Steps in each window a long run's step time is measured over (ten turns)."""
WINDOWS = 10
"""Windows at each end of a long run (fewer when the run is too short for ten)."""
LEAD_STEPS = 20
"""Steps at a long run's start left out of its early windows (the run's first turns)."""
TAIL_STEPS = 10
"""Steps at a long run's end left out of its late windows (its answer and the run's end)."""
MIN_LONG_TURNS = (LEAD_STEPS + TAIL_STEPS + 2 * WINDOW_STEPS) // 2
"""The fewest turns (tool calls) of a long run with one early and one late window: a run of
N calls makes 2N + 1 appends (each call's start and its result, then the answer)."""


async def warm_up(store: Store, runs: int, calls: int) -> None:
    """Drive `runs` runs at once through a worker of their own before a measure, untimed.

    The floors are timed on connections already open, each with its statement prepared, and
    so is psych: on a fresh store the first runs open the pool's connections and prepare each
    statement on each of them, a one-time cost that a short window counts in full."""
    await admit_runs(store, runs, calls)
    runtime = Runtime(model=StepModel(calls), tools=[step])
    await Worker(store, runtime, concurrency=runs, poll_interval=0.01).run_until_idle()


@dataclass(frozen=True, slots=True)
class StepCost:
    """The per-step measure of one round: a durable step's time and this process's CPU
    (`time.process_time`), split at the store's append."""

    ms: float
    steps_per_run: float
    cpu_us: float
    """CPU per step: the runtime's own and the store client's (the runtime's alone on the
    memory store)."""
    cpu_in_append_us: float
    """CPU per step while its `store.append` was awaited: the store's client and the event
    loop's work until the append returned (and the `idle_us` wait, when there is one)."""

    @property
    def cpu_runtime_us(self) -> float:
        """CPU per step outside the append: the runtime's own work (and the claims')."""
        return self.cpu_us - self.cpu_in_append_us


async def per_step(
    url: str, runs: int, calls: int, result_bytes: int = 0, idle_us: float = 0
) -> StepCost:
    """A durable step's cost over `runs` runs driven one at a time, each tool result about
    `result_bytes` of JSON (0: a few bytes).

    With `idle_us`, each append is followed by an idle wait of that many microseconds, as a
    database's round trip makes the process wait: on the memory store, what the runtime's
    own CPU becomes when the process sleeps between steps, against what it is back to back
    (on some virtual machines the code that runs after a wait costs two or three times
    more)."""
    async with fresh_store(url) as store:
        await warm_up(store, 1, calls)
        await admit_runs(store, runs, calls)
        stamps: list[float] = []
        in_append = [0.0]
        count_appends(store, stamps, cpu=in_append, idle_s=idle_us / 1e6)
        runtime = Runtime(model=StepModel(calls), tools=[step_returning(result_bytes)])
        worker = Worker(store, runtime, poll_interval=0.01)
        started, cpu = time.perf_counter(), time.process_time()
        await worker.run_until_idle()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    steps = len(stamps)
    return StepCost(
        elapsed * 1000 / steps, steps / runs, cpu * 1e6 / steps, in_append[0] * 1e6 / steps
    )


async def append_only(url: str, count: int) -> float:
    """ms per append of one tool result to a claimed run, with no runtime around it: what the
    store itself adds to a step."""
    async with fresh_store(url) as store:
        run_id = await dispatch(store.scoped(SCOPE), bench_spec(1), "appends")
        claim = await store.claim("bench", dt.timedelta(minutes=10), run_id=run_id)
        assert claim is not None, "the benchmark run could not be claimed"
        now = dt.datetime.now(dt.UTC)
        records = [
            Record(
                run_id=run_id,
                seq=claim.record.seq + 1 + index,
                attempt=claim.attempt,
                at=now,
                body=ToolCallFinished(call_id="2.0", result={"index": index, "done": 1}),
            )
            for index in range(count + 20)
        ]
        running = RunIndex(status="running")
        batches = [Batch((record,), f"b{record.seq}", running) for record in records]
        for batch in batches[:20]:
            await store.append(run_id, claim.attempt, batch)
        started = time.perf_counter()
        for batch in batches[20:]:
            await store.append(run_id, claim.attempt, batch)
        return (time.perf_counter() - started) * 1000 / count


async def runs_per_second(url: str, runs: int, calls: int, concurrency: int) -> tuple[float, float]:
    """(runs per second, runs in flight on average) for one in-process worker driving
    `runs` runs, `concurrency` at once (`bench._in_flight`, read from the runs' logs after the
    window: fewer than `concurrency` while it fills its slots, between a run's end and the
    next claim's answer, and at the end)."""
    async with fresh_store(url) as store:
        await warm_up(store, concurrency, calls)
        run_ids = await admit_runs(store, runs, calls)
        worker = Worker(
            store,
            Runtime(model=StepModel(calls), tools=[step]),
            concurrency=concurrency,
            poll_interval=0.01,
        )
        started, started_at = time.perf_counter(), dt.datetime.now(dt.UTC)
        await worker.run_until_idle()
        elapsed, ended_at = time.perf_counter() - started, dt.datetime.now(dt.UTC)
        held = mean_in_flight(await spans(store, run_ids), started_at, ended_at)
        return runs / elapsed, held


@dataclass(frozen=True, slots=True)
class BesideFloor:
    """The runs/s measure: medians over its rounds (the floor's None on the memory store)."""

    runs_per_s: float
    in_flight: float
    floor_runs_per_s: float | None
    ratio: float | None


async def runs_per_second_beside_floor(
    url: Callable[[str], str], rounds: int, calls: int, steps: int, runs: int = RPS_RUNS
) -> BesideFloor:
    """Runs/s of one worker with `IN_FLIGHT` slots over `runs` runs, the runs it held in flight
    on average, the raw floor's runs/s with as many connections and runs, and their ratio, in
    alternating rounds on fresh stores named by `url`: the medians of the rounds' figures and
    ratios. The floor's run is `steps` INSERT and COMMIT."""
    rates: list[float] = []
    held: list[float] = []
    floors: list[float] = []
    for index in range(rounds):
        rate, in_flight = await runs_per_second(url(f"rps{index}"), runs, calls, IN_FLIGHT)
        rates.append(rate)
        held.append(in_flight)
        floor = floor_runs_per_s(url(f"floor32_{index}"), runs, steps, IN_FLIGHT)
        if floor is not None:
            floors.append(floor)
    rate, in_flight = statistics.median(rates), statistics.median(held)
    if not floors:
        return BesideFloor(rate, in_flight, None, None)
    ratios = [rate / floor for rate, floor in zip(rates, floors, strict=True)]
    return BesideFloor(rate, in_flight, statistics.median(floors), statistics.median(ratios))


@dataclass(frozen=True, slots=True)
class LongRuns:
    """The turn 1,000 / turn 10 measure over several long runs: medians."""

    early_ms: float
    late_ms: float
    ratio: float
    """The median of each run's own late / early ratio."""


async def long_runs(url: Callable[[str], str], calls: int, runs: int) -> LongRuns:
    """`late_step_ratio` over `runs` long runs of `calls` turns, one after another, each on a
    fresh store named by `url`. One run on the memory store lasts a fraction of a second, so
    a burst of load from elsewhere on the machine can fall on its late windows alone and read
    as a cost that grows with the log; the median of several runs' ratios does not."""
    measured = [await late_step_ratio(url(f"long{index}"), calls) for index in range(runs)]
    return LongRuns(
        statistics.median(early for early, _ in measured),
        statistics.median(late for _, late in measured),
        statistics.median(late / early for early, late in measured),
    )


async def late_step_ratio(url: str, calls: int) -> tuple[float, float]:
    """Step time near the start and near the end of one long run of `calls` turns (ms).

    Each is the median of the mean step time over windows of 20 consecutive steps (ten
    turns: every window holds model turns and tool results alike, whose costs differ), ten
    windows after the first 20 steps and ten before the last 10 (fewer in a short run):
    robust to a stray pause, and a cost that grows with the log shows in its turns."""
    if calls < MIN_LONG_TURNS:
        raise ValueError(
            f"a run of {calls} turns is too short to compare its start and end "
            f"(at least {MIN_LONG_TURNS})"
        )
    async with fresh_store(url) as store:
        await dispatch(store.scoped(SCOPE), bench_spec(calls), "a long run")
        stamps: list[float] = []
        count_appends(store, stamps)
        await Worker(store, Runtime(model=StepModel(calls), tools=[step])).run_until_idle()
    width = WINDOW_STEPS
    # Fewer windows for a short run: as many as fit twice between the lead and the tail.
    count = min(WINDOWS, (len(stamps) - LEAD_STEPS - TAIL_STEPS) // (2 * width))
    if count < 1:  # a run makes fewer appends a turn than MIN_LONG_TURNS counts on
        raise ValueError(f"a run of {calls} turns made only {len(stamps)} appends")
    early_start, late_start = LEAD_STEPS, len(stamps) - TAIL_STEPS - width * count

    def windows(start: int) -> float:
        means = [
            (stamps[at + width] - stamps[at]) / width
            for at in range(start, start + width * count, width)
        ]
        return statistics.median(means) * 1000

    return windows(early_start), windows(late_start)


@dataclass(frozen=True, slots=True)
class ScaleOut:
    """Runs per second with some worker processes, and where the host's CPU went meanwhile."""

    runs_per_s: float
    host: host_cpu.HostUse


async def process_runs_per_second(url: str, processes: int, runs: int, calls: int) -> ScaleOut:
    """Runs per second with `processes` worker processes sharing the store, and the host's
    CPU use over the same window."""
    async with fresh_store(url) as store:
        await admit_runs(store, runs, calls)
        elapsed, host = await asyncio.to_thread(_run_worker_processes, url, processes, calls)
    return ScaleOut(runs / elapsed, host)


def _run_worker_processes(url: str, processes: int, calls: int) -> tuple[float, host_cpu.HostUse]:
    """Seconds for `processes` worker processes to drain the store, from the moment all of
    them are connected and told to start (their start-up is not counted), and the host's CPU
    use over that window."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench._worker_process",
                url,
                str(calls),
                str(PROCESS_CONCURRENCY),
                "race",
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    with contextlib.ExitStack() as pipes:
        for worker in workers:
            pipes.enter_context(worker)  # closes its pipes and waits for it, whatever happens
        for worker in workers:
            assert worker.stdout is not None
            line = worker.stdout.readline()
            if line != "ready\n":
                raise SystemExit(f"a benchmark worker process did not start (it said {line!r})")
        before = host_cpu.snapshot()
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.close()
        for worker in workers:
            if worker.wait(timeout=600) != 0:
                raise SystemExit(f"a worker process failed with exit code {worker.returncode}")
        after = host_cpu.snapshot()
        used = 0.0
        for worker in workers:
            assert worker.stdout is not None
            said = worker.stdout.read().split()  # "cpu SECONDS", once drained
            if said[:1] != ["cpu"]:
                raise SystemExit(f"a benchmark worker process did not say its CPU ({said!r})")
            used += float(said[1])
        return after.at - before.at, host_cpu.between(before, after, used)


async def claim_latency(url: str, trials: int) -> tuple[float, float]:
    """(p50, p95) ms from `dispatch` to the `AttemptStarted` an idle worker writes.

    The worker runs in a process of its own (in this one for the memory store) and polls
    once a second; each run answers at once, and the next is dispatched once the worker is
    idle again. Both times are read on this host's clock (a server store's database on
    another host would add its clock's offset).
    """
    async with fresh_store(url) as store, _idle_worker(url, store):
        scoped = store.scoped(SCOPE)
        spec = bench_spec(0)
        await _first_record(store, await dispatch(scoped, spec, "warm-up"))
        latencies: list[float] = []
        for index in range(trials):
            await _until_ended(store, scoped.tenant)
            await asyncio.sleep(random.uniform(0.02, 0.06))  # the worker waits for work again
            started = time.time()
            run_id = await dispatch(scoped, spec, f"claim {index}")
            record = await _first_record(store, run_id)
            latencies.append((record.at.timestamp() - started) * 1000)
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    return statistics.median(latencies), p95


@contextlib.asynccontextmanager
async def _idle_worker(url: str, store: Store) -> AsyncIterator[None]:
    if url == "memory:":
        worker = Worker(store, Runtime(model=StepModel(0), tools=[step]))
        task = asyncio.create_task(worker.run())
        try:
            yield
        finally:
            worker.stop()
            await task
        return
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._worker_process",
        url,
        "0",
        "1",
        "serve",
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await process.stdout.readline()
        if line != b"ready\n":
            raise SystemExit(f"the benchmark worker did not start (it said {line!r})")
        yield
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


async def _first_record(store: Store, run_id: str) -> Record:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log = await store.read(run_id, after_seq=0, limit=1)
        if log and isinstance(log[0].body, AttemptStarted):
            return log[0]
        await store.wait(run_id, 0, timeout=1.0)
    raise SystemExit(f"run {run_id} was not claimed within 30 s")


async def _until_ended(store: Store, tenant: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        busy = [
            row
            for status in ("queued", "running")
            for row in (await store.list_runs(tenant, RunQuery(status=status))).items
        ]
        if not busy:
            return
        await asyncio.sleep(0.005)
    raise SystemExit("the benchmark worker did not finish its runs within 30 s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=STORES, required=True)
    parser.add_argument("--runs", type=positive, default=40, help="runs for the per-step measure")
    parser.add_argument(
        "--rounds", type=positive, default=5, help="alternating rounds of step, floor and append"
    )
    parser.add_argument("--calls", type=positive, default=10, help="tool calls per run")
    parser.add_argument(
        "--result-bytes",
        type=zero_or_more,
        default=0,
        help="JSON bytes of each tool result in the per-step measure (0: a few bytes)",
    )
    parser.add_argument(
        "--idle-us",
        type=not_negative,
        default=0,
        help="an idle wait after each append in the per-step measure (us; 0: none)",
    )
    parser.add_argument(
        "--long",
        type=at_least(MIN_LONG_TURNS),
        default=1000,
        help=f"turns of each long run (at least {MIN_LONG_TURNS})",
    )
    parser.add_argument("--claims", type=positive, default=50, help="trials of the claim latency")
    parser.add_argument(
        "--rps-runs",
        type=positive,
        default=RPS_RUNS,
        help="runs in each round of the runs/s measure",
    )
    parser.add_argument(
        "--queue",
        type=zero_or_more,
        default=300,
        help="runs admitted behind the killed one (recovery)",
    )
    parser.add_argument(
        "--lease", type=seconds, default=1.5, help="the lease in the recovery measure (s)"
    )
    args = parser.parse_args()

    urls: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)

        def url(name: str) -> str:
            urls.append(bench_url(args.store, name, workdir))
            return urls[-1]

        try:
            # The step, the floor and the bare append are measured in alternating rounds, so
            # that all three see the same machine (other work on it moves all of them alike);
            # each figure is the median over the rounds, the ratios medians of per-round ratios.
            rounds = args.rounds
            per_round = max(args.runs // rounds, 1)
            steps_ms, floors, appends, ratios, append_ratios = [], [], [], [], []
            costs: list[StepCost] = []
            calibrations = []
            for index in range(rounds):
                calibrations.append(calibration_us())
                cost = await per_step(
                    url(f"steps{index}"), per_round, args.calls, args.result_bytes, args.idle_us
                )
                costs.append(cost)
                one_step, steps = cost.ms, cost.steps_per_run
                count = int(per_round * steps)
                folder = workdir / f"round{index}"
                folder.mkdir()
                one_floor = floor_ms(url(f"floor{index}"), count, folder)
                one_append = await append_only(url(f"appends{index}"), count)
                steps_ms.append(one_step)
                floors.append(one_floor)
                appends.append(one_append)
                ratios.append(one_step / one_floor)
                append_ratios.append(one_append / one_floor)
            step_ms, floor = statistics.median(steps_ms), statistics.median(floors)
            append_ms, ratio = statistics.median(appends), statistics.median(ratios)
            cpu_us, calibration = (
                statistics.median(cost.cpu_us for cost in costs),
                statistics.median(calibrations),
            )
            cpu_in_append = statistics.median(cost.cpu_in_append_us for cost in costs)
            cpu_runtime = cpu_us - cpu_in_append  # the rest, so that the two add up
            rps = await runs_per_second_beside_floor(
                url, rounds=3, calls=args.calls, steps=round(steps), runs=args.rps_runs
            )
            turns = await long_runs(url, args.long, LONG_RUNS)
            claim_p50, claim_p95 = await claim_latency(url("claims"), args.claims)
            rows = [
                ("durable step (ms)", f"{step_ms:.3f}"),
                ("raw floor: INSERT + COMMIT (ms)", f"{floor:.3f}"),
                ("ratio", f"{ratio:.2f}"),
                ("store append alone, no runtime (ms)", f"{append_ms:.3f}"),
                ("store append alone / raw floor", f"{statistics.median(append_ratios):.2f}"),
                ("CPU per durable step, this process (us)", f"{cpu_us:.1f}"),
                ("  of it, while the store's append was awaited (us)", f"{cpu_in_append:.1f}"),
                ("  of it, outside the append: the runtime's own (us)", f"{cpu_runtime:.1f}"),
                ("CPU calibration unit (us)", f"{calibration:.1f}"),
                ("CPU per step / calibration unit", f"{cpu_us / calibration:.2f}"),
                (
                    f"runs/s, 1 worker, 32 runs at once, {args.rps_runs} runs",
                    f"{rps.runs_per_s:.1f}",
                ),
                ("runs the worker held in flight, on average", f"{rps.in_flight:.1f}"),
                ("raw floor runs/s, 32 connections at once", _figure(rps.floor_runs_per_s)),
                ("runs/s at 32: psych / raw floor", _figure(rps.ratio, 2)),
                (
                    f"step at turn 10 / turn {args.long} (ms), {LONG_RUNS} runs",
                    f"{turns.early_ms:.3f} / {turns.late_ms:.3f}",
                ),
                (f"turn {args.long} / turn 10", f"{turns.ratio:.2f}"),
                ("claim latency p50 / p95 (ms)", f"{claim_p50:.2f} / {claim_p95:.2f}"),
            ]
            by_processes: dict[int, ScaleOut] = {}
            if args.store != "memory":
                for processes in (1, 2, 4):
                    scale = await process_runs_per_second(
                        url(f"procs{processes}"), processes, SCALE_OUT_RUNS, args.calls
                    )
                    by_processes[processes] = scale
                    rows += _scale_out_rows(processes, scale)
            recovery: Recovery | None = None
            if args.store != "memory":
                recovery = await recovery_behind_queue(
                    url("recovery"), args.queue, args.calls, args.lease, RECOVERY_CONCURRENCY
                )
            rows.extend(_recovery_rows(recovery, args.queue, args.lease))
        finally:
            for used in urls:
                await discard(used)

    width = max(len(label) for label, _ in rows)
    print(f"{'measure':<{width}}  value")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    print(
        f"store={args.store} steps_per_run={steps:.0f} per_step_ms={step_ms:.3f} "
        f"floor_ms={floor:.3f} ratio={ratio:.2f} cpu_us_per_step={cpu_us:.1f} "
        f"cpu_us_in_append={cpu_in_append:.1f} cpu_us_runtime={cpu_runtime:.1f} "
        f"cpu_calibration_us={calibration:.1f} runs_per_s_32={rps.runs_per_s:.1f} "
        f"in_flight_32={rps.in_flight:.1f} "
        f"claim_p50_ms={claim_p50:.2f} claim_p95_ms={claim_p95:.2f} "
        f"floor_runs_per_s_32={_figure(rps.floor_runs_per_s)} "
        f"recovery_s={_figure(None if recovery is None else recovery.expiry_to_resume_s, 2)} "
        f"recovery_lease_s={args.lease:g} "
        f"append_ratio={statistics.median(append_ratios):.2f} turn_ratio={turns.ratio:.2f} "
        f"rps_runs={args.rps_runs} "
        + " ".join(_scale_out_figures(count, by_processes.get(count)) for count in (1, 2, 4))
    )


def _scale_out_rows(processes: int, scale: ScaleOut) -> list[tuple[str, str]]:
    each = f"{processes} worker process(es), {PROCESS_CONCURRENCY} runs each"
    busy = scale.host.busy
    return [
        (f"runs/s, {each}", f"{scale.runs_per_s:.1f}"),
        (
            f"  host CPU busy meanwhile ({scale.host.cores} cores)",
            "n/a" if busy is None else f"{busy:.0%}",
        ),
        ("  cores the worker processes used", f"{scale.host.worker_cores:.2f}"),
    ]


def _scale_out_figures(processes: int, scale: ScaleOut | None) -> str:
    """The last line's figures of one scale-out measure: runs/s, the host's busy share and
    the cores the workers used (n/a where not measured)."""
    busy = None if scale is None else scale.host.busy
    cores = None if scale is None else scale.host.worker_cores
    return (
        f"runs_per_s_{processes}p={_figure(None if scale is None else scale.runs_per_s)} "
        f"host_busy_{processes}p={_figure(busy, 2)} worker_cores_{processes}p={_figure(cores, 2)}"
    )


def _figure(value: float | None, digits: int = 1) -> str:
    """`value` to `digits` places, or n/a where the store has no such figure."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def _recovery_rows(recovery: Recovery | None, queue: int, lease: float) -> list[tuple[str, str]]:
    """The table's rows for the recovery behind a queue (n/a on the memory store)."""
    head = f"recovery behind {queue} queued runs, lease {lease:g} s"
    if recovery is None:
        return [(f"{head}: lease expiry -> next attempt (s)", "n/a (no worker processes)")]
    return [
        (f"{head}: lease expiry -> next attempt (s)", f"{recovery.expiry_to_resume_s:.2f}"),
        (f"{head}: SIGKILL -> next attempt (s)", f"{recovery.kill_to_resume_s:.2f}"),
        (
            f"{head}: queued runs started before it",
            f"{recovery.ahead} of {recovery.queue}",
        ),
    ]


if __name__ == "__main__":
    asyncio.run(main())

"""`psych inspect` and `psych runs` on real SQLite files, as separate processes (plain output)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import psych_runtime
from psych_runtime.testing.fake_model import FakeModel
from psych_store_sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
TWO_PROCESS = ROOT / "examples" / "two_process"

pytestmark = pytest.mark.integration


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


SPEC = psych_runtime.AgentSpec(
    name="support",
    model=psych_runtime.ModelRef(model="fake"),
    tools=(
        psych_runtime.CodeTool(name="lookup_order"),
        psych_runtime.CodeTool(name="refund", requires_approval=True),
    ),
)


def run_in(db: Path, model: FakeModel, *questions: str, tenant: str = "default") -> list[str]:
    """Run `questions` to their end (or wait) in a session on the SQLite file `db`."""

    async def main() -> list[str]:
        async with SQLiteStore(db) as store:
            scope = psych_runtime.Scope(tenant=tenant)
            tools = [lookup_order, refund]
            async with psych_runtime.session(model, tools=tools, store=store, scope=scope) as s:
                return [(await s.ask(SPEC, question)).run_id for question in questions]

    return asyncio.run(main())


def log_of(db: Path, run_id: str, tenant: str = "default") -> list[psych_runtime.Record]:
    async def main() -> list[psych_runtime.Record]:
        async with SQLiteStore(db) as store:
            scoped = store.scoped(psych_runtime.Scope(tenant=tenant))
            return await psych_runtime.read_log(scoped, run_id)

    return asyncio.run(main())


def psych(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "psych_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def answered(db: Path) -> str:
    model = (
        FakeModel()
        .turn(text="Checking.", tool_calls=[("lookup_order", {"order_id": "A1"})])
        .turn(text="A1 has shipped.")
    )
    [run_id] = run_in(db, model, "where is A1?")
    return run_id


def test_inspect_shows_a_finished_runs_records_and_report(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    run_id = answered(db)
    log = log_of(db, run_id)

    done = psych("inspect", run_id, "--store", f"sqlite:///{db}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"run {run_id}  support  completed"
    assert lines[1] == f"tenant default · store sqlite:///{db} · attempt 1"

    timeline = lines[lines.index("Timeline") + 1 : lines.index("Report") - 1]
    assert [(int(line.split()[0]), line.split()[3]) for line in timeline] == [
        (record.seq, record.body.type) for record in log
    ]
    assert "2.0 lookup_order" in timeline[3]
    assert '2.0 -> {"order_id": "A1", "status": "shipped"}' in timeline[4]

    report = lines[lines.index("Report") :]
    assert "  status      completed" in report
    assert "  output      A1 has shipped." in report
    assert "  counts      1 turn, 2 model calls, 1 tool call, 1 attempt" in report
    assert "  cost        None (2 calls unpriced)" in report
    assert any(line.startswith("  usage       0 tokens") for line in report)
    call = report[report.index("Tool calls") + 1].split()
    assert call[:3] == ["2.0", "lookup_order", "succeeded"]
    # Read-only: the log is as it was.
    assert log_of(db, run_id) == log


def test_inspect_json_is_the_log_and_the_report(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    run_id = answered(db)
    done = psych("inspect", run_id, "--store", f"sqlite:///{db}", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["records"] == [r.model_dump(mode="json") for r in log_of(db, run_id)]
    assert document["status"]["status"] == "completed"
    assert document["report"]["output"] == "A1 has shipped."
    assert document["report"]["totals"]["cost"] is None


def test_inspect_a_failed_run_exits_1_and_says_why(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    model = FakeModel().fail(psych_runtime.ModelError("the provider is down", model="fake"))
    [run_id] = run_in(db, model, "where is A1?")
    done = psych("inspect", run_id, "--store", f"sqlite:///{db}")
    assert done.returncode == 1, done.stderr
    assert f"run {run_id}  support  failed" in done.stdout
    assert "run_failed" in done.stdout
    assert "the provider is down" in done.stdout


def test_inspect_a_run_that_is_not_in_the_tenant_exits_1(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    run_id = answered(db)
    for args in (("no-such-run",), (run_id, "--tenant", "other")):
        done = psych("inspect", *args, "--store", f"sqlite:///{db}")
        assert done.returncode == 1
        assert "error: no run" in done.stderr
        assert "psych runs" in done.stderr


def test_inspect_a_file_that_is_not_a_store_exits_3(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    done = psych("inspect", "r1", "--store", f"sqlite:///{db}")
    assert done.returncode == 3
    assert "cannot read the store" in done.stderr


def test_runs_lists_pages_and_filters(tmp_path: Path) -> None:
    db = tmp_path / "psych.db"
    model = (
        FakeModel()
        .turn(text="Hello.")
        .turn(text="Hello again.")
        .turn(tool_calls=[("refund", {"order_id": "A1"})])
    )
    first, second, waiting = run_in(db, model, "hi", "hi again", "refund A1")
    url = f"sqlite:///{db}"

    done = psych("runs", "--store", url)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == [waiting, second, first]  # newest first
    assert [row[2] for row in rows] == ["waiting", "completed", "completed"]

    only = psych("runs", "--store", url, "--status", "waiting", "--json")
    assert [run["run_id"] for run in json.loads(only.stdout)["runs"]] == [waiting]

    page = psych("runs", "--store", url, "--limit", "2")
    assert "2 runs; more with --cursor " in page.stdout
    cursor = page.stdout.split("--cursor ")[1].split()[0]
    rest = psych("runs", "--store", url, "--limit", "2", "--cursor", cursor, "--json")
    assert [run["run_id"] for run in json.loads(rest.stdout)["runs"]] == [first]

    other = psych("runs", "--store", url, "--tenant", "other")
    assert other.stdout.startswith("No runs in tenant 'other'")


def test_inspect_follow_shows_a_run_live_and_ends_when_it_ends(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    env = {**os.environ, "PSYCH_DEMO_DB": str(db)}
    handler = subprocess.run(
        [sys.executable, "handler.py"],
        cwd=TWO_PROCESS,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    run_id = handler.stdout.strip()

    command = [sys.executable, "-m", "psych_cli", "inspect", run_id, "--store", f"sqlite:///{db}"]
    errors = tmp_path / "follow.err"
    with (
        errors.open("w") as stderr,
        subprocess.Popen(
            [*command, "--tenant", "acme", "--follow"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        ) as follow,
    ):
        lines: queue.Queue[str] = queue.Queue()
        out = follow.stdout
        assert out is not None

        def read() -> None:
            for line in out:
                lines.put(line)

        reader = threading.Thread(target=read)
        reader.start()
        seen: list[str] = []
        try:
            # It has shown the queued run and its first record, and waits for more.
            deadline = time.monotonic() + 30
            while not any(line.startswith("   0  ") for line in seen):
                seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())).rstrip("\n"))
            assert seen[0] == f"run {run_id}  support  queued"
            time.sleep(0.5)
            assert follow.poll() is None, "--follow ended before the run did"

            worker = [sys.executable, "worker.py", "--idle"]
            subprocess.run(worker, cwd=TWO_PROCESS, env=env, timeout=60, check=True)
            assert follow.wait(timeout=30) == 0, errors.read_text()
        finally:
            if follow.poll() is None:
                follow.kill()
            reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get().rstrip("\n"))
    timeline = seen[seen.index("Timeline") + 1 : seen.index("Report") - 1]
    assert [line.split()[3] for line in timeline] == [
        "run_admitted",
        "attempt_started",
        "model_call_finished",
        "tool_call_started",
        "tool_call_finished",
        "model_call_finished",
        "run_completed",
    ]
    assert [int(line.split()[0]) for line in timeline] == list(range(7))
    assert "  status      completed" in seen
    assert "  output      A1 has shipped." in seen


def test_inspect_reads_offloaded_bodies_from_the_blob_folder(tmp_path: Path) -> None:
    db, blobs = tmp_path / "psych.db", tmp_path / "blobs"

    def big(order_id: str) -> str:
        """Return a long text."""
        return f"{order_id}: " + "x" * 5000

    spec = psych_runtime.AgentSpec(
        name="support",
        model=psych_runtime.ModelRef(model="fake"),
        tools=(psych_runtime.CodeTool(name="big"),),
    )

    async def main() -> str:
        model = FakeModel().turn(tool_calls=[("big", {"order_id": "A1"})]).turn(text="Done.")
        async with SQLiteStore(db) as store:
            blob_store = psych_runtime.FileBlobStore(blobs)
            session = psych_runtime.session(
                model, tools=[big], store=store, blobs=blob_store, blob_threshold=1000
            )
            async with session as s:
                return (await s.ask(spec, "go")).run_id

    run_id = asyncio.run(main())
    url = f"sqlite:///{db}"

    bare = psych("inspect", run_id, "--store", url)
    assert bare.returncode == 3
    assert "--blobs DIR" in bare.stderr

    done = psych("inspect", run_id, "--store", url, "--blobs", str(blobs))
    assert done.returncode == 0, done.stderr
    assert "2.0 -> A1: xxxx" in done.stdout
    assert "  status      completed" in done.stdout

    missing = psych("inspect", run_id, "--store", url, "--blobs", str(tmp_path / "none"))
    assert missing.returncode == 2
    assert not (tmp_path / "none").exists()

"""`psych inspect` and `psych runs` on real SQLite files, as separate processes (plain output)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import psych_runtime
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.workflows import ForeachStep, HumanStep, Lit, Ref, ToolStep
from psych_store_sqlite import SQLiteStore
from tests._hostile_strings import HOSTILE, HUGE, assert_inert, assert_shows_every_piece

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


def log_of(db: Path, run_id: str, tenant: str = "default") -> list[psych_runtime.records.Record]:
    async def main() -> list[psych_runtime.records.Record]:
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
    model = FakeModel().fail(psych_runtime.errors.ModelError("the provider is down", model="fake"))
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
    *table, footer = done.stdout.splitlines()
    rows = [line.split() for line in table[1:]]
    assert [row[0] for row in rows] == [waiting, second, first]  # newest first
    assert [row[2] for row in rows] == ["waiting", "completed", "completed"]
    assert footer == f"3 runs of tenant 'default' at {url}"

    only = psych("runs", "--store", url, "--status", "waiting", "--json")
    assert [run["run_id"] for run in json.loads(only.stdout)["runs"]] == [waiting]

    page = psych("runs", "--store", url, "--limit", "2")
    assert page.stdout.splitlines()[-1].startswith(
        f"2 runs of tenant 'default' at {url}; more with --cursor "
    )
    cursor = page.stdout.split("--cursor ")[1].split()[0]
    rest = psych("runs", "--store", url, "--limit", "2", "--cursor", cursor, "--json")
    assert [run["run_id"] for run in json.loads(rest.stdout)["runs"]] == [first]

    other = psych("runs", "--store", url, "--tenant", "other")
    assert other.returncode == 0
    assert other.stdout == f"No runs in tenant 'other' at {url}.\n"


def test_runs_without_a_tenant_lists_the_default_tenant_and_says_so(tmp_path: Path) -> None:
    # A session given no Scope puts its runs in the default tenant, which `psych runs` lists.
    db = tmp_path / "psych.db"

    async def main() -> str:
        async with SQLiteStore(db) as store:
            tools = [lookup_order, refund]
            model = FakeModel().turn(text="Hi.")
            async with psych_runtime.session(model, tools=tools, store=store) as s:
                return (await s.ask(SPEC, "hi")).run_id

    run_id = asyncio.run(main())
    url = f"sqlite:///{db}"
    done = psych("runs", "--store", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[0] == run_id
    assert done.stdout.splitlines()[-1] == f"1 run of tenant 'default' at {url}"
    assert json.loads(psych("runs", "--store", url, "--json").stdout)["tenant"] == "default"


def test_runs_of_an_empty_default_tenant_says_how_to_name_the_apps_tenant(tmp_path: Path) -> None:
    # The two-process example's runs are in tenant "acme": a store cannot list every tenant.
    db = tmp_path / "psych.db"
    [run_id] = run_in(db, FakeModel().turn(text="Hi."), "hi", tenant="acme")
    url = f"sqlite:///{db}"

    done = psych("runs", "--store", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"No runs in tenant 'default' at {url}."
    assert "No --tenant was given, so this is the default tenant 'default'" in lines[1]
    assert "--tenant TENANT or PSYCH_TENANT" in lines[1]

    named = psych("runs", "--store", url, "--tenant", "acme")
    assert named.stdout.splitlines()[1].split()[0] == run_id
    from_env = subprocess.run(
        [sys.executable, "-m", "psych_cli", "runs", "--store", url],
        env={**os.environ, "PSYCH_TENANT": "acme"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert from_env.stdout == named.stdout

    missing = psych("inspect", run_id, "--store", url)
    assert missing.returncode == 1
    assert "in tenant 'default' (the default: no --tenant was given)" in missing.stderr


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


# -- strings from a hostile log ----------------------------------------------------------------
# Each run below carries the hostile corpus (tests/_hostile_strings.py) in every string field
# the command prints: the agent's and model's names, the input, the model's text and the tool
# names it asks for, tool arguments, results and errors, the run's error, an approver's name
# and reason, and ten-megabyte lines. Run ids and seqs are generated.

BIG_LIMITS = psych_runtime.ports.StoreLimits(
    max_record_bytes=64 * 1024 * 1024,
    max_append_records=1000,
    max_append_bytes=128 * 1024 * 1024,
)


def echo(text: str) -> str:
    """Return the text."""
    return text


def boom(why: str) -> str:
    """Fail with the reason given."""
    raise RuntimeError(why)


ECHO = psych_runtime.CodeTool(name="echo")
BOOM = psych_runtime.CodeTool(name="boom")


def flood() -> str:
    """Return ten megabytes on one line."""
    return HOSTILE + HUGE


@dataclass(frozen=True)
class HostileStore:
    url: str
    completed: str
    failed: str
    waiting: str


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileStore:
    db = tmp_path_factory.mktemp("hostile") / "psych.db"
    spec = psych_runtime.AgentSpec(
        name="agent " + HOSTILE,
        model=psych_runtime.ModelRef(model="model " + HOSTILE),
        tools=(
            psych_runtime.CodeTool(name="echo"),
            psych_runtime.CodeTool(name="boom"),
            psych_runtime.CodeTool(name="flood"),
            psych_runtime.CodeTool(name="refund", requires_approval=True),
        ),
    )
    model = (
        FakeModel()
        .turn(
            text=HOSTILE,
            tool_calls=[
                ("echo", {"text": HOSTILE}),
                ("boom", {"why": HOSTILE}),
                ("flood", {}),
                ("no tool " + HOSTILE, {HOSTILE: HOSTILE}),
            ],
        )
        .turn(text=HOSTILE + HUGE)
        .fail(psych_runtime.errors.ModelError(HOSTILE + HUGE, model="model " + HOSTILE))
        .turn(tool_calls=[("refund", {"order_id": HOSTILE})])
        .turn(tool_calls=[("refund", {"order_id": HOSTILE})])
    )

    async def main() -> HostileStore:
        async with SQLiteStore(db, limits=BIG_LIMITS) as store:
            tools: list[Callable[..., object]] = [echo, boom, flood, refund]
            async with psych_runtime.session(model, tools=tools, store=store) as s:
                completed = await s.ask(spec, HOSTILE)
                failed = await s.ask(spec, HOSTILE)
                waiting = await s.ask(spec, HOSTILE)
                [call_id] = (await psych_runtime.status(s.store, waiting.run_id)).waiting_for
                await psych_runtime.deny(
                    s.store, waiting.run_id, call_id, by=HOSTILE, reason=HOSTILE
                )
                await s.drive(waiting.run_id)
        assert (completed.status, failed.status) == ("completed", "failed")
        return HostileStore(f"sqlite:///{db}", completed.run_id, failed.run_id, waiting.run_id)

    return asyncio.run(main())


def psych_bytes(*args: str, colour: bool = False) -> subprocess.CompletedProcess[bytes]:
    """The command's raw output; with `colour`, as a colour terminal would get it."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    if colour:
        env.update(FORCE_COLOR="1", COLUMNS="160", TERM="xterm-256color")
    return subprocess.run(
        [sys.executable, "-m", "psych_cli", *args],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


# --follow reads a run until it ends, so it is tried on the two runs that have ended.
VIEWS = [
    (run, follow, colour)
    for run in ("completed", "failed", "waiting")
    for follow in ((False, True) if run != "waiting" else (False,))
    for colour in (False, True)
]


@pytest.mark.parametrize(
    ("run", "follow", "colour"),
    VIEWS,
    ids=[
        f"{run}-{'follow' if follow else 'read'}-{'colour' if colour else 'plain'}"
        for run, follow, colour in VIEWS
    ],
)
def test_inspect_shows_a_hostile_log_inert(
    hostile: HostileStore, run: str, follow: bool, colour: bool
) -> None:
    run_id = getattr(hostile, run)
    args = ["inspect", run_id, "--store", hostile.url, *(["--follow"] if follow else [])]
    done = psych_bytes(*args, colour=colour)
    assert done.returncode == (1 if run == "failed" else 0), done.stderr
    assert_inert(done.stdout, colour=colour)
    assert_inert(done.stderr, colour=colour)
    if colour:
        assert b"\x1b[" in done.stdout, "the colour renderer is the one tested"
        return
    text = done.stdout.decode()
    assert_shows_every_piece(text)
    lines = text.splitlines()
    assert lines[0].startswith(f"run {run_id}  agent <<\\x1b[2J\\x1b[H|")
    assert lines[0].endswith(f":warning:>>  {run}" + (" (approval)" if run == "waiting" else ""))
    timeline = lines[lines.index("Timeline") + 1 : lines.index("Report") - 1]
    assert [int(line.split()[0]) for line in timeline] == list(range(len(timeline)))
    if run == "completed":
        assert "  output      <<\\x1b[2J" in text
        assert "more characters)" in text, "the ten-megabyte answer is cut, saying by how much"


def test_inspect_json_of_a_hostile_log_is_ascii_and_loses_nothing(hostile: HostileStore) -> None:
    for run_id in (hostile.completed, hostile.failed, hostile.waiting):
        done = psych_bytes("inspect", run_id, "--store", hostile.url, "--json")
        assert done.returncode == (1 if run_id == hostile.failed else 0), done.stderr
        assert done.stdout.isascii()
        assert_inert(done.stdout, max_bytes=None)
        document = json.loads(done.stdout)
        log = log_of(Path(hostile.url.removeprefix("sqlite:///")), run_id)
        assert document["records"] == [record.model_dump(mode="json") for record in log]
    assert document["status"]["agent"] == "agent " + HOSTILE


def test_inspect_follow_json_of_a_hostile_log_is_ascii_lines(hostile: HostileStore) -> None:
    args = ("inspect", hostile.completed, "--store", hostile.url, "--follow", "--json")
    done = psych_bytes(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.isascii()
    assert_inert(done.stdout, max_bytes=None)
    *records, report = [json.loads(line) for line in done.stdout.splitlines()]
    assert report["report"]["output"] == HOSTILE + HUGE
    assert records[0]["record"]["body"]["input"] == HOSTILE


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
def test_runs_lists_hostile_agents_inert(hostile: HostileStore, colour: bool) -> None:
    done = psych_bytes("runs", "--store", hostile.url, colour=colour)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout, colour=colour)
    plain = re.sub(rb"\x1b\[[0-9;]*m", b"", done.stdout).decode()
    for run_id in (hostile.waiting, hostile.failed, hostile.completed):
        assert f"{run_id}  agent <<\\x1b[2J" in plain
    assert f"3 runs of tenant 'default' at {hostile.url}" in plain

    listed = psych_bytes("runs", "--store", hostile.url, "--json")
    assert listed.stdout.isascii()
    assert {run["agent"] for run in json.loads(listed.stdout)["runs"]} == {"agent " + HOSTILE}


def test_an_error_naming_a_hostile_run_id_is_inert(hostile: HostileStore) -> None:
    run_id = "r\x1b]52;c;cm0gLXJmIH4K\x07\u202e\x9b2J[red]x[/red]"
    done = psych_bytes("inspect", run_id, "--store", hostile.url, colour=True)
    assert done.returncode == 1
    assert_inert(done.stderr, colour=True)
    assert "no run r\\x1b]52;c;cm0gLXJmIH4K\\x07\\u202e\\x9b2J[red]x[/red]" in re.sub(
        r"\x1b\[[0-9;]*m", "", done.stderr.decode()
    )


@pytest.fixture(scope="module")
def hostile_workflow(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A workflow run whose name, items, outputs, errors and question are hostile, waiting on
    its human step: ``(store URL, run id)``."""
    db = tmp_path_factory.mktemp("hostile-workflow") / "psych.db"
    flow = psych_runtime.WorkflowSpec(
        name="workflow " + HOSTILE,
        steps=(
            ForeachStep(
                name="each",
                items=Lit([HOSTILE, "plain"]),
                steps=(ToolStep(name="say", tool=ECHO, arguments={"text": Ref("item")}),),
            ),
            ToolStep(
                name="explode", tool=BOOM, arguments={"why": Lit(HOSTILE)}, on_failure="continue"
            ),
            HumanStep(name="ask", question=HOSTILE),
        ),
    )

    async def main() -> str:
        async with (
            SQLiteStore(db, limits=BIG_LIMITS) as store,
            psych_runtime.session(FakeModel(), tools=[echo, boom], store=store) as s,
        ):
            view = await s.ask(flow, json.dumps(HOSTILE))
        assert view.status == "waiting"
        return view.run_id

    return f"sqlite:///{db}", asyncio.run(main())


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
def test_inspect_draws_a_workflows_step_tree_inert(
    hostile_workflow: tuple[str, str], colour: bool
) -> None:
    url, run_id = hostile_workflow
    done = psych_bytes("inspect", run_id, "--store", url, colour=colour)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout, colour=colour)
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout.decode())
    assert_shows_every_piece(text)
    lines = text.splitlines()
    title = next(line for line in lines if line.startswith("Steps  workflow workflow <<"))
    steps = lines.index(title)
    tree = lines[steps : lines.index("Report")]
    expected = [
        "each  foreach  completed",
        "[0] item <<\\x1b[2J",
        "each[0].say  tool  completed  -> <<\\x1b[2J",
        "[1] item plain  completed",
        "each[1].say  tool  completed  -> plain",
        "explode  tool  failed  error: step explode: error: RuntimeError: <<\\x1b[2J",
        "ask  human  waiting  an answer to '<<\\x1b[2J",
    ]
    at = 0
    for wanted in expected:
        found = next(i for i, line in enumerate(tree) if i >= at and wanted in line)
        at = found + 1
    assert "step explode" in text


def test_inspect_json_of_a_workflow_has_its_step_tree(hostile_workflow: tuple[str, str]) -> None:
    url, run_id = hostile_workflow
    done = psych_bytes("inspect", run_id, "--store", url, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.isascii()
    document = json.loads(done.stdout)
    steps = document["workflow"]["steps"]
    assert [(s["key"], s["status"]) for s in steps] == [
        ("each", "completed"),
        ("explode", "failed"),
        ("ask", "waiting"),
    ]
    assert steps[0]["items"][0]["item"] == HOSTILE
    assert steps[0]["items"][0]["steps"][0]["output"] == HOSTILE
    assert [row["key"] for row in document["report"]["steps"]] == [
        "each[0].say",
        "each[1].say",
        "explode",
        "ask",
    ]

"""kill -9 in the middle of two MCP calls: the read-only one runs again, the unsafe one is
settled ``unknown`` and never runs a second time.

One run on a SQLite file. Worker process A starts both slow calls of the demo MCP server in
one turn and is killed, with its server, while they sleep. Worker process B takes the run over
once A's lease expires: it starts the read-only call again (as its start recorded, from the
tool's annotations), settles the unannotated one, and completes the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from psych_runtime import Scope, dispatch
from psych_runtime.records import (
    AttemptStarted,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from tests.integration._crash_kit import about, begun, ended, kill_group, start_worker, stop
from tests.integration._mcp import ledger_lines
from tests.integration._stores import open_store
from tests.integration.mcp_crash_worker import SPEC

pytestmark = pytest.mark.timeout(120)

SCOPE = Scope(tenant="mcp-crash")
WORKER = "tests.integration.mcp_crash_worker"


async def test_a_killed_worker_s_read_only_mcp_call_runs_again_and_the_unsafe_one_settles(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    ledger = tmp_path / "ledger.txt"
    store = open_store(url)
    await store.migrate()
    scoped = store.scoped(SCOPE)
    try:
        run_id = await dispatch(scoped, SPEC, "go")
        first = start_worker(WORKER, url, str(ledger))
        try:
            lines = await begun(
                lambda: ledger_lines(ledger), ("slow-begun", "slow_read-begun"), first
            )
        finally:
            # A dies with its process group. The SDK starts each stdio server in a session
            # of its own, so A's server is not in that group: it is killed by the pid it wrote
            # (a crashed host takes its servers with it).
            kill_group(first.pid)
            first.wait()
            for line in ledger_lines(ledger):
                kill_group(int(line[2]))
        a_server = {line[2] for line in lines}
        assert len(a_server) == 1

        second = start_worker(WORKER, url, str(ledger))
        try:
            row = await ended(store, SCOPE, run_id, second)
        finally:
            stop(second)
        records = await scoped.read(run_id)
    finally:
        await store.close()

    assert row.status == "completed", records[-1].body
    attempts = [r.attempt for r in records if isinstance(r.body, AttemptStarted)]
    assert attempts == [1, 2]
    starts = [r.body for r in records if isinstance(r.body, ToolCallStarted)]
    slow_id = next(b.call_id for b in starts if b.name == "demo__slow")
    read_id = next(b.call_id for b in starts if b.name == "demo__slow_read")

    # The unannotated call: started once (recorded unsafe), settled unknown by attempt 2.
    slow_starts = about(records, ToolCallStarted, slow_id)
    assert [(r.attempt, b.safe_to_retry) for r, b in slow_starts] == [(1, False)]
    slow_settled = about(records, ToolCallSettled, slow_id)
    assert [r.attempt for r, _ in slow_settled] == [2]
    assert not about(records, ToolCallFinished, slow_id)

    # The read-only call: recorded safe when it started, started again by attempt 2 (the
    # second start leaves the safety out: the first one's stands), and finished there.
    read_starts = about(records, ToolCallStarted, read_id)
    assert [(r.attempt, b.safe_to_retry) for r, b in read_starts] == [(1, True), (2, None)]
    (read_finished,) = about(records, ToolCallFinished, read_id)
    assert read_finished[0].attempt == 2
    assert "read done" in str(read_finished[1].result)
    assert not about(records, ToolCallSettled, read_id)

    # At the server: the read began twice, in two server processes; the unsafe effect began
    # once and never completed.
    lines = ledger_lines(ledger)
    kinds = [line[0] for line in lines]
    read_pids = [line[2] for line in lines if line[0] == "slow_read-begun"]
    assert len(read_pids) == 2 and read_pids[0] != read_pids[1], lines
    assert kinds.count("slow-begun") == 1, lines
    assert "slow" not in kinds, lines

"""Stores and raw floors for the benchmarks, by name."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from psych_runtime import MemoryStore, Store

RECORD = json.dumps(
    {
        "run_id": "01JBENCHBENCHBENCHBENCHBEN",
        "seq": 3,
        "attempt": 1,
        "at": "2026-11-29T09:00:00Z",
        "body": {"type": "tool_call_finished", "call_id": "2.0", "result": {"index": 1, "done": 1}},
    }
)


def open_bench_store(url: str) -> Store:
    """``memory:`` or ``sqlite:///path``."""
    if url == "memory:":
        return MemoryStore()
    if url.startswith("sqlite:///"):
        from psych_store_sqlite import SQLiteStore

        return SQLiteStore(url.removeprefix("sqlite://"))
    raise ValueError(f"no benchmark store for {url!r}")


def floor_ms(url: str, steps: int, workdir: Path) -> float:
    """The raw floor: one INSERT and COMMIT per durable step, same durability settings."""
    if url == "memory:":
        log: list[str] = []
        started = time.perf_counter()
        for _ in range(steps):
            log.append(RECORD)
        return (time.perf_counter() - started) * 1000 / steps
    if url.startswith("sqlite:///"):
        path = workdir / "floor.sqlite"
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS floor (run_id TEXT, seq INTEGER, body TEXT, "
            "PRIMARY KEY (run_id, seq))"
        )
        started = time.perf_counter()
        for seq in range(steps):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO floor VALUES (?, ?, ?)", ("r", seq, RECORD))
            connection.execute("COMMIT")
        elapsed = time.perf_counter() - started
        connection.close()
        return elapsed * 1000 / steps
    raise ValueError(f"no floor for {url!r}")

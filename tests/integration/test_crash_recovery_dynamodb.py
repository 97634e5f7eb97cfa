"""The crash test on DynamoDB (moto's server): kill -9 at random moments and at every named
fault point, with nothing lost and no unsafe effect repeated.

The same scenario as on SQLite: 200 runs, two worker processes, at least 50 kills. It takes
about two minutes, since moto serves one request at a time (scripts/services/_moto_server.py
says why) and reads an index by scanning the table.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import aioboto3  # type: ignore[import-untyped]
import pytest

from psych_core import Store, StoreUnavailable
from psych_store_dynamodb import DynamoDBStore
from tests.integration import crash_driver
from tests.integration._stores import open_store
from tests.integration.crash_driver import REACHABLE, check_outcome, crash_run

ENDPOINT = os.environ.get("PSYCH_TEST_DYNAMODB_ENDPOINT", "http://127.0.0.1:4566")


@pytest.mark.timeout(600)
async def test_dynamodb_runs_survive_kill_9_with_nothing_lost_or_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # moto takes any credentials; the worker processes inherit these.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    host = ENDPOINT.removeprefix("http://")
    table = f"psych-crash-{uuid.uuid4().hex}"
    url = f"dynamodb://{host}/{table}?region=us-east-1"
    # The driver opens its own store and leaves it open: keep each one to close it after.
    opened: list[DynamoDBStore] = []

    def open_and_keep(url: str) -> Store:
        store = open_store(url)
        assert isinstance(store, DynamoDBStore)
        opened.append(store)
        return store

    monkeypatch.setattr(crash_driver, "open_store", open_and_keep)
    try:
        await open_and_keep(url).migrate()
    except StoreUnavailable as exc:
        pytest.fail(
            f"moto's DynamoDB server does not answer at {ENDPOINT} ({exc}); start it with "
            "`scripts/services/moto.sh start` and export the PSYCH_TEST_DYNAMODB_ENDPOINT it prints"
        )
    try:
        outcome = await crash_run(url, tmp_path / "ledger.txt", runs=200, min_kills=50)
    finally:
        for store in opened:
            await store.close()
        async with aioboto3.Session().client(
            "dynamodb", endpoint_url=ENDPOINT, region_name="us-east-1"
        ) as client:
            await client.delete_table(TableName=table)
    assert outcome.kills >= 50
    assert len(outcome.run_ids) >= 200
    never = set(REACHABLE) - outcome.points_hit
    assert not never, f"never died at {never}"
    check_outcome(outcome)
    settled = sum(
        1 for log in outcome.logs.values() for r in log if r.body.type == "tool_call_settled"
    )
    assert settled > 0

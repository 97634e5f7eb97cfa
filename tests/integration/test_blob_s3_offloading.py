"""A run whose tool returns 50 MB, with its large bodies in S3: the log keeps a reference and
stays small, the blob goes up in parts under the tenant's folder, and every reader (the model,
the report, a worker, another process with a store of its own) gets the whole content back.

Against moto's S3 server on loopback, as tests/contract/test_blob_s3.py (whose helpers these
tests share) says.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator

import pytest

import psych_runtime
from psych_blob_s3 import S3BlobStore
from psych_runtime import (
    AgentSpec,
    CodeTool,
    MemoryStore,
    ModelRef,
    OffloadingStore,
    Runtime,
    Scope,
    Worker,
)
from psych_runtime.errors import FoldError
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import Offloaded, ToolCallFinished
from psych_runtime.testing.fake_model import FakeModel
from tests.contract.test_blob_s3 import drop, etag_of, fresh_store, keys_in, open_store, session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FIFTY_MB = 50 * 1024 * 1024
SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="exporter", model=ModelRef(model="fake"), tools=(CodeTool(name="export"),))


@functools.cache
def exported() -> str:
    row = "order-000000,widget,3,19.99\n"
    return (row * (FIFTY_MB // len(row) + 1))[:FIFTY_MB]


def export() -> str:
    """Export every order as CSV."""
    return exported()


@pytest.fixture
async def blobs() -> AsyncIterator[S3BlobStore]:
    store = await fresh_store()
    try:
        yield store
    finally:
        await drop(store)


async def test_a_50_mb_tool_result_is_one_blob_in_s3_and_the_log_stays_small(
    blobs: S3BlobStore,
) -> None:
    inner = MemoryStore()
    model = FakeModel().turn(tool_calls=[("export", {})]).turn(text="exported")
    async with psych_runtime.session(
        model, tools=[export], store=inner, blobs=blobs, scope=SCOPE
    ) as s:
        view = await s.ask(SPEC, "export the orders")
        report = await psych_runtime.report(s.store, view.run_id)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "completed"
    # The log as the store keeps it: every record small, the result a reference.
    kept = await inner.read(view.run_id)
    assert max(len(record.model_dump_json().encode()) for record in kept) < 1024
    [held] = [r.body for r in kept if isinstance(r.body, Offloaded)]
    as_json = len(json.dumps(exported()))
    assert held.body_type == "tool_call_finished" and held.tenant == "acme"
    assert as_json < held.size < as_json + 200
    # In the bucket: one object, in the tenant's folder, sent in 8 MiB parts.
    [key] = await keys_in(blobs.bucket)
    assert key == blobs.tenant_prefix("acme") + held.blob.removeprefix("sha256:")
    assert (await etag_of(blobs.bucket, key)).endswith('-7"')
    # Every reader gets the whole result back.
    [shown] = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert shown.content == exported()
    [call] = report.tool_calls
    assert call.result == exported() and call.result_bytes == as_json
    [finished] = [r.body for r in log if isinstance(r.body, ToolCallFinished)]
    assert finished.result == exported()


async def test_a_worker_writes_and_another_process_reads_back_through_its_own_s3_store(
    blobs: S3BlobStore,
) -> None:
    inner = MemoryStore()
    store = OffloadingStore(inner, blobs)
    run_id = await psych_runtime.dispatch(store.scoped(SCOPE), SPEC, "export the orders")
    model = FakeModel().turn(tool_calls=[("export", {})]).turn(text="exported")
    await Worker(store, Runtime(model=model, tools=[export])).run_until_idle()
    # Another process: its own session and S3BlobStore on the same bucket, nothing cached.
    async with open_store(blobs.bucket, session=session()) as theirs:
        again = OffloadingStore(inner, theirs).scoped(SCOPE)
        report = await psych_runtime.report(again, run_id)
    assert report.status == "completed"
    assert report.tool_calls[0].result == exported()
    # Read through the bare store, the log names the blob rather than give a wrong answer.
    with pytest.raises(FoldError, match=r"kept in blob sha256:.*OffloadingStore"):
        await psych_runtime.status(inner.scoped(SCOPE), run_id)

"""Large content goes to the blob store once; the log keeps a reference and stays small; every
read (the model's, the report's, a new process's) gets the whole content back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import psych_runtime
from psych_runtime import (
    DEFAULT_BLOB_THRESHOLD,
    AgentSpec,
    CodeTool,
    FileBlobStore,
    MemoryBlobStore,
    MemoryStore,
    ModelRef,
    OffloadingStore,
    Runtime,
    Scope,
    Worker,
)
from psych_runtime.errors import BlobNotFound, FoldError
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import ModelCallFinished, Offloaded, RunAdmitted, ToolCallFinished
from psych_runtime.testing.fake_model import FakeModel

FIVE_MB = 5 * 1024 * 1024
SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="exporter", model=ModelRef(model="fake"), tools=(CodeTool(name="export"),))


def export() -> str:
    """Export every order as CSV."""
    row = "order-000000,widget,3,19.99\n"
    return (row * (FIVE_MB // len(row) + 1))[:FIVE_MB]


AS_JSON = len(json.dumps(export()))  # the result's size as JSON: quotes, escaped newlines


async def test_a_5_mb_tool_result_is_one_blob_and_the_log_stays_small() -> None:
    inner = MemoryStore()
    blobs = MemoryBlobStore()
    model = FakeModel().turn(tool_calls=[("export", {})]).turn(text="exported")
    async with psych_runtime.session(
        model, tools=[export], store=inner, blobs=blobs, scope=SCOPE
    ) as s:
        view = await s.ask(SPEC, "export the orders")
        report = await psych_runtime.report(s.store, view.run_id)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "completed"
    # Stored once: one blob, holding the result's record body.
    [(ref, size)] = blobs.sizes("acme").items()
    assert AS_JSON < size < AS_JSON + 200
    # The log as the store keeps it: every record small, the result a reference.
    kept = await inner.read(view.run_id)
    sizes = {record.seq: len(record.model_dump_json().encode()) for record in kept}
    assert max(sizes.values()) < 1024, sizes
    [held] = [r.body for r in kept if isinstance(r.body, Offloaded)]
    assert (held.body_type, held.blob, held.size, held.tenant) == (
        "tool_call_finished",
        ref,
        size,
        "acme",
    )
    # The model saw the whole result.
    [shown] = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert shown.content == export()
    # The report shows it whole, with its size.
    [call] = report.tool_calls
    assert call.result == export()
    assert call.result_bytes == AS_JSON
    # read_log gives the records back as they were appended.
    [finished] = [r.body for r in log if isinstance(r.body, ToolCallFinished)]
    assert finished.result == export()


async def test_a_new_process_reads_the_blobs_back_through_a_file_blob_store(
    tmp_path: Path,
) -> None:
    inner = MemoryStore()
    store = OffloadingStore(inner, FileBlobStore(tmp_path))
    run_id = await psych_runtime.dispatch(store.scoped(SCOPE), SPEC, "export the orders")
    model = FakeModel().turn(tool_calls=[("export", {})]).turn(text="exported")
    await Worker(store, Runtime(model=model, tools=[export])).run_until_idle()
    # Another process: its own OffloadingStore over the same store and directory, no cache.
    again = OffloadingStore(inner, FileBlobStore(tmp_path)).scoped(SCOPE)
    report = await psych_runtime.report(again, run_id)
    assert report.status == "completed"
    assert report.tool_calls[0].result == export()
    assert len(entries_under(tmp_path)) == 3  # the tenant's directory, its fan-out, one blob


def entries_under(root: Path) -> list[Path]:
    return list(root.rglob("*"))


async def test_the_bare_store_refuses_to_fold_a_reference_and_names_the_blob() -> None:
    inner = MemoryStore()
    model = FakeModel().turn(tool_calls=[("export", {})]).turn(text="exported")
    async with psych_runtime.session(
        model, tools=[export], store=inner, blobs=MemoryBlobStore(), scope=SCOPE
    ) as s:
        view = await s.ask(SPEC, "export")
    with pytest.raises(FoldError, match=r"kept in blob sha256:.*OffloadingStore"):
        await psych_runtime.status(inner.scoped(SCOPE), view.run_id)


async def test_long_model_messages_and_inputs_are_kept_as_blobs_too() -> None:
    inner = MemoryStore()
    blobs = MemoryBlobStore()
    long_text = "word " * (DEFAULT_BLOB_THRESHOLD // 4)
    model = FakeModel().turn(text=long_text)
    async with psych_runtime.session(model, store=inner, blobs=blobs, scope=SCOPE) as s:
        view = await s.ask(SPEC.model_copy(update={"tools": ()}), long_text)
        log = await psych_runtime.read_log(s.store, view.run_id)
    assert view.text == long_text
    kept = await inner.read(view.run_id)
    assert [r.body.body_type for r in kept if isinstance(r.body, Offloaded)] == [
        "run_admitted",
        "model_call_finished",
    ]
    assert isinstance(log[0].body, RunAdmitted) and log[0].body.input == long_text
    assert [r.body.text for r in log if isinstance(r.body, ModelCallFinished)] == [long_text]
    assert len(blobs.sizes("acme")) == 2


async def test_bodies_at_the_threshold_stay_in_the_log() -> None:
    inner = MemoryStore()
    store = OffloadingStore(inner, MemoryBlobStore(), threshold=10_000)
    model = FakeModel().turn(text="x" * 9_000)
    async with psych_runtime.session(model, store=store, scope=SCOPE) as s:
        view = await s.ask(SPEC.model_copy(update={"tools": ()}), "hi")
    assert not [r for r in await inner.read(view.run_id) if isinstance(r.body, Offloaded)]


async def test_a_tenant_cannot_read_another_tenants_blob_through_a_forged_record() -> None:
    blobs = MemoryBlobStore()
    ref = await blobs.put("acme", json.dumps({"type": "run_completed"}).encode())
    with pytest.raises(BlobNotFound):
        await blobs.get("globex", ref)


async def test_a_session_on_the_default_store_keeps_large_content_in_memory_blobs() -> None:
    model = FakeModel().turn(tool_calls=[("export", {})]).turn(text="done")
    async with psych_runtime.session(model, tools=[export]) as s:
        view = await s.ask(SPEC, "export")
        assert isinstance(s.store.store, OffloadingStore)
        report = await psych_runtime.report(s.store, view.run_id)
    assert report.tool_calls[0].result_bytes == AS_JSON

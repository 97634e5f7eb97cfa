"""The checks and conversions every store adapter shares, defined once in `psych_core.ports`:
the batch rule against `StoreLimits`, `Store.append`'s order of refusals, record 0, claim
arguments, run rows and pages, migrations, and the `Store` base class's defaults."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from psych_core import (
    AttemptStarted,
    Batch,
    Conflict,
    InboxPending,
    LeaseLost,
    NewRun,
    Record,
    RecordTooLarge,
    RunAdmitted,
    RunFailed,
    RunIndex,
    RunNotFound,
    RunRow,
    Scope,
    StoreError,
    StoreLimits,
    ToolCallFinished,
)
from psych_core.ports import (
    RUN_ROW_COLUMNS,
    AppendFence,
    Migration,
    check_batch,
    check_claim,
    check_first_record,
    cursor_position,
    exhausted_record,
    judge_append,
    migrations_after,
    page_of,
    record_json,
    run_row_of,
    started_record,
)
from psych_runtime import MemoryBlobStore, MemoryStore, OffloadingStore

AT = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
RUNNING = RunIndex(status="running")
SUSPENDS = RunIndex(status="waiting", waiting="external")
LIMITS = StoreLimits(max_record_bytes=400, max_append_records=3, max_append_bytes=1000)


def _record(seq: int, text: str = "ok", run_id: str = "run-1") -> Record:
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=1,
        at=AT,
        body=ToolCallFinished(call_id=f"c{seq}", result=text),
    )


def _sized(seq: int, size: int) -> Record:
    """A record whose JSON is exactly `size` bytes of UTF-8."""
    bare = len(record_json(_record(seq, "")))
    return _record(seq, "x" * (size - bare))


def _batch(*records: Record, index: RunIndex = RUNNING, inbox_seen: int = 0) -> Batch:
    return Batch(records=records, batch_id="b-1", index=index, inbox_seen=inbox_seen)


# -- the batch rule ------------------------------------------------------------------------


def test_bodies_are_each_records_json_serialised_once() -> None:
    records = (_record(3, 'naïve ☃ 𝄞 "quoted" \\ \x00'), _record(4))
    checked = check_batch("run-1", _batch(*records), LIMITS)
    assert checked.problem is None
    assert checked.bodies == tuple(record.model_dump_json().encode() for record in records)
    assert checked.texts() == tuple(record.model_dump_json() for record in records)
    assert checked.total == sum(len(body) for body in checked.bodies)


def test_a_batch_at_exactly_the_limits_passes() -> None:
    limits = StoreLimits(max_record_bytes=400, max_append_records=3, max_append_bytes=1200)
    batch = _batch(_sized(1, 400), _sized(2, 400), _sized(3, 400))
    assert check_batch("run-1", batch, limits).problem is None


def test_records_not_one_stretch_of_this_log_are_refused_before_their_sizes() -> None:
    gap = check_batch("run-1", _batch(_record(1), _sized(3, 10_000)), LIMITS).problem
    other = check_batch("run-1", _batch(_record(1), _record(2, run_id="run-2")), LIMITS).problem
    for problem, offset in ((gap, 1), (other, 1)):
        assert type(problem) is StoreError
        assert f"run run-1: batch b-1 is not a contiguous run of this log (record {offset}" in str(
            problem
        )


def test_sizes_are_judged_record_first_then_count_then_bytes() -> None:
    too_big = check_batch("run-1", _batch(_sized(1, 10), _sized(2, 401), _sized(3, 402)), LIMITS)
    assert isinstance(too_big.problem, RecordTooLarge)
    assert (too_big.problem.seq, too_big.problem.size, too_big.problem.limit) == (2, 401, 400)
    assert "record is 401 bytes" in str(too_big.problem)

    many = check_batch("run-1", _batch(*(_sized(seq, 401) for seq in range(1, 5))), LIMITS)
    assert isinstance(many.problem, RecordTooLarge) and many.problem.seq == 1
    assert "record is 401 bytes" in str(many.problem), "a record over the limit comes first"

    count = check_batch("run-1", _batch(*(_record(seq) for seq in range(1, 5))), LIMITS)
    assert isinstance(count.problem, RecordTooLarge)
    assert (count.problem.size, count.problem.limit) == (4, 3)
    assert "batch record count is 4" in str(count.problem)

    total = check_batch("run-1", _batch(_sized(1, 400), _sized(2, 400), _sized(3, 201)), LIMITS)
    assert isinstance(total.problem, RecordTooLarge)
    assert (total.problem.seq, total.problem.size, total.problem.limit) == (1, 1001, 1000)


def test_record_zero_must_be_seq_zero_of_its_run_and_within_the_record_limit() -> None:
    run = NewRun(run_id="run-1", tenant="t", agent="a", spec_version="v")
    first = Record(
        run_id="run-1",
        seq=0,
        attempt=0,
        at=AT,
        body=RunAdmitted(agent="a", spec_version="v", input="hi", scope=Scope(tenant="t")),
    )
    checked = check_first_record(run, first, LIMITS)
    assert (checked.problem, checked.texts()) == (None, (first.model_dump_json(),))
    for wrong in (first.model_copy(update={"seq": 1}), first.model_copy(update={"run_id": "x"})):
        problem = check_first_record(run, wrong, LIMITS).problem
        assert type(problem) is StoreError
        assert "run run-1: the first record must be seq 0 of this run" in str(problem)
    tight = StoreLimits(max_record_bytes=10, max_append_records=1, max_append_bytes=10)
    problem = check_first_record(run, first, tight).problem
    assert isinstance(problem, RecordTooLarge) and problem.seq == 0


# -- the order of refusals -----------------------------------------------------------------


def _judge(
    batch: Batch,
    run: AppendFence | None,
    *,
    attempt: int = 2,
    problem: StoreError | None = None,
    landed: bool = False,
) -> tuple[int | None, int]:
    """(what judge_append returned, how often it asked whether the batch landed)."""
    asked = []

    def was_landed() -> bool:
        asked.append(True)
        return landed

    return judge_append("run-1", attempt, batch, problem, run, was_landed), len(asked)


LEASED = AppendFence(attempt=2, next_seq=5, leased=True, inbox_last=3)


def test_a_batch_that_passes_every_check_may_be_written() -> None:
    assert _judge(_batch(_record(5)), LEASED) == (None, 0)


def test_a_run_that_does_not_exist_comes_first() -> None:
    with pytest.raises(RunNotFound):
        _judge(_batch(_record(5)), None, problem=StoreError("bad"))


def test_a_superseded_attempt_learns_only_that_it_lost_its_lease() -> None:
    lost = AppendFence(attempt=3, next_seq=9, leased=False, inbox_last=7)
    too_large = RecordTooLarge("run-1", 1, 10, 5, "record")
    with pytest.raises(LeaseLost) as refused:
        _judge(_batch(_record(1), index=SUSPENDS), lost, problem=too_large, landed=True)
    assert (refused.value.attempt, refused.value.current) == (2, 3)
    with pytest.raises(LeaseLost):
        _judge(_batch(), LEASED, attempt=1)  # even a batch with nothing in it


def test_an_empty_batch_and_a_re_sent_one_need_no_write() -> None:
    assert _judge(_batch(), LEASED, problem=StoreError("bad")) == (3, 0)
    ended = AppendFence(attempt=2, next_seq=7, leased=False, inbox_last=4)
    resent = _batch(_record(5), index=SUSPENDS)
    assert _judge(resent, ended, problem=StoreError("bad"), landed=True) == (4, 1)


def test_whether_a_batch_landed_is_asked_only_below_the_next_seq() -> None:
    assert _judge(_batch(_record(5)), LEASED, landed=True) == (None, 0)
    with pytest.raises(Conflict):
        _judge(_batch(_record(4)), LEASED, landed=False)


def test_then_the_lease_then_the_seq_then_the_records_then_the_inbox() -> None:
    unleased = dataclasses.replace(LEASED, leased=False)
    problem = StoreError("not contiguous")
    with pytest.raises(LeaseLost):
        _judge(_batch(_record(6)), unleased, problem=problem)
    with pytest.raises(Conflict) as conflict:
        _judge(_batch(_record(6), index=SUSPENDS), LEASED, problem=problem)
    assert conflict.value.seq == 6
    with pytest.raises(StoreError, match="not contiguous"):
        _judge(_batch(_record(5), index=SUSPENDS), LEASED, problem=problem)
    with pytest.raises(InboxPending) as pending:
        _judge(_batch(_record(5), index=SUSPENDS, inbox_seen=2), LEASED)
    assert (pending.value.seen, pending.value.inbox_last) == (2, 3)
    assert _judge(_batch(_record(5), index=SUSPENDS, inbox_seen=3), LEASED) == (None, 0)
    assert _judge(_batch(_record(5), inbox_seen=0), LEASED) == (None, 0), "a step keeps going"


# -- claims --------------------------------------------------------------------------------


def test_claim_arguments_are_refused_saying_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"max_attempts must be at least 1, not 0: .*Leases"):
        check_claim(dt.timedelta(seconds=1), 0)
    with pytest.raises(ValueError, match=r"lease ttl must be positive, not 0:00:00: .*Leases"):
        check_claim(dt.timedelta(0), 1)
    check_claim(dt.timedelta(microseconds=1), 1)


def test_the_records_a_claim_writes() -> None:
    started = started_record("run-1", 4, 2, AT, "worker-7")
    assert (started.run_id, started.seq, started.attempt, started.at) == ("run-1", 4, 2, AT)
    assert started.body == AttemptStarted(worker_id="worker-7")
    failed = exhausted_record("run-1", 5, 2, AT, claims=3, max_attempts=3)
    assert (failed.run_id, failed.seq, failed.attempt, failed.at) == ("run-1", 5, 2, AT)
    assert isinstance(failed.body, RunFailed) and failed.body.reason == "attempts_exhausted"
    assert "run run-1 was claimed 3 times without finishing (max_attempts=3)" in failed.body.error


# -- rows, pages, migrations ---------------------------------------------------------------


def test_a_run_row_is_built_from_its_columns_in_the_field_order() -> None:
    assert RUN_ROW_COLUMNS.split(", ") == [field.name for field in dataclasses.fields(RunRow)]
    micros = 1_767_323_045_000_006

    def time(value: int) -> dt.datetime:
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value)

    columns: list[object] = [b"run-1", b"t", b"a", b"v", "running", None, None, "3", b"w"]
    columns += [micros, micros, "9", "2", micros, micros, "1"]
    row = run_row_of(columns, time=time, text=bytes.decode)
    assert row == RunRow(
        run_id="run-1",
        tenant="t",
        agent="a",
        spec_version="v",
        status="running",
        waiting=None,
        parent_run_id=None,
        attempt=3,
        lease_owner="w",
        lease_expires_at=AT,
        runnable_at=AT,
        next_seq=9,
        inbox_last=2,
        created_at=AT,
        updated_at=AT,
        claims=1,
    )


def test_a_page_holds_the_limit_and_a_cursor_only_when_more_follow() -> None:
    rows = [(30, "c"), (20, "b"), (10, "a")]
    page = page_of(rows, 2, lambda row: row[1], lambda row: row[0])
    assert (page.items, page.next_cursor) == (("c", "b"), "20")
    assert cursor_position(page.next_cursor or "") == 20
    last = page_of(rows, 3, lambda row: row[1], lambda row: row[0])
    assert (last.items, last.next_cursor) == (("c", "b", "a"), None)
    for limit in (0, -1):
        assert page_of(rows, limit, lambda row: row[1], lambda row: row[0]).items == ()
    with pytest.raises(ValueError, match=r"cursor 'x' was not issued by this store; pass a Page"):
        cursor_position("x")


def test_only_the_missing_migrations_are_applied_and_a_newer_schema_is_refused() -> None:
    steps = (Migration(1, "one", ("a",)), Migration(2, "two", ("b", "c")))
    assert migrations_after(steps, 0, where="Store here", package="psych-store-x") == steps
    assert migrations_after(steps, 1, where="Store here", package="psych-store-x") == steps[1:]
    assert migrations_after(steps, 2, where="Store here", package="psych-store-x") == ()
    with pytest.raises(StoreError) as newer:
        migrations_after(steps, 3, where="Store here", package="psych-store-x")
    assert str(newer.value) == (
        "Store here: the schema is at version 3, newer than this psych-store-x knows (2); "
        "upgrade psych-store-x in this process's environment"
    )


# -- the Store base class ------------------------------------------------------------------


class _Counted(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    async def close(self) -> None:
        self.closed += 1


async def test_a_store_has_limits_close_and_async_with_from_the_base_class() -> None:
    async with MemoryStore() as store:
        assert store.limits.max_append_records == 1000
        await store.close()
    await store.close()  # again: nothing to do
    assert StoreLimits() == StoreLimits(4 * 1024 * 1024, 1000, 16 * 1024 * 1024)


async def test_closing_an_offloading_store_closes_the_store_it_wraps() -> None:
    inner = _Counted()
    async with OffloadingStore(inner, MemoryBlobStore()) as outer:
        assert outer.limits == inner.limits
    assert inner.closed == 1

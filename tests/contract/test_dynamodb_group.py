"""DynamoDBStore's group commit beyond the contract: a warmed group of runs' appends is ONE
``TransactWriteItems``, packed into several only past DynamoDB's 100 items or 4 MB; an append
the transaction refuses goes alone and gets the refusal `append` gives, the others commit;
and a transaction that fails or whose answer is lost still writes each batch once."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from psych_core import (
    Append,
    AppendResult,
    Batch,
    LeaseLost,
    Notify,
    Resume,
    RunIndex,
    Store,
    StoreUnavailable,
)
from psych_store_dynamodb import DynamoDBStore
from psych_store_dynamodb._client import Reason
from tests.contract.test_dynamodb_store import (
    RUNNING,
    admit,
    admit_and_claim,
    batch,
    drop,
    entry,
    migrated,
    open_store,
    sized,
    utc_now,
)

pytestmark = pytest.mark.contract


@pytest.fixture
async def store() -> AsyncIterator[DynamoDBStore]:
    opened = await migrated(open_store())
    try:
        yield opened
    finally:
        await drop(opened)


def run_of(item: dict[str, Any]) -> str:
    """The run a transaction item writes to."""
    ((_, action),) = item.items()
    key = action["Key"] if "Key" in action else action["Item"]
    return str(key["pk"]["S"]).removeprefix("RUN#")


class Transactions:
    """Every ``TransactWriteItems`` the store sends, as the runs of its items in order (a
    spy on the store's connection)."""

    def __init__(self, store: DynamoDBStore, mp: pytest.MonkeyPatch) -> None:
        self.sent: list[list[str]] = []
        conn = store._conn
        call = conn.call

        async def spied(operation: str, **request: Any) -> dict[str, Any]:
            if operation == "TransactWriteItems":
                self.sent.append([run_of(item) for item in request["TransactItems"]])
            return await call(operation, **request)

        mp.setattr(conn, "call", spied)

    @property
    def runs(self) -> list[int]:
        """How many runs each transaction wrote to."""
        return [len(set(runs)) for runs in self.sent]

    @property
    def sizes(self) -> list[int]:
        """How many items each transaction held."""
        return [len(runs) for runs in self.sent]


@pytest.fixture
def transactions(store: DynamoDBStore, monkeypatch: pytest.MonkeyPatch) -> Transactions:
    return Transactions(store, monkeypatch)


async def next_append(
    store: Store, run_id: str, attempt: int, count: int = 1, size: int = 0
) -> Append:
    """`count` records at the run's next seq (each `size` bytes of JSON when given)."""
    row = await store.get_run("t", run_id)
    assert row is not None
    seqs = range(row.next_seq, row.next_seq + count)
    records = [
        sized(run_id, seq, attempt, size) if size else entry(run_id, seq, attempt, f"{seq}")
        for seq in seqs
    ]
    return Append(run_id, attempt, batch(records))


async def group_of(store: Store, sizes: Sequence[int], size: int = 0) -> list[Append]:
    """Fresh runs claimed by `store` (so it knows them), one append each of `sizes` records."""
    group = []
    for count in sizes:
        claim = await admit_and_claim(store)
        group.append(await next_append(store, claim.run_id, claim.attempt, count, size))
    return group


async def assert_written_once(store: Store, group: Sequence[Append]) -> None:
    """Each batch is in its log exactly once, after admission and claim, and nothing else."""
    for one in group:
        log = await store.read(one.run_id)
        assert [record.seq for record in log] == list(range(2 + len(one.batch.records)))
        assert log[2:] == list(one.batch.records), one.run_id
        row = await store.get_run("t", one.run_id)
        assert row is not None
        assert row.next_seq == 2 + len(one.batch.records)


# -- one transaction -----------------------------------------------------------------------


async def test_a_warmed_group_is_one_transaction(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    group = await group_of(store, (1, 3, 2, 1, 1, 2))
    transactions.sent.clear()
    assert await store.append_many(group) == [AppendResult(0)] * 6
    assert transactions.runs == [6]
    assert transactions.sizes == [6 + 10], "each run's row and its records"
    await assert_written_once(store, group)


async def test_runs_this_process_does_not_know_are_read_and_written_alone(
    store: DynamoDBStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = await group_of(store, (1, 2, 1))
    async with open_store(store.table) as other:  # a process that never saw these runs
        spied = Transactions(other, monkeypatch)
        assert await other.append_many(group) == [AppendResult(0)] * 3
        assert spied.runs == [1, 1, 1]
        spied.sent.clear()
        warmed = [await next_append(other, one.run_id, one.attempt) for one in group]
        assert await other.append_many(warmed) == [AppendResult(0)] * 3
        assert spied.runs == [3], "now it knows them: one transaction"


async def test_an_append_with_notices_goes_alone_beside_the_group(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    target = await admit(store)
    group = await group_of(store, (1, 2, 1, 1))
    sender = group[1]
    notice = Notify(run_id=target, key="from-sender", signal=Resume(payload=1))
    group[1] = Append(
        sender.run_id,
        sender.attempt,
        Batch(sender.batch.records, sender.batch.batch_id, RUNNING, notify=(notice,)),
    )
    transactions.sent.clear()
    assert await store.append_many(group) == [AppendResult(0)] * 4
    together = [runs for runs in transactions.sent if len(set(runs)) == 3]
    alone = [runs for runs in transactions.sent if sender.run_id in runs]
    assert len(transactions.sent) == 2
    assert len(together) == 1 and sender.run_id not in together[0]
    assert set(alone[0]) == {sender.run_id, target}
    await assert_written_once(store, group)
    assert [got.signal for got in await store.signals(target)] == [Resume(payload=1)]


# -- refusals: the one `append` gives, to that append only ---------------------------------


async def test_a_fenced_append_is_refused_alone_and_the_others_commit(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    group = await group_of(store, (1, 2, 1, 3))
    fenced = group[2]
    ahead = dt.timedelta(minutes=5)  # past the lease: another worker takes the run
    async with open_store(store.table, clock=lambda: utc_now() + ahead) as other:
        taken = await other.claim("worker-2", dt.timedelta(seconds=60), run_id=fenced.run_id)
        assert taken is not None and taken.attempt == 2
    transactions.sent.clear()
    outcomes = await store.append_many(group)
    # The group's transaction was cancelled on the fenced run's row; the others went again
    # together, and the fenced append was judged on its row, read, without another write.
    assert transactions.runs == [4, 3]
    assert fenced.run_id not in transactions.sent[1]
    assert [outcomes[i] for i in (0, 1, 3)] == [AppendResult(0)] * 3
    refused = outcomes[2]
    assert isinstance(refused, LeaseLost), refused
    assert (refused.run_id, refused.attempt) == (fenced.run_id, 1)
    with pytest.raises(LeaseLost) as alone:
        await store.append(fenced.run_id, fenced.attempt, fenced.batch)
    assert type(alone.value) is type(refused)
    assert str(alone.value) == str(refused), "the refusal `append` gives"
    await assert_written_once(store, [group[i] for i in (0, 1, 3)])
    log = await store.read(fenced.run_id)
    assert [(record.seq, record.attempt) for record in log] == [(0, 0), (1, 1), (2, 2)]


async def test_a_signal_from_another_process_sends_only_its_run_alone(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    group = await group_of(store, (1, 1, 2))
    async with open_store(store.table) as other:
        await other.signal("t", group[0].run_id, Resume(payload="hi"), "hi")
    transactions.sent.clear()
    outcomes = await store.append_many(group)
    assert outcomes == [AppendResult(1), AppendResult(0), AppendResult(0)]
    assert transactions.runs == [3, 2, 1], "cancelled, the two others together, then it alone"
    await assert_written_once(store, group)


async def test_a_naive_due_at_refuses_the_group_before_writing(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    group = await group_of(store, (1, 1))
    later = RunIndex(status="waiting", waiting="external", due_at=dt.datetime(2030, 1, 1))
    naive = Append(group[1].run_id, 1, Batch(group[1].batch.records, "naive", later))
    transactions.sent.clear()
    with pytest.raises(ValueError, match="timezone"):
        await store.append_many([group[0], naive])
    assert transactions.sent == []
    for one in group:
        assert len(await store.read(one.run_id)) == 2


# -- a transaction that fails, or whose answer is lost -------------------------------------


@pytest.mark.parametrize("lost", ["before it is sent", "after it commits"])
async def test_a_group_that_fails_unavailable_writes_each_batch_once(
    store: DynamoDBStore,
    transactions: Transactions,
    monkeypatch: pytest.MonkeyPatch,
    lost: str,
) -> None:
    group = await group_of(store, (2, 1, 3, 1))
    conn = store._conn
    transact = conn.transact
    failed: list[int] = []

    async def failing(items: Sequence[dict[str, Any]]) -> list[Reason] | None:
        if not failed and len({run_of(item) for item in items}) > 1:
            failed.append(len(items))
            if lost == "after it commits":
                assert await transact(items) is None
            raise StoreUnavailable(f"injected: the group's transaction failed {lost}")
        return await transact(items)

    monkeypatch.setattr(conn, "transact", failing)
    transactions.sent.clear()
    assert await store.append_many(group) == [AppendResult(0)] * 4
    assert failed == [4 + 7], "the group's one transaction failed"
    committed = 1 if lost == "after it commits" else 0
    assert transactions.runs == [4] * committed + [1] * 4, "then each append alone"
    await assert_written_once(store, group)


async def test_a_group_cancelled_for_no_condition_sends_each_append_alone(
    store: DynamoDBStore, transactions: Transactions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As when every try met a concurrent transaction: no item's condition failed, so no
    # append is at fault, and nothing was written: each goes through `append`.
    group = await group_of(store, (1, 2, 1))
    conn = store._conn
    transact = conn.transact
    refused: list[int] = []

    async def conflicted(items: Sequence[dict[str, Any]]) -> list[Reason] | None:
        if not refused and len({run_of(item) for item in items}) > 1:
            refused.append(len(items))
            return [Reason("TransactionConflict")] * len(items)
        return await transact(items)

    monkeypatch.setattr(conn, "transact", conflicted)
    transactions.sent.clear()
    assert await store.append_many(group) == [AppendResult(0)] * 3
    assert refused == [3 + 4]
    assert transactions.runs == [1, 1, 1]
    await assert_written_once(store, group)


# -- past DynamoDB's limits: several transactions ------------------------------------------


async def test_a_group_over_a_hundred_items_is_split(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    group = await group_of(store, [20] * 8)  # 8 x 21 = 168 items
    transactions.sent.clear()
    assert await store.append_many(group) == [AppendResult(0)] * 8
    assert sorted(transactions.sizes) == [84, 84]
    assert sorted(transactions.runs) == [4, 4]
    assert {run for runs in transactions.sent for run in runs} == {one.run_id for one in group}
    await assert_written_once(store, group)


async def test_a_group_over_four_megabytes_is_split(
    store: DynamoDBStore, transactions: Transactions
) -> None:
    # Each append carries 4 records of 380,000 bytes (1.52 MB): three do not fit in 4 MB.
    group = await group_of(store, (4, 4, 4), size=380_000)
    transactions.sent.clear()
    assert await store.append_many(group) == [AppendResult(0)] * 3
    assert sorted(transactions.runs) == [1, 2]
    # The append packed alone went through `append`, which sent it on its own.
    assert sorted(transactions.sizes) == [5, 10]
    await assert_written_once(store, group)

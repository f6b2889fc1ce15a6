"""The data path with producer ids: idempotent appends, transactional batches, markers, the
last stable offset and read_committed, and the producer state after a restart (with and
without its snapshot, as after a clean stop and after kill -9)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kgroup.error_codes import ErrorCode as E
from kgroup.storage.producer_snapshots import list_snapshots
from kgroup.wire.record_batch import build_batch

from tests.unit.broker.datactx import LIST_OFFSETS, DataCtx, codes

V = 9  # Produce / Fetch versions (flexible, with isolation level and aborted transactions)


def batch(pid: int, epoch: int, seq: int, n: int = 2, txn: bool = False, tag: bytes = b"v") -> bytes:
    return build_batch([(None, tag + b"%d" % i, [], 1_000 + i) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, transactional=txn)


async def answer(ctx: DataCtx, records: bytes, txn_id: str | None = None) -> tuple[int, int]:
    r = await ctx.produce(V, {"t": {0: records}}, transactional_id=txn_id)
    p = r.responses[0].partition_responses[0]
    return int(p.error_code), int(p.base_offset)


def reopen(path: Path, ctx: DataCtx, clean: bool) -> DataCtx:
    """Close the context (clean: as SIGTERM, with producer-state snapshots; else as kill -9
    after everything reached the kernel) and open a new one on the same data dir."""
    if clean:
        ctx.dp.close()
    else:
        ctx.dp.watch.close()
    ctx.data.close()
    return DataCtx(path)


def run(coro_fn, path: Path) -> None:
    async def main() -> None:
        ctx = DataCtx(path / "data")
        ctx.durability.start()
        ctx.data.create_topic("t", 1)
        await coro_fn(ctx)

    asyncio.run(main())


def test_kip98_duplicates_out_of_order_and_old_epochs(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        assert await answer(ctx, batch(7, 0, 0)) == (0, 0)
        assert await answer(ctx, batch(7, 0, 2)) == (0, 2)
        assert await answer(ctx, batch(7, 0, 0)) == (0, 0)                 # a retry: stored once
        assert (await answer(ctx, batch(7, 0, 9)))[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert await answer(ctx, batch(7, 1, 0)) == (0, 4)                 # a bumped epoch starts at 0
        assert (await answer(ctx, batch(7, 0, 4)))[0] == E.INVALID_PRODUCER_EPOCH
        assert ctx.data.partition_log("t", 0).log_end_offset == 6

    run(scenario, tmp_path)


def test_kip98_producer_state_survives_a_restart_with_and_without_its_snapshot(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        for clean in (False, True, False):
            seq = ctx.data.partition_log("t", 0).log_end_offset
            assert await answer(ctx, batch(7, 0, seq)) == (0, seq)
            ctx = reopen(tmp_path / "data", ctx, clean)
            ctx.durability.start()
            if clean:
                assert list_snapshots(ctx.data.partition_log("t", 0).directory)
            assert await answer(ctx, batch(7, 0, seq)) == (0, seq)         # still a duplicate
            assert (await answer(ctx, batch(7, 0, seq + 5)))[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert ctx.data.partition_log("t", 0).log_end_offset == 6

    run(scenario, tmp_path)


def test_a_producer_state_snapshot_past_the_log_or_unreadable_is_ignored(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        await answer(ctx, batch(7, 0, 0))
        directory = ctx.data.partition_log("t", 0).directory
        ctx = reopen(tmp_path / "data", ctx, clean=True)
        ((offset, path),) = list_snapshots(directory)
        path.write_bytes(b"not json")                                     # damaged
        (directory / f"{offset + 100:020d}.producers").write_bytes(b"{}")  # past the surviving log
        ctx.durability.start()
        assert await answer(ctx, batch(7, 0, 0)) == (0, 0)
        assert [o for o, _ in list_snapshots(directory)] == [offset]

    run(scenario, tmp_path)


def test_kip890_a_transactional_batch_needs_its_transactional_id_and_an_open_transaction(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        verdicts = {"tx": E.NONE, "fenced": E.PRODUCER_FENCED, "busy": E.CONCURRENT_TRANSACTIONS}
        ctx.dp.ctx.verify_txn = lambda tid, pid, epoch, parts: verdicts[tid]
        assert (await answer(ctx, batch(5, 0, 0, txn=True)))[0] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert (await answer(ctx, batch(5, 0, 0, txn=True), "fenced"))[0] == E.INVALID_PRODUCER_EPOCH
        assert (await answer(ctx, batch(5, 0, 0, txn=True), "busy"))[0] == E.NOT_ENOUGH_REPLICAS
        assert await answer(ctx, batch(5, 0, 0, txn=True), "tx") == (0, 0)
        assert ctx.data.partition_log("t", 0).log_end_offset == 2

    run(scenario, tmp_path)


def test_kip98_read_committed_stops_at_the_lso_and_gets_the_aborted_transactions(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        ctx.dp.ctx.verify_txn = lambda *a: E.NONE
        plog = ctx.data.partition_log("t", 0)
        producers = ctx.dp.ctx.producers
        await answer(ctx, batch(5, 0, 0, txn=True, tag=b"aborted"), "tx")  # 0-1
        await answer(ctx, batch(6, 0, 0, n=1, tag=b"plain"))              # 2
        await answer(ctx, batch(8, 0, 0, txn=True, tag=b"committed"), "tx")  # 3-4

        async def committed() -> tuple[int, int, list, bytes]:
            f = await ctx.fetch(12, {"t": [(0, 0)]}, isolation=1)
            p = f.responses[0].partitions[0]
            aborted = [(int(a.producer_id), int(a.first_offset)) for a in p.aborted_transactions]
            return int(p.high_watermark), int(p.last_stable_offset), aborted, bytes(p.records)

        hw, lso, aborted, records = await committed()
        assert (hw, lso, aborted, records) == (5, 0, [], b"")             # nothing below the open txn
        producers.append_marker(("t", 0), plog, 5, 0, False, 0, 2_000)    # abort of 5 at offset 5
        hw, lso, aborted, records = await committed()
        assert (hw, lso, aborted) == (6, 3, [(5, 0)]) and b"plain" in records and b"committed" not in records
        producers.append_marker(("t", 0), plog, 8, 0, True, 0, 2_000)     # commit of 8 at offset 6
        hw, lso, aborted, records = await committed()
        assert (hw, lso, aborted) == (7, 7, [(5, 0)]) and b"committed" in records
        offsets = await ctx.list_offsets(7, "t", [(0, -1)], isolation=1)
        assert int(offsets.topics[0].partitions[0].offset) == 7
        plain = await ctx.fetch(12, {"t": [(0, 0)]})
        assert plain.responses[0].partitions[0].aborted_transactions is None

    run(scenario, tmp_path)


def test_list_offsets_read_committed_answers_the_last_stable_offset(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        ctx.dp.ctx.verify_txn = lambda *a: E.NONE
        await answer(ctx, batch(6, 0, 0, n=3))
        await answer(ctx, batch(5, 0, 0, txn=True), "tx")
        committed = await ctx.list_offsets(7, "t", [(0, -1)], isolation=1)
        uncommitted = await ctx.list_offsets(7, "t", [(0, -1)])
        assert codes(committed, LIST_OFFSETS) == [0]
        assert int(committed.topics[0].partitions[0].offset) == 3
        assert int(uncommitted.topics[0].partitions[0].offset) == 5

    run(scenario, tmp_path)


def test_producer_ids_are_never_handed_out_twice_across_restarts(tmp_path):
    data = tmp_path / "data"
    seen = set()
    for _ in range(3):
        ctx = DataCtx(data)
        ids = {ctx.dp.id_blocks.next() for _ in range(5)}
        assert not ids & seen
        seen |= ids
        ctx.data.close()


def test_kip98_an_idle_producer_is_forgotten_at_producer_id_expiration(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        assert await answer(ctx, batch(7, 0, 0)) == (0, 0)                 # timestamps 1000-1001
        ctx.dp.apply_retention(now_ms=1_001 + ctx.config.transactions.producer_id_expiration_ms - 1)
        assert (await answer(ctx, batch(7, 0, 9)))[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER
        ctx.dp.apply_retention(now_ms=1_001 + ctx.config.transactions.producer_id_expiration_ms)
        assert await answer(ctx, batch(7, 0, 9)) == (0, 2)                 # forgotten: starts anew

    run(scenario, tmp_path)

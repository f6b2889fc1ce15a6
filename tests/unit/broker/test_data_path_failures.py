"""Storage failures become per-partition KAFKA_STORAGE_ERROR, never exceptions."""

from __future__ import annotations

import logging

from .datactx import FETCH, LIST_OFFSETS, PRODUCE, DataCtx, batch, codes, run

STORAGE_ERROR = 56


def test_closed_log_answers_storage_error(tmp_path, caplog):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(2), 1: batch(2)}})
        ctx.data.partition_log("t", 0).close()
        with caplog.at_level(logging.ERROR, logger="kgroup.broker.data"):
            r = await ctx.produce(9, {"t": {0: batch(1), 1: batch(1)}})
            assert codes(r, PRODUCE) == [STORAGE_ERROR, 0]
            f = await ctx.fetch(12, {"t": [(0, 0), (1, 0)]})
            assert codes(f, FETCH) == [STORAGE_ERROR, 0]
            assert len(f.responses[0].partitions[1].records) > 0
        assert any("storage" in rec.getMessage() for rec in caplog.records)

    run(tmp_path, scenario)


def test_failed_fsync_answers_storage_error_for_acks_all(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        ctx.durability.failed = OSError("disk gone")
        r = await ctx.produce(9, {"t": {0: batch(1)}}, acks=-1)
        assert codes(r, PRODUCE) == [STORAGE_ERROR]
        assert r.responses[0].partition_responses[0].error_message

    run(tmp_path, scenario)


def test_list_offsets_on_closed_log(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        await ctx.produce(9, {"t": {0: batch(2, ts=50)}})
        ctx.data.partition_log("t", 0).close()
        parts = await ctx.list_offsets_each(7, "t", [(0, -1), (0, 10)])
        assert [int(p.error_code) for p in parts] in ([0, STORAGE_ERROR], [STORAGE_ERROR, STORAGE_ERROR])

    run(tmp_path, scenario)


def test_topics_changed_hook_failure_is_logged_not_raised(tmp_path, caplog):
    async def scenario(ctx: DataCtx):
        def boom() -> None:
            raise RuntimeError("hook broke")

        ctx.dp.on_topics_changed = boom
        with caplog.at_level(logging.ERROR, logger="kgroup.broker.data"):
            r = await ctx.create_topics(7, [{"name": "a", "partitions": 1}])
        assert int(r.topics[0].error_code) == 0
        assert "on_topics_changed" in caplog.text

    run(tmp_path, scenario)


NOT_LEADER_OR_FOLLOWER = 6


def test_log_handed_over_while_waiting_for_fsync_is_not_leader(tmp_path):
    """A produce appended, then waited for its fsync while the node handed the partition's
    unit to another node (close_unit): the client must refresh metadata and retry, as Kafka
    answers a write that lost its leader — not a storage error. A log closed any other way
    stays KAFKA_STORAGE_ERROR (test_closed_log_answers_storage_error)."""
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        durable = ctx.durability.durable
        handed = ctx.data.partition_log("t", 0)

        async def hand_over_first(target, end):
            if target is handed:
                ctx.data.close_unit(ctx.data.unit_of("t", 0), release=True)
            await durable(target, end)

        ctx.durability.durable = hand_over_first
        r = await ctx.produce(9, {"t": {0: batch(1), 1: batch(1)}}, acks=-1)
        assert codes(r, PRODUCE) == [NOT_LEADER_OR_FOLLOWER, 0]

    run(tmp_path, scenario)


def test_log_handed_over_before_flush_is_not_leader(tmp_path):
    """acks=1: the hand-over closes the log between the append and the flush."""
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        ring = ctx.dp.watch.ring

        def hand_over_then_ring(key):
            ctx.data.close_unit(ctx.data.unit_of(*key), release=True)
            ring(key)

        ctx.dp.watch.ring = hand_over_then_ring
        r = await ctx.produce(9, {"t": {0: batch(1)}}, acks=1)
        assert codes(r, PRODUCE) == [NOT_LEADER_OR_FOLLOWER]

    run(tmp_path, scenario)

"""A Fetch throttled by a client quota (KIP-219, as Kafka 4.4's KafkaApis answers it): no
partitions at all and the fetch session as the fetch found it — a full fetch opens none, an
incremental one remembers nothing it did not send — and the bytes it did not send are not
counted against the consumer's byte rate."""

from __future__ import annotations

from kgroup.broker.admin.client_quotas import ClientQuotas
from kgroup.broker.data.fetch_api import FETCH_QUOTA
from kgroup.core.quotas import CLIENT_ID

from .datactx import DataCtx, batch, run
from .test_client_quotas import Clock


class Quota:
    """A stand-in for the request path's check: the sizes it was asked about, and a wait."""

    def __init__(self, wait: int) -> None:
        self.wait, self.sizes = wait, []

    def __call__(self, size: int) -> int:
        self.sizes.append(size)
        return self.wait


def test_a_throttled_full_fetch_answers_nothing_and_opens_no_session(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(3), 1: batch(2)}})
        quota = Quota(700)
        FETCH_QUOTA.set(quota)
        r = await ctx.fetch(12, {"t": [(0, 0), (1, 0)]}, session_epoch=0)
        assert (int(r.error_code), r.session_id, r.responses) == (0, 0, ())
        assert len(quota.sizes) == 1 and quota.sizes[0] > 0     # asked with the records' size
        assert len(ctx.dp.ctx.fetch_sessions) == 0
        # Not throttled: the same fetch gets its records and a session.
        quota.wait = 0
        r = await ctx.fetch(12, {"t": [(0, 0), (1, 0)]}, session_epoch=0)
        assert r.session_id != 0 and [len(p.records) > 0 for t in r.responses for p in t.partitions] == [True, True]

    run(tmp_path, scenario)


def test_a_throttled_incremental_fetch_leaves_its_session_as_it_was(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(1), 1: batch(1)}})
        opened = await ctx.fetch(12, {"t": [(0, 1), (1, 1)]}, session_epoch=0)
        session = opened.session_id
        await ctx.produce(9, {"t": {1: batch(2)}})        # partition 1's high watermark moves
        FETCH_QUOTA.set(Quota(300))
        r = await ctx.fetch(12, {}, session_id=session, session_epoch=1)
        assert (int(r.error_code), r.session_id, r.responses) == (0, session, ())
        # The session moved on (epoch 2) but did not take the new high watermark as sent.
        FETCH_QUOTA.set(None)
        r = await ctx.fetch(12, {}, session_id=session, session_epoch=2)
        parts = [(p.partition_index, p.high_watermark, len(p.records) > 0) for t in r.responses for p in t.partitions]
        assert parts == [(1, 3, True)]

    run(tmp_path, scenario)


def test_a_throttled_fetch_of_a_stale_epoch_says_so(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        session = (await ctx.fetch(12, {"t": [(0, 0)]}, session_epoch=0)).session_id
        FETCH_QUOTA.set(Quota(300))
        r = await ctx.fetch(12, {}, session_id=session, session_epoch=5)
        # (a session error: Kafka's throttled answer to it says nothing of it)
        assert (int(r.error_code), r.session_id, r.responses) == (0, 0, ())

    run(tmp_path, scenario)


def test_a_throttled_fetch_is_not_charged_its_bytes(tmp_path):
    clock = Clock()
    quotas = ClientQuotas(tmp_path, clock=clock)
    quotas.alter([([(CLIENT_ID, "slow")], (("consumer_byte_rate", 1000.0, False),))], validate_only=False)
    assert quotas.fetch_throttle_ms("ANONYMOUS", "slow", fetched=5000, cpu_ns=0) == 0   # 5000 B / 10 s
    clock.now += 10
    assert quotas.fetch_throttle_ms("ANONYMOUS", "slow", fetched=20_000, cpu_ns=0) > 0
    # The 20 kB were not sent, so not counted: 5000 B more still fits the ten windows.
    clock.now += 10
    assert quotas.fetch_throttle_ms("ANONYMOUS", "slow", fetched=5000, cpu_ns=0) == 0

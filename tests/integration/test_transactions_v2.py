"""Transactions v2 (KIP-890 part 2) on a real `kgroup serve`, asked on the wire as a
transaction.version 2 client asks: Produce v12 adds the partition, EndTxn v5 bumps the
epoch. The bumped epoch is durable: after `kill -9` a retried EndTxn is answered with it,
the old epoch stays fenced, and the transaction's records are committed exactly once."""

from __future__ import annotations

import asyncio

import pytest

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.raw import RawClient
from kgroup.error_codes import ErrorCode as E

from tests.integration.broker_process import BrokerProcess

pytestmark = pytest.mark.integration

RETRIABLE = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
             E.CONCURRENT_TRANSACTIONS, E.NOT_ENOUGH_REPLICAS}


async def until_answered(raw: RawClient, req, what: str):
    async def answered():
        r = await raw.call(req)
        code = E(int(r.error_code)) if hasattr(r, "error_code") else E.NONE
        return None if code in RETRIABLE else r
    return await observe.until(answered, what)


def end_txn(tid: str, pid: int, epoch: int, commit: bool = True):
    return request("EndTxn", 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)


async def produce(raw: RawClient, topic: str, tid: str, pid: int, epoch: int, seq: int, values: list[bytes]):
    async def answered():
        r = await observe.produce(raw, topic, 0, values, version=12, transactional_id=tid, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, transactional=True)
        return None if E(int(r.error_code)) in RETRIABLE else r
    return await observe.until(answered, "produce")


def test_kip890_the_bumped_epoch_survives_kill_9(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    tid, topic = "tv2-durable", "tv2-out"
    try:
        async def before() -> tuple[int, int]:
            raw = await RawClient.open(broker.bootstrap)
            try:
                await observe.create_topic(raw, topic, 1)
                init = await until_answered(raw, request("InitProducerId", 5, transactional_id=tid,
                                                         transaction_timeout_ms=60_000, producer_id=-1,
                                                         producer_epoch=-1), "InitProducerId")
                pid, epoch = int(init.producer_id), int(init.producer_epoch)
                r = await produce(raw, topic, tid, pid, epoch, 0, [b"one", b"two"])
                assert E(int(r.error_code)) is E.NONE
                ended = await raw.call(end_txn(tid, pid, epoch))
                assert E(int(ended.error_code)) is E.NONE
                assert (int(ended.producer_id), int(ended.producer_epoch)) == (pid, epoch + 1)
                return pid, epoch
            finally:
                await raw.close()
        pid, epoch = asyncio.run(before())
        broker.kill9()
        broker.start()

        async def after() -> None:
            raw = await RawClient.open(broker.bootstrap)
            try:
                # The retried EndTxn (old epoch) is answered with the bumped one.
                retry = await until_answered(raw, end_txn(tid, pid, epoch), "EndTxn retry")
                assert E(int(retry.error_code)) is E.NONE and int(retry.producer_epoch) == epoch + 1
                # The old epoch is fenced in the partition; the new one writes and commits.
                old = await produce(raw, topic, tid, pid, epoch, 2, [b"zombie"])
                assert E(int(old.error_code)) is E.INVALID_PRODUCER_EPOCH
                new = await produce(raw, topic, tid, pid, epoch + 1, 0, [b"three"])
                assert E(int(new.error_code)) is E.NONE
                ended = await raw.call(end_txn(tid, pid, epoch + 1))
                assert E(int(ended.error_code)) is E.NONE and int(ended.producer_epoch) == epoch + 2
                got = await observe.until(lambda: _committed(raw, topic, 3), "three committed records")
                assert got == [b"one", b"two", b"three"]
            finally:
                await raw.close()
        asyncio.run(after())
    finally:
        broker.finish()


async def _committed(raw: RawClient, topic: str, count: int):
    got = await observe.read_all(raw, topic, isolation_level=1)
    values = [r["value"] for r in got["records"] if not r.get("control")]
    return values if len(values) >= count else None

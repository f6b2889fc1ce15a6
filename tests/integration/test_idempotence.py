"""Idempotence (KIP-98): a produce whose answer is lost is retried by the client and stored once.

A proxy (answer_dropper.py) in front of a real `kgroup serve` swallows the broker's answer to
Produce requests and cuts the connection, after the broker appended the batch. An idempotent
producer (librdkafka, kafka-python, our own) resends the same batch with the same sequence
number on a new connection; the broker recognises it and answers with the first copy's
offset. The same run with idempotence off stores the batch twice, which shows the proxy
really loses answers the client then retries.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.answer_dropper import AnswerDropper
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.txn_clients import read

pytestmark = pytest.mark.integration

COUNT = 20


@pytest.fixture
def dropper(tmp_path):
    proxy_port = free_port()
    broker = BrokerProcess(tmp_path / "data", extra={"advertised": f"127.0.0.1:{proxy_port}"})
    proxy = AnswerDropper(broker.port, drops=3)
    proxy.port = proxy_port
    broker.start()
    proxy.start()
    yield proxy
    proxy.stop()
    broker.finish()


def produce(kind: str, bootstrap: str, topic: str, idempotent: bool) -> None:
    values = [f"record-{i}".encode() for i in range(COUNT)]
    if kind == "confluent-kafka":
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": idempotent, "acks": "all",
                      "linger.ms": 0, "retries": 10, "retry.backoff.ms": 50})
        for v in values:
            p.produce(topic, v, partition=0)
            p.flush(30)
        assert p.flush(30) == 0
    elif kind == "kafka-python":
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=idempotent, acks="all", retries=10,
                          retry_backoff_ms=50, linger_ms=0)
        for v in values:
            p.send(topic, v, partition=0).get(30)
        p.close()
    else:
        from kgroup.client import Producer

        async def run() -> None:
            async with Producer({"bootstrap.servers": bootstrap, "enable.idempotence": idempotent,
                                 "linger.ms": 0, "retries": 10, "retry.backoff.ms": 50}) as p:
                for v in values:
                    await p.send_and_wait(topic, v, partition=0)

        asyncio.run(run())


@pytest.mark.parametrize("kind", ["confluent-kafka", "kafka-python", "kgroup"])
def test_kip98_a_retry_after_a_lost_answer_is_stored_once(dropper, kind):
    bootstrap = f"127.0.0.1:{dropper.port}"
    produce(kind, bootstrap, "idem", idempotent=True)
    assert dropper.dropped == 3
    values = read("confluent-kafka", bootstrap, "idem", 1, "read_uncommitted", COUNT)
    assert sorted(values) == sorted(f"record-{i}".encode() for i in range(COUNT))


def test_without_idempotence_the_same_lost_answers_store_duplicates(dropper):
    bootstrap = f"127.0.0.1:{dropper.port}"
    produce("confluent-kafka", bootstrap, "plain", idempotent=False)
    assert dropper.dropped == 3
    values = read("confluent-kafka", bootstrap, "plain", 1, "read_uncommitted", COUNT)
    assert len(values) > COUNT and set(values) == {f"record-{i}".encode() for i in range(COUNT)}


def test_kip98_sequence_state_survives_kill_9_of_the_broker(tmp_path):
    """The same batch sent before and after a kill -9 is stored once; a gap is still refused."""
    from kgroup.client.cluster import ClusterClient, request_fields
    from kgroup.wire.record_batch import build_batch
    from kgroup.wire.api_keys import ApiKey

    broker = BrokerProcess(tmp_path / "data").start()

    async def send(records: bytes) -> tuple[int, int]:
        cluster = ClusterClient(broker.bootstrap)
        try:
            conn = await cluster.connect()
            resp = await cluster.request(conn, ApiKey.PRODUCE, request_fields(
                transactional_id=None, acks=-1, timeout=10_000,
                topic_data=[{"name": "survive", "partition_data": [{"index": 0, "records": records}]}]))
            p = resp.responses[0].partition_responses[0]
            return int(p.error_code), int(p.base_offset)
        finally:
            await cluster.close()

    async def producer_id() -> int:
        cluster = ClusterClient(broker.bootstrap)
        try:
            await cluster.topic("survive", auto_create=True)
            resp = await cluster.request_any(ApiKey.INIT_PRODUCER_ID, request_fields(
                transactional_id=None, transaction_timeout=60_000, producer_id=-1, producer_epoch=-1))
            return int(resp.producer_id)
        finally:
            await cluster.close()

    try:
        pid = asyncio.run(producer_id())
        first = build_batch([(None, b"once-%d" % i, [], 1) for i in range(3)], producer_id=pid,
                            producer_epoch=0, base_sequence=0)
        assert asyncio.run(send(first)) == (0, 0)
        broker.kill9()
        broker.start()
        assert asyncio.run(send(first)) == (0, 0)                     # the retry after the crash
        gap = build_batch([(None, b"gap", [], 1)], producer_id=pid, producer_epoch=0, base_sequence=7)
        assert asyncio.run(send(gap))[0] == 45                         # OUT_OF_ORDER_SEQUENCE_NUMBER
        assert sorted(read("confluent-kafka", broker.bootstrap, "survive", 1, "read_uncommitted", 3)) == \
            [b"once-0", b"once-1", b"once-2"]
        assert asyncio.run(producer_id()) != pid                       # ids are not handed out again
    finally:
        broker.finish()

"""KIP-1191's dead-letter writes (broker/share/dead_letters.py) on a real data dir: the
broker's prefix, the topic's errors.deadletterqueue.group.enable, auto-creation, the copied
value and Kafka 4.4's headers."""

from __future__ import annotations

import dataclasses

from kgroup.broker.config import BrokerConfig
from kgroup.broker.share.dead_letters import GROUP_ENABLE, DeadLetterWriter
from kgroup.core.share_partition import DeadLetter, DeadLetterReason
from kgroup.storage import DataDir
from kgroup.wire.record_batch import build_batch, decode_records, split_batches

from tests.unit.closing import closed_after_test

LETTERS = [DeadLetter(1, 1, DeadLetterReason.REJECTED), DeadLetter(2, 5, DeadLetterReason.DELIVERY_LIMIT)]


def records(data: DataDir, topic: str) -> list:
    blob = data.partition_log(topic, 0).read(0, 1 << 20)
    return [r for b in split_batches(blob) for r in decode_records(b)] if blob else []


def source(tmp_path) -> DataDir:
    data = closed_after_test(DataDir(tmp_path / "d", metadata_partitions=1))
    data.create_topic("src", 1)
    data.partition_log("src", 0).append(build_batch([(None, f"v{i}".encode(), (), 1_000) for i in range(3)]))
    return data


def test_kip1191_dead_letters_carry_kafkas_headers_and_the_value_when_copied(tmp_path):
    data = source(tmp_path)
    data.create_topic("dlq.x", 1, {GROUP_ENABLE: "true"})
    rung = []
    writer = DeadLetterWriter(data, BrokerConfig(), ring=rung.append)
    assert writer.write("g", "dlq.x", True, "src", 0, LETTERS, now_ms=7_000) == 2
    got = records(data, "dlq.x")
    assert [(r.key, r.value, r.timestamp) for r in got] == [(None, b"v1", 7_000), (None, b"v2", 7_000)]
    assert dict(got[1].headers) == {
        "__dlq.errors.topic": b"src", "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"2",
        "__dlq.errors.group": b"g", "__dlq.errors.delivery.count": b"5",
        "__dlq.errors.message": b"Offset delivery count exceeded the threshold."}
    assert rung == [("dlq.x", 0)]
    writer.write("g", "dlq.x", False, "src", 0, LETTERS[:1], now_ms=8_000)
    assert records(data, "dlq.x")[-1].value is None


def test_kip1191_a_topic_without_the_prefix_or_the_flag_or_missing_gets_nothing(tmp_path):
    data = source(tmp_path)
    data.create_topic("other", 1, {GROUP_ENABLE: "true"})
    data.create_topic("dlq.closed", 1)
    writer = DeadLetterWriter(data, BrokerConfig())
    for topic in ("other", "dlq.closed", "dlq.missing"):
        assert writer.write("g", topic, True, "src", 0, LETTERS) == 0
    assert records(data, "other") == [] and records(data, "dlq.closed") == []
    assert "dlq.missing" not in data.topics() and writer.dropped == 6


def test_kip1191_auto_create_makes_the_topic_with_the_flag_under_the_brokers_prefix(tmp_path):
    data = source(tmp_path)
    config = dataclasses.replace(BrokerConfig(), dlq_auto_create_topics=True, dlq_topic_name_prefix="dead-")
    writer = DeadLetterWriter(data, config)
    assert writer.write("g", "dlq.new", True, "src", 0, LETTERS) == 0          # not the prefix
    assert writer.write("g", "dead-new", True, "src", 0, LETTERS) == 2
    assert data.topic("dead-new").configs == {GROUP_ENABLE: "true"}
    assert len(records(data, "dead-new")) == 2


def test_kip1191_a_dynamic_broker_value_wins_over_the_toml_one(tmp_path):
    data = source(tmp_path)
    dynamic = {"errors.deadletterqueue.topic.name.prefix": ("x-", 4),
               "errors.deadletterqueue.auto.create.topics.enable": ("true", 4)}
    writer = DeadLetterWriter(data, BrokerConfig(), dynamic=dynamic.get)
    assert writer.write("g", "dlq.a", True, "src", 0, LETTERS) == 0
    assert writer.write("g", "x-a", True, "src", 0, LETTERS) == 2

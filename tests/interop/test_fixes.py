"""What the Java, Go and CLI clients showed, fixed in kgroup: each fix with a test of its own
at the wire, next to the client scenario that found it (named in each docstring)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kgroup.client.connection import Connection
from kgroup.wire.kio_build import build, item
from tests.interop.helpers import eventually, past_start

pytestmark = pytest.mark.integration


def _run(coro):
    return asyncio.run(coro)


async def _request(bootstrap: str, api_key: int, version: int, fill):
    host, port = bootstrap.rsplit(":", 1)
    conn = await Connection.open(host, int(port))
    try:
        return await conn.request(api_key, fill, version=version)
    finally:
        await conn.close()


def test_metadata_by_topic_id_with_an_empty_name(kgroup, name):
    """Java's KafkaConsumer subscribed with a SubscriptionPattern (a broker-side regex) learns
    its topics by id: Metadata v12+ with the id set and the name left "" (the generated
    request's default). Kafka resolves such a request by id; kgroup answered the name ""
    INVALID_TOPIC_EXCEPTION, so the consumer never reconciled its assignment
    (test_java_clients.py::test_java_consumer_protocol_regex_subscription_picks_up_new_topics)."""
    kgroup.create_topic(f"by-id-{name}", 2)

    def ask(ids):
        def fill(cls):
            topic = item(cls, "topics")
            return build(cls, topics=tuple(build(topic, topic_id=i, name="") for i in ids),
                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        return _run(_request(kgroup.bootstrap, 3, 12, fill))

    everything = _run(_request(kgroup.bootstrap, 3, 12, lambda cls: build(
        cls, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)))
    known = next(t.topic_id for t in everything.topics if t.name == f"by-id-{name}")
    unknown = uuid.uuid4()
    [found, missing] = ask([known, unknown]).topics
    assert (found.error_code, found.name, len(found.partitions)) == (0, f"by-id-{name}", 2)
    assert (missing.error_code, missing.topic_id) == (100, unknown)          # UNKNOWN_TOPIC_ID


# ---- found by Kafka's CLI tools (test_kafka_tools.py) ------------------------------------------

@pytest.fixture(scope="module")
def admin(java, kgroup):
    java.call("admin.new", name="fix-admin", config={"bootstrap.servers": kgroup.bootstrap})
    return "fix-admin"


def test_create_partitions_refusals_in_kafkas_words(java, admin, name):
    """kafka-topics --alter --partitions prints the broker's message: Kafka 4.4's words."""
    java.call("admin.createTopics", name=admin, topics=[{"name": f"grow-{name}", "partitions": 2}])
    fewer = java.call("admin.createPartitions", name=admin, topic=f"grow-{name}", count=1)[f"grow-{name}"]
    same = java.call("admin.createPartitions", name=admin, topic=f"grow-{name}", count=2)[f"grow-{name}"]
    assert fewer["error"] == {"type": "InvalidPartitionsException",
                              "message": f"The topic grow-{name} currently has 2 partition(s); 1 would not be an increase."}
    assert same["error"] == {"type": "InvalidPartitionsException", "message": "Topic already has 2 partition(s)."}


def test_share_group_describe_of_an_unknown_group_says_not_found(java, admin, name):
    """kafka-share-groups --describe prints ShareGroupDescribe's error message."""
    got = java.call("admin.describeShareGroups", name=admin, groups=[f"nope-{name}"])[f"nope-{name}"]
    assert got["error"] == {"type": "GroupIdNotFoundException", "message": f"Group nope-{name} not found."}


def test_share_group_offsets_carry_leader_epoch_zero(java, kgroup, admin, name):
    """kafka-share-groups --describe --offsets --verbose shows LEADER-EPOCH: Kafka answers the
    share partition's leader epoch (0 here, as every partition's), kgroup answered -1."""
    topic, group = f"sle-{name}", f"sle-{name}"
    java.call("admin.createTopics", name=admin, topics=[{"name": topic, "partitions": 1}])
    java.call("producer.new", name="sle-producer", config={"bootstrap.servers": kgroup.bootstrap})
    java.call("producer.send", name="sle-producer", records=[{"topic": topic, "value": "a"}, {"topic": topic, "value": "b"}])
    java.call("admin.incrementalAlterConfigs", name=admin,
              resources=[["GROUP", group, [["SET", "share.auto.offset.reset", "earliest"]]]])
    java.share_consumer("sle", {"bootstrap.servers": kgroup.bootstrap, "group.id": group}, [topic])
    try:
        eventually(lambda: past_start(java.call("admin.listShareGroupOffsets", name=admin, group=group))
                   == {f"{topic}:0": [0, 0]}, what="[lag, leader epoch]")
    finally:
        java.call("share.close", name="sle")
        java.call("producer.close", name="sle-producer")

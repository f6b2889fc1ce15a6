"""The admin APIs tools call, driven by real admin clients against `kgroup serve`.

confluent-kafka (librdkafka) and kafka-python: Metadata for all topics, DescribeConfigs,
AlterConfigs / IncrementalAlterConfigs (TOPIC, BROKER, GROUP), DescribeCluster,
DeleteRecords, DescribeLogDirs. kafkajs and @platformatic/kafka: tests/integration/node/.
"""

from __future__ import annotations

import pytest

from kgroup.client.admin import BROKER_RESOURCE, CONFIG_DELETE, CONFIG_SET
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("admin") / "data").start()
    yield proc
    proc.finish()


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def one(futures: dict):
    (future,) = futures.values()
    return future.result(15)


def test_metadata_for_all_topics_answers_every_client(broker):
    create_topic(broker.bootstrap, "adm-all", 2)
    listed = admin(broker).list_topics(timeout=10)           # Metadata v13, all topics
    assert "adm-all" in listed.topics and len(listed.topics["adm-all"].partitions) == 2
    from kafka.admin import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert "adm-all" in kp.list_topics()
        assert kp.describe_cluster()["cluster_id"] == "kgroup"
    finally:
        kp.close()


def test_describe_configs_of_a_topic_and_the_broker(broker):
    create_topic(broker.bootstrap, "adm-cfg", 1)
    a = admin(broker)
    topic = one(a.describe_configs([ConfigResource(ResourceType.TOPIC, "adm-cfg")]))
    assert topic["retention.ms"].value == "604800000"
    assert topic["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert {"cleanup.policy", "segment.bytes", "max.message.bytes"} <= set(topic)
    brk = one(a.describe_configs([ConfigResource(ResourceType.BROKER, "1")]))
    assert brk["offsets.topic.num.partitions"].value == "50" and brk["log.dirs"].is_read_only
    assert brk["group.initial.rebalance.delay.ms"].value == "1000"          # from the test's TOML
    assert brk["group.initial.rebalance.delay.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value


def test_topic_configs_are_altered_checked_and_kept(broker):
    create_topic(broker.bootstrap, "adm-alter", 1)
    a = admin(broker)
    change = ConfigResource(ResourceType.TOPIC, "adm-alter", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    one(a.incremental_alter_configs([change]))
    shown = one(a.describe_configs([ConfigResource(ResourceType.TOPIC, "adm-alter")]))
    assert shown["retention.ms"].value == "3600000"
    assert shown["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    typo = ConfigResource(ResourceType.TOPIC, "adm-alter", incremental_configs=[
        ConfigEntry("retention.mss", "1000", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException, match="did you mean retention.ms"):
        one(a.incremental_alter_configs([typo]))
    bad = ConfigResource(ResourceType.TOPIC, "adm-alter", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException, match="INVALID_CONFIG|Invalid value"):
        one(a.incremental_alter_configs([bad]))
    # The legacy AlterConfigs (kafka-python's alter_configs) replaces the whole set.
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        kp.alter_configs([KpResource(ConfigResourceType.TOPIC, "adm-alter", configs={"retention.bytes": "1000000"})])
        described = kp.describe_configs([KpResource(ConfigResourceType.TOPIC, "adm-alter")])
    finally:
        kp.close()
    modified = described["topic"]["adm-alter"]
    assert {k: v["value"] for k, v in modified.items()} == {"retention.bytes": "1000000", "retention.ms": "3600000"}


def cluster_default(broker, changes) -> None:
    """IncrementalAlterConfigs on the cluster-wide default broker resource, by kgroup's client."""
    import asyncio

    from kgroup.client.admin import AdminClient as OurAdmin

    async def go() -> None:
        async with OurAdmin(broker.bootstrap) as ours:
            await ours.alter_configs(BROKER_RESOURCE, "", changes)

    asyncio.run(go())


def test_dynamic_broker_configs_change_at_run_time_and_read_only_ones_are_refused(broker):
    a = admin(broker)
    read_only = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException, match=r"Cannot update these configs dynamically: \[num.partitions\]"):
        one(a.incremental_alter_configs([read_only]))
    create_topic(broker.bootstrap, "adm-dyn", 1)
    try:
        # The cluster-wide default (an empty resource name, which confluent-kafka cannot send).
        cluster_default(broker, [("log.retention.ms", CONFIG_SET, "3600000")])
        one(a.incremental_alter_configs([ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("message.max.bytes", "2000", incremental_operation=AlterConfigOpType.SET)])]))
        brk = one(a.describe_configs([ConfigResource(ResourceType.BROKER, "1")]))
        assert (brk["log.retention.ms"].value, brk["log.retention.ms"].source) == (
            "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        assert (brk["message.max.bytes"].value, brk["message.max.bytes"].source) == (
            "2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert not brk["message.max.bytes"].is_read_only and brk["num.partitions"].is_read_only
        topic = one(a.describe_configs([ConfigResource(ResourceType.TOPIC, "adm-dyn")]))
        assert (topic["retention.ms"].value, topic["retention.ms"].source) == (
            "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        # In force without a restart: a batch over the new limit is refused.
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        errors = []
        producer.produce("adm-dyn", b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
        producer.flush(15)
        assert [e.name() for e in errors] == ["MSG_SIZE_TOO_LARGE"]
    finally:
        cluster_default(broker, [("log.retention.ms", CONFIG_DELETE, None)])
        one(a.incremental_alter_configs([ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("message.max.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])]))


def test_group_configs_over_incremental_alter_configs_are_durable(broker):
    a = admin(broker)
    group = "adm-group-cfg"
    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("consumer.heartbeat.interval.ms", "6000", incremental_operation=AlterConfigOpType.SET)])
    one(a.incremental_alter_configs([change]))
    shown = one(a.describe_configs([ConfigResource(ResourceType.GROUP, group)]))
    assert shown["consumer.session.timeout.ms"].value == "50000"
    assert shown["consumer.session.timeout.ms"].source == ConfigSource.GROUP_CONFIG.value
    for wrong, match in (("consumer.session.timeout", r"Unknown group config name: consumer\.session\.timeout(?![.;])"),
                         ("consumer.session.timeout.ms", "must be in the range 45000 to 60000 inclusive")):
        value = "99000000" if wrong.endswith(".ms") else "50000"
        bad = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(wrong, value, incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(ck.KafkaException, match=match):
            one(a.incremental_alter_configs([bad]))
    # Kept in the group-metadata log: a kill -9 and a restart keep it.
    broker.kill9()
    broker.start()
    a = admin(broker)
    shown = one(a.describe_configs([ConfigResource(ResourceType.GROUP, group)]))
    assert shown["consumer.session.timeout.ms"].value == "50000"
    assert shown["consumer.heartbeat.interval.ms"].value == "6000"
    assert shown["consumer.heartbeat.interval.ms"].source == ConfigSource.GROUP_CONFIG.value


def test_describe_cluster(broker):
    a = admin(broker)
    described = a.describe_cluster().result(15)
    assert described.cluster_id == "kgroup" and described.controller.id == 1
    assert [(n.id, n.port) for n in described.nodes] == [(1, broker.port)]


def test_delete_records_moves_the_log_start_a_consumer_then_reads_from(broker):
    create_topic(broker.bootstrap, "adm-del", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce("adm-del", str(i).encode(), partition=0)
    p.flush(15)
    a = admin(broker)
    (future,) = a.delete_records([TopicPartition("adm-del", 0, 4)]).values()
    assert future.result(15).low_watermark == 4
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "adm-del-reader",
                  "auto.offset.reset": "earliest"})
    try:
        assert c.get_watermark_offsets(TopicPartition("adm-del", 0), timeout=10) == (4, 10)
        c.assign([TopicPartition("adm-del", 0, -2)])          # OFFSET_BEGINNING
        got = []
        while len(got) < 6:
            msg = c.poll(10)
            assert msg is not None and msg.error() is None
            got.append(int(msg.value()))
        assert got == list(range(4, 10))
    finally:
        c.close()
    (future,) = a.delete_records([TopicPartition("adm-del", 0, 99)]).values()
    with pytest.raises(ck.KafkaException, match="OFFSET_OUT_OF_RANGE"):
        future.result(15)
    (future,) = a.delete_records([TopicPartition("__kgroup_events", 0, 0)]).values()
    with pytest.raises(ck.KafkaException, match="TOPIC_EXCEPTION"):
        future.result(15)


def test_internal_topics_cannot_be_deleted_or_grown(broker):
    a = admin(broker)
    # librdkafka shows the code, not the message (the CLI shows both: test_cli_bad_input).
    with pytest.raises(ck.KafkaException, match="TOPIC_EXCEPTION"):
        one(a.delete_topics(["__kgroup_events"]))
    from confluent_kafka.admin import NewPartitions, NewTopic

    with pytest.raises(ck.KafkaException, match="TOPIC_EXCEPTION|internal topic"):
        one(a.create_partitions([NewPartitions("__kgroup_events", 3)]))
    with pytest.raises(ck.KafkaException, match="INVALID_REQUEST|internal topic"):
        one(a.create_topics([NewTopic("__consumer_offsets", 1)]))
    assert "__kgroup_events" in a.list_topics(timeout=10).topics

"""Cells of the client matrix no other module covers: aiokafka's static membership and admin
client, and kcat (1.7, on librdkafka 2.0) in groups (classic, static, cooperative), producing
idempotently and in a transaction, querying offsets by time and listing metadata."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from kgroup.client import AdminClient, Producer
from tests.interop.helpers import eventually
from tests.interop.toolchain import unavailable

pytestmark = pytest.mark.integration


def topic_with(kgroup, topic: str, partitions: int, count: int) -> None:
    async def go():
        async with AdminClient(kgroup.bootstrap) as admin:
            await admin.create_topics({topic: partitions})
        async with Producer({"bootstrap.servers": kgroup.bootstrap}) as producer:
            for i in range(count):
                await producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % partitions)
            await producer.flush()
    asyncio.run(go())


# ---- aiokafka -----------------------------------------------------------------------------------

def test_aiokafka_static_member(kgroup, name):
    from aiokafka import AIOKafkaConsumer

    topic, group = f"as-{name}", f"as-{name}"
    topic_with(kgroup, topic, 2, 4)

    async def go():
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=kgroup.bootstrap, group_id=group,
                                    group_instance_id="aio-static", auto_offset_reset="earliest",
                                    session_timeout_ms=10_000)
        await consumer.start()
        try:
            read = []
            async with asyncio.timeout(60):
                while len(read) < 4:
                    batch = await consumer.getmany(timeout_ms=500)
                    read += [r.value for rs in batch.values() for r in rs]
            return read, kgroup.group(group)
        finally:
            await consumer.stop()

    read, view = asyncio.run(go())
    assert sorted(read) == [f"v{i}".encode() for i in range(4)]
    assert [m["instance_id"] for m in view["members"]] == ["aio-static"]


def test_aiokafka_admin_client(kgroup, name):
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.structs import TopicPartition

    topic, group = f"aa-{name}", f"aa-{name}"

    async def go():
        admin = AIOKafkaAdminClient(bootstrap_servers=kgroup.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 2, 1)])
            async with Producer({"bootstrap.servers": kgroup.bootstrap}) as producer:
                for i in range(4):
                    await producer.send(topic, f"v{i}".encode(), partition=i % 2)
                await producer.flush()
            async with AdminClient(kgroup.bootstrap) as ours:
                await ours.alter_group_offsets(group, {(topic, 0): 1, (topic, 1): 2})
            got = {"topics": await admin.list_topics(), "cluster": await admin.describe_cluster(),
                   "groups": await admin.list_consumer_groups(),
                   "described": await admin.describe_consumer_groups([group]),
                   "offsets": await admin.list_consumer_group_offsets(group),
                   "configs": await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]),
                   "deleted": await admin.delete_records({TopicPartition(topic, 1): RecordsToDelete(1)})}
            return got
        finally:
            await admin.close()

    got = asyncio.run(go())
    assert topic in got["topics"]
    assert got["cluster"]["cluster_id"] == "kgroup" and len(got["cluster"]["brokers"]) == 1
    assert (group, "") in [tuple(g) for g in got["groups"]]
    assert {(tp.topic, tp.partition): om.offset for tp, om in got["offsets"].items()} == {(topic, 0): 1, (topic, 1): 2}
    assert got["deleted"] == {TopicPartition(topic, 1): 1}


def test_aiokafka_idempotent_producer(kgroup, name):
    from aiokafka import AIOKafkaProducer

    topic = f"ai-{name}"
    topic_with(kgroup, topic, 1, 0)

    async def go():
        producer = AIOKafkaProducer(bootstrap_servers=kgroup.bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"v{i}".encode(), partition=0)
        finally:
            await producer.stop()
        async with AdminClient(kgroup.bootstrap) as admin:
            return await admin.transactions.producers(topic, [0])

    [state] = asyncio.run(go())[0]
    assert state.producer_id >= 0 and state.epoch == 0 and state.last_sequence == 4


# ---- kcat ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kcat():
    if shutil.which("kcat") is None:
        unavailable("kcat is not installed (Debian's kcat package)")
    return "kcat"


def run_kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    done = subprocess.run(["kcat", *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_kcat_in_a_group_commits(kcat, kgroup, name, strategy):
    topic, group = f"kg-{strategy}-{name}", f"kg-{strategy}-{name}"
    topic_with(kgroup, topic, 2, 6)
    out = run_kcat("-b", kgroup.bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-X",
                   f"partition.assignment.strategy={strategy}", "-X", "group.instance.id=kcat-static",
                   "-c", "6", "-e", "-f", "%s\n", topic)
    assert sorted(out.split()) == sorted(f"v{i}" for i in range(6))

    async def committed():
        async with AdminClient(kgroup.bootstrap) as admin:
            return await admin.list_group_offsets(group)
    eventually(lambda: asyncio.run(committed()) == {(topic, 0): 3, (topic, 1): 3}, what="kcat's commits")


def test_kcat_produces_idempotently_and_in_a_transaction(kcat, kgroup, name):
    topic = f"kp-{name}"
    topic_with(kgroup, topic, 1, 0)
    run_kcat("-P", "-b", kgroup.bootstrap, "-t", topic, "-X", "enable.idempotence=true", stdin="a\nb\n")
    run_kcat("-P", "-b", kgroup.bootstrap, "-t", topic, "-X", f"transactional.id=kcat-{name}", stdin="c\nd\n")
    out = run_kcat("-C", "-b", kgroup.bootstrap, "-t", topic, "-e", "-X", "isolation.level=read_committed",
                   "-f", "%s %o\n")
    assert out.split("\n")[:4] == ["a 0", "b 1", "c 2", "d 3"]      # offset 4: the commit marker


def test_kcat_lists_metadata_and_queries_offsets_by_time(kcat, kgroup, name):
    topic = f"kq-{name}"
    topic_with(kgroup, topic, 2, 4)
    listing = run_kcat("-L", "-b", kgroup.bootstrap, "-t", topic)
    assert f'topic "{topic}" with 2 partitions' in listing and "broker 1 at" in listing
    assert run_kcat("-Q", "-b", kgroup.bootstrap, "-t", f"{topic}:1:0").strip() == f"{topic} [1] offset 0"

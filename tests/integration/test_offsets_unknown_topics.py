"""Scenario: offsets of topics and partitions that do not exist (broker/groups/offset_topics.py).

OffsetCommit (v2, v8, v9; as a group member with a generation, and as a simple commit),
AlterConsumerGroupOffsets and a consumer's commit (confluent-kafka), TxnOffsetCommit,
OffsetFetch (v1, v7, v9, listed and all) and OffsetDelete, each naming a topic that does
not exist, a partition past an existing topic's count, and a partition that exists. Kafka
4.4 answers UNKNOWN_TOPIC_OR_PARTITION per partition for the first two, before it looks at
the group; stores nothing for them; creates no group for a commit of only such partitions;
and answers OffsetFetch for them with offset -1 and no error. kgroup answered every commit
with NONE and stored the offsets.

`observe` runs the scenario against a broker and returns what it answered, with the
scenario's own names normalized (the unknown topic, the existing topic, the group); the
same scenario on the reference Kafka 4.4 must give the same, and both must give `EXPECTED`.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kgroup.client.connection import Connection
from kgroup.wire import request_class
from kgroup.wire.kio_build import build, item

pytestmark = pytest.mark.integration

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, LIST_GROUPS = 8, 9, 10, 16
TXN_OFFSET_COMMIT, OFFSET_DELETE = 28, 47
NONE, UNKNOWN, GROUP_ID_NOT_FOUND, INVALID_PRODUCER_ID_MAPPING = 0, 3, 69, 49
RETRY = {14, 15, 16}            # the coordinator is loading / not ready / elsewhere yet
# The unknown topic, a partition past the known topic's only one, and the known partition.
PARTS = (("unknown", 0), ("known", 99), ("known", 0))

EXPECTED = {
    # OffsetCommit, simple (generation -1, no member): the unknown ones refused, the other stored.
    "commit v2": [("unknown", 0, UNKNOWN), ("known", 99, UNKNOWN), ("known", 0, NONE)],
    "commit v8": [("unknown", 0, UNKNOWN), ("known", 99, UNKNOWN), ("known", 0, NONE)],
    "commit v9": [("unknown", 0, UNKNOWN), ("known", 99, UNKNOWN), ("known", 0, NONE)],
    # As a member of a group that does not exist: the topic check comes first.
    "member commit": [("unknown", 0, UNKNOWN), ("known", 99, UNKNOWN), ("known", 0, GROUP_ID_NOT_FOUND)],
    # Only unknown partitions: refused, and no group is created.
    "commit only unknown": [("unknown", 0, UNKNOWN)],
    "groups created": ["group"],
    # Nothing was stored for the unknown ones.
    "fetch v1": (NONE, [("known", 0, NONE, 5), ("known", 99, NONE, -1), ("unknown", 0, NONE, -1)]),
    "fetch v7": (NONE, [("known", 0, NONE, 5), ("known", 99, NONE, -1), ("unknown", 0, NONE, -1)]),
    "fetch v9": (NONE, [("known", 0, NONE, 5), ("known", 99, NONE, -1), ("unknown", 0, NONE, -1)]),
    "fetch v9 all": (NONE, [("known", 0, NONE, 5)]),
    "delete": (NONE, [("unknown", 0, UNKNOWN), ("known", 99, UNKNOWN), ("known", 0, NONE)]),
    "delete, no group": (GROUP_ID_NOT_FOUND, []),
    # A transactional commit: the unknown ones refused before the transaction is looked at.
    "txn commit": [("unknown", 0, UNKNOWN), ("known", 99, UNKNOWN), ("known", 0, INVALID_PRODUCER_ID_MAPPING)],
    "txn commit only unknown": [("unknown", 0, UNKNOWN)],
    # The clients' view: AlterConsumerGroupOffsets and a consumer's synchronous commit.
    "alter offsets": [("known", 0, None), ("known", 99, "UNKNOWN_TOPIC_OR_PART"),
                      ("unknown", 0, "UNKNOWN_TOPIC_OR_PART")],
    "consumer commit": "UNKNOWN_TOPIC_OR_PART",
    "list offsets": [("known", 0, 5), ("unknown", 0, -1001)],
}


class Names:
    """The scenario's names on one broker, and the way back to the normalized ones."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.real = {"unknown": f"nope-{tag}", "known": f"yes-{tag}", "group": f"g-{tag}",
                     "member group": f"gm-{tag}", "only group": f"go-{tag}", "no group": f"gn-{tag}",
                     "txn": f"tx-{tag}", "alter group": f"ga-{tag}", "consumer group": f"gc-{tag}"}
        self.back = {v: k for k, v in self.real.items()}

    def __getitem__(self, name: str) -> str:
        return self.real[name]

    def parts(self, parts=PARTS) -> list[tuple[str, int]]:
        return [(self.real[t], p) for t, p in parts]


def _codes(response) -> set[int]:
    """Every error code in a response: top level, per group, per partition."""
    codes = {int(getattr(response, "error_code", NONE))}
    for group in getattr(response, "groups", ()) or ():
        codes.add(int(getattr(group, "error_code", NONE)))
        codes |= {int(p.error_code) for t in getattr(group, "topics", ()) or () for p in t.partitions}
    codes |= {int(p.error_code) for t in getattr(response, "topics", ()) or () for p in t.partitions}
    return codes


async def _ask(conn: Connection, api: int, version: int, **fields):
    """Ask until no coordinator is loading or moving (the reference's start-up, a transaction
    verified with a transaction coordinator still loading)."""
    for _ in range(120):
        response = await conn.request(api, fields, version=version)
        if not _codes(response) & RETRY:
            return response
        await asyncio.sleep(0.25)
    raise AssertionError(f"api {api} kept answering {response}")


def _commit_topics(api: int, version: int, parts, **extra) -> tuple:
    cls = request_class(api, version)
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return tuple(build(topic_cls, name=t, partitions=tuple(
        build(part_cls, partition_index=p, committed_offset=5, committed_metadata="", **extra) for p in ps))
        for t, ps in by_topic.items())


async def _wire(bootstrap: str, n: Names) -> dict:
    host, port = bootstrap.rsplit(":", 1)
    conn = await Connection.open(host, int(port))
    out: dict = {}

    def commits(response) -> list:
        return [(n.back[t.name], p.partition_index, int(p.error_code)) for t in response.topics for p in t.partitions]

    def fetched(topics) -> list:
        return sorted((n.back[t.name], p.partition_index, int(p.error_code), int(p.committed_offset))
                      for t in topics for p in t.partitions)
    try:
        for key in (n["group"], n["txn"]):
            for _ in range(120):          # the reference creates its internal topics on first use
                found = await conn.request(FIND_COORDINATOR, dict(key=key, key_type=int(key == n["txn"])),
                                           version=3)
                if int(found.error_code) == NONE:
                    break
                await asyncio.sleep(0.25)
        simple = dict(generation_id_or_member_epoch=-1, member_id="")
        for v in (2, 8, 9):
            extra = {"retention_time": datetime.timedelta(milliseconds=-1)} if v < 5 else {}
            r = await _ask(conn, OFFSET_COMMIT, v, group_id=n["group"], topics=_commit_topics(
                OFFSET_COMMIT, v, n.parts()), **simple, **extra)
            out[f"commit v{v}"] = commits(r)
        r = await _ask(conn, OFFSET_COMMIT, 9, group_id=n["member group"], generation_id_or_member_epoch=5,
                       member_id="m", topics=_commit_topics(OFFSET_COMMIT, 9, n.parts()))
        out["member commit"] = commits(r)
        r = await _ask(conn, OFFSET_COMMIT, 9, group_id=n["only group"], topics=_commit_topics(
            OFFSET_COMMIT, 9, n.parts(PARTS[:1])), **simple)
        out["commit only unknown"] = commits(r)
        listed = await _ask(conn, LIST_GROUPS, 4, states_filter=())
        out["groups created"] = sorted(n.back[g.group_id] for g in listed.groups if g.group_id in n.back)

        for v in (1, 7):
            cls = request_class(OFFSET_FETCH, v)
            topic_cls = item(cls, "topics")
            r = await _ask(conn, OFFSET_FETCH, v, group_id=n["group"], topics=(
                build(topic_cls, name=n["unknown"], partition_indexes=(0,)),
                build(topic_cls, name=n["known"], partition_indexes=(99, 0))),
                **({"require_stable": False} if v >= 7 else {}))
            out[f"fetch v{v}"] = (int(getattr(r, "error_code", NONE)), fetched(r.topics))
        group_cls = item(request_class(OFFSET_FETCH, 9), "groups")
        topic_cls = item(group_cls, "topics")
        for label, topics in (("fetch v9", (build(topic_cls, name=n["unknown"], partition_indexes=(0,)),
                                            build(topic_cls, name=n["known"], partition_indexes=(99, 0)))),
                              ("fetch v9 all", None)):
            r = await _ask(conn, OFFSET_FETCH, 9, require_stable=False, groups=(
                build(group_cls, group_id=n["group"], member_id=None, member_epoch=-1, topics=topics),))
            out[label] = (int(r.groups[0].error_code), fetched(r.groups[0].topics))

        cls = request_class(OFFSET_DELETE, 0)
        topic_cls = item(cls, "topics")
        part_cls = item(topic_cls, "partitions")
        topics = (build(topic_cls, name=n["unknown"], partitions=(build(part_cls, partition_index=0),)),
                  build(topic_cls, name=n["known"], partitions=(build(part_cls, partition_index=99),
                                                                 build(part_cls, partition_index=0))))
        for label, group in (("delete", "group"), ("delete, no group", "no group")):
            r = await _ask(conn, OFFSET_DELETE, 0, group_id=n[group], topics=topics)
            out[label] = (int(r.error_code), [(n.back[t.name], p.partition_index, int(p.error_code))
                                              for t in r.topics for p in t.partitions])

        txn = dict(transactional_id=n["txn"], group_id=n["group"], producer_id=12345, producer_epoch=0,
                   generation_id=-1, member_id="", group_instance_id=None)
        for label, parts in (("txn commit", PARTS), ("txn commit only unknown", PARTS[:1])):
            r = await _ask(conn, TXN_OFFSET_COMMIT, 3, **txn, topics=_commit_topics(
                TXN_OFFSET_COMMIT, 3, n.parts(parts), committed_leader_epoch=-1))
            out[label] = commits(r)
    finally:
        await conn.close()
    return out


def _clients(bootstrap: str, n: Names) -> dict:
    out: dict = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = n["alter group"]
    altered = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [
        TopicPartition(t, p, 5) for t, p in n.parts()])])[group].result(30)
    out["alter offsets"] = sorted((n.back[p.topic], p.partition, p.error.name() if p.error else None)
                                  for p in altered.topic_partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": n["consumer group"],
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(n["unknown"], 0, 5)], asynchronous=False)
        out["consumer commit"] = None
    except KafkaException as exc:
        out["consumer commit"] = exc.args[0].name()
    finally:
        consumer.close()
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [
        TopicPartition(n["unknown"], 0), TopicPartition(n["known"], 0)])])[group].result(30)
    out["list offsets"] = sorted((n.back[p.topic], p.partition, p.offset) for p in listed.topic_partitions)
    return out


def observe(bootstrap: str) -> dict:
    n = Names()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(n["known"], 1, 1)])[n["known"]].result(30)
    return {**asyncio.run(_wire(bootstrap, n)), **_clients(bootstrap, n)}


def test_offsets_of_unknown_topics_and_partitions_are_refused_per_partition(kgroup_broker_session):
    assert observe(kgroup_broker_session.bootstrap) == EXPECTED


def test_offsets_of_unknown_topics_and_partitions_as_kafka_answers(kgroup_broker_session, kafka_reference):
    """Differential: the same scenario on Apache Kafka 4.4 gives what kgroup gives."""
    kafka = observe(kafka_reference.bootstrap)
    assert kafka == EXPECTED
    assert observe(kgroup_broker_session.bootstrap) == kafka

"""Partition moves, leader elections and log dirs on a single broker, with exact requests:
AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders, AlterReplicaLogDirs
(what `kafka-reassign-partitions`, `kafka-leader-election` and `kafka-log-dirs`' movers ask).
On one broker every valid move names the broker itself; the 3-node moves are
tests/integration/test_partition_moves.py's."""

from __future__ import annotations

from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.target import Target

UNKNOWN_BROKER = 4242


def _reassign(version: int, topic: str, partition: int, replicas: list[int] | None, **extra: Any) -> Any:
    fields: dict[str, Any] = {"timeout_ms": 30_000, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}]}
    if version >= 1:
        fields["allow_replication_factor_change"] = extra.get("allow", True)
    return request("AlterPartitionReassignments", version, **fields)


def _elect(version: int, kind: int, partitions: list[tuple[str, list[int]]] | None) -> Any:
    fields: dict[str, Any] = {"timeout_ms": 30_000, "topic_partitions": None if partitions is None else [
        {"topic": name, "partitions": ps} for name, ps in partitions]}
    if version >= 1:
        fields["election_type"] = kind
    return request("ElectLeaders", version, **fields)


def _elections(r: Any, topics: set[str]) -> dict[str, Any]:
    """An ElectLeaders answer limited to this scenario's topics (a null list is answered with
    every topic of the shared broker)."""
    return {"error_code": getattr(r, "error_code", None), "results": {
        x.topic: [(int(p.partition_id), p.error_code, p.error_message) for p in x.partition_result]
        for x in r.replica_election_results if x.topic in topics}}


def _log_dirs(r: Any) -> list[tuple[str, int, Any]]:
    """An AlterReplicaLogDirs answer as sorted (topic, partition, error) (Kafka lists them in
    its maps' order)."""
    return sorted((x.topic_name, int(p.partition_index), p.error_code) for x in r.results for p in x.partitions)


@scenario("admin", "partition moves, preferred leader elections and log dirs on one broker",
          rule="AlterPartitionReassignments to the broker itself is NONE; an unknown topic or partition is "
               "UNKNOWN_TOPIC_OR_PARTITION ('Unable to find ...'), an empty list, a broker named twice or one not "
               "registered INVALID_REPLICA_ASSIGNMENT with Kafka's manual-assignment words, a cancel with none "
               "under way NO_REASSIGNMENT_IN_PROGRESS, an empty request an empty message; "
               "ListPartitionReassignments lists nothing when nothing moves; ElectLeaders (preferred or unclean) "
               "is ELECTION_NOT_NEEDED where the leader is already there, UNKNOWN_TOPIC_OR_PARTITION ('No such "
               "topic/partition as ...') otherwise, and for null lists every topic with no partition; "
               "AlterReplicaLogDirs to a dir the broker lacks is LOG_DIR_NOT_FOUND per partition, to its own dir "
               "NONE (UNKNOWN_TOPIC_OR_PARTITION for a partition it lacks); the leader epoch stays 0")
async def admin_partition_moves(t: Target) -> None:
    raw = await t.raw()
    topic, missing = t.names.topic("moves"), t.names.topic("missing")
    await observe.create_topic(raw, topic, 2)
    metadata = await raw.call(request("Metadata", 12, topics=[{"name": topic, "topic_id": None}],
                                      allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    me = int(metadata.brokers[0].node_id)
    for version in (0, 1):
        for label, req in (
                ("to the broker itself", _reassign(version, topic, 0, [me])),
                ("to a broker not registered", _reassign(version, topic, 0, [UNKNOWN_BROKER])),
                ("to itself and one not registered", _reassign(version, topic, 0, [me, UNKNOWN_BROKER])),
                ("to itself twice", _reassign(version, topic, 0, [me, me])),
                ("to nobody", _reassign(version, topic, 1, [])),
                ("a cancel with none under way", _reassign(version, topic, 1, None)),
                ("an unknown partition", _reassign(version, topic, 9, [me])),
                ("a negative partition", _reassign(version, topic, -1, [me])),
                ("an unknown topic", _reassign(version, missing, 0, [me]))):
            await t.ask(raw, f"reassign v{version}: {label}", req)
    await t.ask(raw, "reassign v1: one not registered, the factor not to change",
                _reassign(1, topic, 0, [me, UNKNOWN_BROKER], allow=False))
    await t.ask(raw, "reassign: nothing", request("AlterPartitionReassignments", 0, timeout_ms=30_000, topics=[]))
    for label, topics in (("named", [{"name": topic, "partition_indexes": [0, 1, 9]}]),
                          ("an unknown topic", [{"name": missing, "partition_indexes": [0]}])):
        await t.ask(raw, f"list reassignments: {label}",
                    request("ListPartitionReassignments", 0, timeout_ms=30_000, topics=topics))
    mine = {topic, missing}
    for version in (0, 1, 2):
        for kind in ((0, 1) if version else (0,)):
            for label, partitions in (("named", [(topic, [0, 1, 9])]), ("an unknown topic", [(missing, [0])]),
                                      ("every partition", None), ("none", [])):
                r = await raw.call(_elect(version, kind, partitions))
                t.add(f"elect v{version} {('preferred', 'unclean')[kind]}: {label}", _elections(r, mine))
    described = await raw.call(request("DescribeLogDirs", 4, topics=None))
    own = described.results[0].log_dir
    for version in (1, 2):
        for label, path, name in (("a dir it lacks", "/nonexistent/kgroup-log-dir", topic),
                                  ("a dir it lacks, an unknown topic", "/nonexistent/kgroup-log-dir", missing)):
            r = await raw.call(request("AlterReplicaLogDirs", version, dirs=[
                {"path": path, "topics": [{"name": name, "partitions": [0]}]}]))
            t.add(f"log dirs v{version}: {label}", _log_dirs(r))
        r = await raw.call(request("AlterReplicaLogDirs", version, dirs=[
            {"path": own, "topics": [{"name": topic, "partitions": [0, 9]}, {"name": missing, "partitions": [0]}]}]))
        t.add(f"log dirs v{version}: its own dir", _log_dirs(r))
        await t.ask(raw, f"log dirs v{version}: nothing", request("AlterReplicaLogDirs", version, dirs=[]))
    after = await raw.call(request("DescribeTopicPartitions", 0, topics=[{"name": topic}],
                                   response_partition_limit=10, cursor=None))
    t.add("leaders and epochs after", [(int(p.partition_index), int(p.leader_id) == me, int(p.leader_epoch))
                                        for x in after.topics for p in x.partitions])


@scenario("security", "partition moves, elections and log dirs need the cluster", pair="secured",
          rule="AlterPartitionReassignments, ElectLeaders and AlterReplicaLogDirs without ALTER on the cluster, "
               "and ListPartitionReassignments without DESCRIBE on it, are CLUSTER_AUTHORIZATION_FAILED (every "
               "partition named, and the top level where the answer has one)")
async def security_partition_moves(t: Target) -> None:
    admin = await t.raw("admin", user="admin")
    topic = t.names.topic("moves")
    await observe.create_topic(admin, topic, 1)
    alice = await t.raw("alice", user="alice")
    await t.ask(alice, "alice reassigns", _reassign(1, topic, 0, [UNKNOWN_BROKER]))
    await t.ask(alice, "alice lists reassignments",
                request("ListPartitionReassignments", 0, timeout_ms=30_000, topics=None))
    await t.ask(alice, "alice elects", _elect(2, 0, [(topic, [0])]))
    await t.ask(alice, "alice moves a log dir", request("AlterReplicaLogDirs", 2, dirs=[
        {"path": "/nonexistent/kgroup-log-dir", "topics": [{"name": topic, "partitions": [0]}]}]))

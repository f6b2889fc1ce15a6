"""Authorized operations without an authorizer, differential: the same requests to kgroup and
to Apache Kafka 4.4 (no authorizer either) give the same bit fields — every operation the
resource type supports when the client asks, "not requested" (INT32_MIN) when it does not,
and nothing on a group answered with an error. No normalization: the fields are compared as
they came.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kgroup.acl_bindings import AclOperation as Op
from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from kgroup.wire.api_keys import ApiKey

pytestmark = pytest.mark.integration

NOT_REQUESTED = -(2**31)
RETRIABLE = {14, 15, 16}            # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


def bits(*ops: Op) -> int:
    return sum(1 << int(op) for op in ops)


TOPIC_OPS = bits(Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
                 Op.ALTER_CONFIGS)
CLUSTER_OPS = bits(Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                   Op.IDEMPOTENT_WRITE)
GROUP_OPS = bits(Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)


async def _retrying(conn: Connection, api: int, fields: dict, error_of, version: int | None = None):
    """The answer once the group's coordinator is ready (Kafka creates __consumer_offsets on
    first use)."""
    for _ in range(100):
        resp = await conn.request(api, request_fields(**fields), version, timeout=10)
        if int(error_of(resp)) not in RETRIABLE:
            return resp
        await asyncio.sleep(0.2)
    raise AssertionError(f"api {api} kept answering a coordinator error: {resp}")


async def observe(bootstrap: str) -> dict[str, int]:
    """Every authorized-operations field the scenario's answers carry, by name."""
    host, port = bootstrap.rsplit(":", 1)
    topic = f"ops-{uuid.uuid4().hex[:8]}"
    classic, consumer, share = (f"ops-{k}-{uuid.uuid4().hex[:8]}" for k in ("classic", "consumer", "share"))
    seen: dict[str, int] = {}
    conn = await Connection.open(host, int(port), "authorized-ops", 10)
    try:
        created = await conn.request(ApiKey.CREATE_TOPICS, request_fields(
            topics=[{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            timeout=10_000, validate_only=False))
        assert int(created.topics[0].error_code) == 0, created
        # Metadata: v8 has both fields, v12 only the topics'.
        for version in (8, 12):
            for asked in (True, False):
                md = await conn.request(ApiKey.METADATA, request_fields(
                    topics=[{"name": topic}, {"name": f"{topic}-absent"}], allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=asked, include_topic_authorized_operations=asked),
                    version)
                by_name = {t.name: t for t in md.topics}
                seen[f"metadata v{version} asked={asked} topic"] = by_name[topic].topic_authorized_operations
                absent = by_name[f"{topic}-absent"]
                assert int(absent.error_code) == 3     # UNKNOWN_TOPIC_OR_PARTITION
                seen[f"metadata v{version} asked={asked} unknown topic"] = absent.topic_authorized_operations
                if version == 8:
                    seen[f"metadata v8 asked={asked} cluster"] = md.cluster_authorized_operations
        for asked in (True, False):
            dc = await conn.request(ApiKey.DESCRIBE_CLUSTER, request_fields(include_cluster_authorized_operations=asked))
            seen[f"describe cluster asked={asked}"] = dc.cluster_authorized_operations
        # A classic group made by a simple commit, and one nobody made (Dead).
        await _retrying(conn, ApiKey.FIND_COORDINATOR, dict(key=classic, key_type=0, coordinator_keys=[classic]),
                        lambda r: r.coordinators[0].error_code if hasattr(r, "coordinators") else r.error_code)
        await _retrying(conn, ApiKey.OFFSET_COMMIT, dict(
            group_id=classic, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                    "committed_metadata": ""}]}]),
            lambda r: r.topics[0].partitions[0].error_code, version=8)
        for asked in (True, False):
            dg = await conn.request(ApiKey.DESCRIBE_GROUPS, request_fields(
                groups=[classic, f"{classic}-nobody"], include_authorized_operations=asked), 5)
            by_id = {g.group_id: g for g in dg.groups}
            for g, label in ((by_id[classic], "empty"), (by_id[f"{classic}-nobody"], "dead")):
                assert int(g.error_code) == 0, g
                seen[f"describe groups {label} asked={asked}"] = g.authorized_operations
        # A consumer group and a share group with one member each.
        member = str(uuid.uuid4())
        joined = await _retrying(conn, ApiKey.CONSUMER_GROUP_HEARTBEAT, dict(
            group_id=consumer, member_id=member, member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout=30_000, subscribed_topic_names=[topic], server_assignor=None, topic_partitions=[]),
            lambda r: r.error_code)
        assert int(joined.error_code) == 0, joined
        shared = await _retrying(conn, ApiKey.SHARE_GROUP_HEARTBEAT, dict(
            group_id=share, member_id=str(uuid.uuid4()), member_epoch=0, rack_id=None,
            subscribed_topic_names=[topic]), lambda r: r.error_code)
        assert int(shared.error_code) == 0, shared
        for api, group, label in ((ApiKey.CONSUMER_GROUP_DESCRIBE, consumer, "consumer"),
                                  (ApiKey.SHARE_GROUP_DESCRIBE, share, "share")):
            for asked in (True, False):
                described = await conn.request(api, request_fields(
                    group_ids=[group, f"{group}-nobody"], include_authorized_operations=asked))
                # Kafka answers per coordinator partition, not in the order asked: match by id.
                by_id = {g.group_id: g for g in described.groups}
                found, missing = by_id[group], by_id[f"{group}-nobody"]
                assert int(found.error_code) == 0 and int(missing.error_code) == 69, described
                seen[f"{label} group describe asked={asked}"] = found.authorized_operations
                seen[f"{label} group describe missing asked={asked}"] = missing.authorized_operations
    finally:
        await conn.close()
    return seen


def test_authorized_operations_without_an_authorizer_are_every_supported_operation_as_in_kafka(
        kgroup_broker_session, kafka_reference):
    ours = asyncio.run(observe(kgroup_broker_session.bootstrap))
    kafkas = asyncio.run(observe(kafka_reference.bootstrap))
    assert ours == kafkas
    # And what they agree on is the rule, not an accident.
    expected = {}
    for version in (8, 12):
        for asked in (True, False):
            for what in ("topic", "unknown topic"):
                expected[f"metadata v{version} asked={asked} {what}"] = TOPIC_OPS if asked else NOT_REQUESTED
    for asked in (True, False):
        expected[f"metadata v8 asked={asked} cluster"] = CLUSTER_OPS if asked else NOT_REQUESTED
        expected[f"describe cluster asked={asked}"] = CLUSTER_OPS if asked else NOT_REQUESTED
        for label in ("empty", "dead"):
            expected[f"describe groups {label} asked={asked}"] = GROUP_OPS if asked else NOT_REQUESTED
        for label in ("consumer", "share"):
            expected[f"{label} group describe asked={asked}"] = GROUP_OPS if asked else NOT_REQUESTED
            expected[f"{label} group describe missing asked={asked}"] = NOT_REQUESTED
    assert ours == expected

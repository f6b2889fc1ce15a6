"""Authorized operations with an authorizer: Metadata, DescribeCluster, DescribeGroups,
ConsumerGroupDescribe and ShareGroupDescribe report the operations the principal's ACLs
allow — decided by the rules that enforce them (implied DESCRIBE and DESCRIBE_CONFIGS,
DENY wins, prefixed patterns) — and what they report is what the principal can then do."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kgroup.acl_bindings import AclBinding, AclOperation as Op, AclPermission as Perm
from kgroup.acl_bindings import PatternType as Pat, ResourceType as Res
from kgroup.client import AdminClient
from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from kgroup.client.security import ClientSecurity
from kgroup.wire.api_keys import ApiKey
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, our_settings, secure_broker

pytestmark = pytest.mark.integration

USER, PASSWORD = "olivia", "olivia-Pa55"


def bits(*ops: Op) -> int:
    return sum(1 << int(op) for op in ops)


def acl(rtype: Res, name: str, op: Op, perm: Perm = Perm.ALLOW, pattern: Pat = Pat.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, f"User:{USER}", "*", op, perm)


def _admin(sb) -> AdminClient:
    return AdminClient(sb.address(sb.sasl_port), config=our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN,
                                                                     ADMIN_PASSWORD))


async def _connect(sb, user: str, password: str) -> Connection:
    sec = ClientSecurity.from_settings(our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", user, password))
    return await Connection.open("127.0.0.1", sb.sasl_port, "authorized-ops", 10, security=sec)


@pytest.fixture(scope="module")
def sb(tmp_path_factory):
    broker = secure_broker(tmp_path_factory.mktemp("authorized-ops"), ())
    broker.proc.start()
    try:
        yield broker
    finally:
        broker.proc.finish()


def test_authorized_operations_are_the_principals_allowed_set_from_the_enforcing_rules(sb):
    n = uuid.uuid4().hex[:8]
    topic, secret = f"ao-{n}", f"ao-{n}-secret"
    classic, consumer, share = f"ao-classic-{n}", f"ao-consumer-{n}", f"ao-share-{n}"
    grants = [
        # The topic: READ (which implies DESCRIBE) and ALTER_CONFIGS (which implies
        # DESCRIBE_CONFIGS); WRITE granted to every topic with the prefix but denied here.
        acl(Res.TOPIC, topic, Op.READ), acl(Res.TOPIC, topic, Op.ALTER_CONFIGS),
        acl(Res.TOPIC, "ao-", Op.WRITE, pattern=Pat.PREFIXED), acl(Res.TOPIC, topic, Op.WRITE, Perm.DENY),
        # The secret topic: only what the prefix gives (WRITE, implying DESCRIBE).
        # The cluster: IDEMPOTENT_WRITE only.
        acl(Res.CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE),
        # The groups: DESCRIBE on all three, DELETE on the classic one.
        acl(Res.GROUP, classic, Op.DESCRIBE), acl(Res.GROUP, classic, Op.DELETE),
        acl(Res.GROUP, consumer, Op.DESCRIBE), acl(Res.GROUP, share, Op.DESCRIBE),
    ]

    async def go() -> dict:
        async with _admin(sb) as admin:
            await admin.set_scram_credentials(USER, "SCRAM-SHA-512", PASSWORD, 4096)
            await admin.create_topics({topic: 1, secret: 1})
            await admin.create_acls(grants)
        super_conn = await _connect(sb, ADMIN, ADMIN_PASSWORD)
        conn = await _connect(sb, USER, PASSWORD)
        try:
            # Groups made by the super user: a simple commit, a consumer-group member and a
            # share-group member.
            commit = await super_conn.request(ApiKey.OFFSET_COMMIT, request_fields(
                group_id=classic, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                topics=[{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                        "committed_metadata": ""}]}]), 8)
            assert int(commit.topics[0].partitions[0].error_code) == 0
            joined = await super_conn.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, request_fields(
                group_id=consumer, member_id=str(uuid.uuid4()), member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout=30_000, subscribed_topic_names=[topic], server_assignor=None,
                topic_partitions=[]))
            assert int(joined.error_code) == 0, joined
            shared = await super_conn.request(ApiKey.SHARE_GROUP_HEARTBEAT, request_fields(
                group_id=share, member_id=str(uuid.uuid4()), member_epoch=0, rack_id=None,
                subscribed_topic_names=[topic]))
            assert int(shared.error_code) == 0, shared

            seen = {}
            md = await conn.request(ApiKey.METADATA, request_fields(
                topics=[{"name": topic}, {"name": secret}], allow_auto_topic_creation=False,
                include_cluster_authorized_operations=True, include_topic_authorized_operations=True), 8)
            seen["cluster (metadata)"] = md.cluster_authorized_operations
            seen.update({t.name: t.topic_authorized_operations for t in md.topics})
            dc = await conn.request(ApiKey.DESCRIBE_CLUSTER, request_fields(include_cluster_authorized_operations=True))
            seen["cluster"] = dc.cluster_authorized_operations
            dg = await conn.request(ApiKey.DESCRIBE_GROUPS, request_fields(groups=[classic],
                                                                    include_authorized_operations=True), 5)
            seen[classic] = dg.groups[0].authorized_operations
            for api, group in ((ApiKey.CONSUMER_GROUP_DESCRIBE, consumer), (ApiKey.SHARE_GROUP_DESCRIBE, share)):
                described = await conn.request(api, request_fields(group_ids=[group],
                                                                   include_authorized_operations=True))
                assert int(described.groups[0].error_code) == 0, described
                seen[group] = described.groups[0].authorized_operations
            # What the bits say the principal may do, it may: ALTER_CONFIGS on the topic.
            altered = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request_fields(resources=[{
                "resource_type": 2, "resource_name": topic,
                "configs": [{"name": "retention.ms", "config_operation": 0, "value": "3600000"}]}],
                validate_only=True))
            seen["alter topic configs"] = int(altered.responses[0].error_code)
            return seen
        finally:
            await conn.close()
            await super_conn.close()

    seen = asyncio.run(go())
    assert seen == {
        "cluster (metadata)": bits(Op.IDEMPOTENT_WRITE),
        "cluster": bits(Op.IDEMPOTENT_WRITE),
        topic: bits(Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS),
        secret: bits(Op.WRITE, Op.DESCRIBE),
        classic: bits(Op.DESCRIBE, Op.DELETE),
        consumer: bits(Op.DESCRIBE),
        share: bits(Op.DESCRIBE),
        "alter topic configs": 0,
    }

"""Replication factors refused as Kafka 4.4 refuses them, differential: the same CreateTopics
and CreatePartitions to a single kgroup broker and to a single-node Kafka (both node 1) get
the same error codes and messages, and the same replication factor where they succeed."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from kgroup.wire.api_keys import ApiKey

pytestmark = pytest.mark.integration

FACTORS = (3, 0, -2, -1, 1)
ASSIGNMENTS = ([[1, 2]], [[2]], [[1], [1, 1]], [[]], [[1], [1]])
GROWTHS = ([[2]], [[1, 1]], [[]], [[1]])


async def observe(bootstrap: str) -> list:
    host, port = bootstrap.rsplit(":", 1)
    base = f"rf-{uuid.uuid4().hex[:6]}"
    seen = []
    conn = await Connection.open(host, int(port), "rf-diff", 10)
    try:
        async def create(name: str, partitions: int, rf: int, assignments: list, validate: bool = True) -> None:
            r = await conn.request(ApiKey.CREATE_TOPICS, request_fields(
                topics=[{"name": name, "num_partitions": partitions, "replication_factor": rf,
                         "assignments": [{"partition_index": i, "broker_ids": b} for i, b in enumerate(assignments)],
                         "configs": []}], timeout=10_000, validate_only=validate), 7)
            t = r.topics[0]
            seen.append(("create", rf, assignments, int(t.error_code), t.error_message, t.replication_factor))

        for rf in FACTORS:
            await create(f"{base}-f", 1, rf, [])
        for assignments in ASSIGNMENTS:
            await create(f"{base}-a", -1, -1, assignments)
        await create(f"{base}-g", 1, 1, [], validate=False)
        for assignments in GROWTHS:
            r = await conn.request(ApiKey.CREATE_PARTITIONS, request_fields(
                topics=[{"name": f"{base}-g", "count": 1 + len(assignments),
                         "assignments": [{"broker_ids": b} for b in assignments]}],
                timeout=10_000, validate_only=True))
            seen.append(("grow", assignments, int(r.results[0].error_code), r.results[0].error_message))
    finally:
        await conn.close()
    return seen


def test_replication_factor_and_manual_assignment_refused_as_kafka_refuses_them(kgroup_broker_session,
                                                                               kafka_reference):
    ours = asyncio.run(observe(kgroup_broker_session.bootstrap))
    assert ours == asyncio.run(observe(kafka_reference.bootstrap))
    assert [s[3] for s in ours if s[0] == "create"] == [38, 38, 38, 0, 0, 39, 39, 39, 39, 0, 0]

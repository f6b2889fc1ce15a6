"""Dynamic broker configs, differential: kgroup and Apache Kafka 4.4 (both node 1) refuse the
same BROKER-resource changes with the same error code and text, accept the same dynamic
ones and describe them with the same values and sources; kgroup's table of Kafka's dynamic
configs is Kafka's own list; and every broker setting kgroup describes is read-only on
kgroup exactly when it is on Kafka. Kafka applies a change through its metadata log, a
moment after it answers: the scenario describes again until the change shows.

Named normalization: `listeners` — Kafka can change its listeners at run time, kgroup binds
them at start, so kgroup marks it read-only (and refuses it); the comparison of read-only
flags leaves it out.
"""

from __future__ import annotations

import asyncio

import pytest

from kgroup.broker.admin.dynamic_configs import KAFKA_DYNAMIC
from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from kgroup.wire.api_keys import ApiKey

pytestmark = pytest.mark.integration

BROKER = 4
SET, DELETE, APPEND = 0, 1, 2
KGROUP_READ_ONLY_HERE = {"listeners"}

# (resource name, [(config, op, value)]) that both must refuse alike.
REFUSED = [
    ("", [("num.partitions", SET, "3"), ("group.max.size", SET, "4")]),
    ("1", [("log.dirs", SET, "/elsewhere")]),
    ("1", [("group.consumer.session.timeout.ms", SET, "50000")]),
    ("", [("offsets.retention.minutes", SET, "5")]),
    ("1", [("ssl.keystore.location", SET, "/x")]),
    ("", [("sasl.kerberos.service.name", SET, "kafka")]),
    ("", [("message.max.bytes", SET, "abc")]),
    ("", [("log.retention.ms", APPEND, "1")]),
    ("", [("log.retention.ms", SET, None)]),
    ("2", [("message.max.bytes", SET, "2000000")]),
    ("x", [("message.max.bytes", SET, "2000000")]),
]
CHANGED = [("", [("log.retention.ms", SET, "3600000"), ("log.cleaner.threads", SET, "2")]),
           ("1", [("message.max.bytes", SET, "2000000")])]
UNDONE = [("", [("log.retention.ms", DELETE, None), ("log.cleaner.threads", DELETE, None)]),
          ("1", [("message.max.bytes", DELETE, None)])]
SHOWN = ("log.retention.ms", "log.cleaner.threads", "message.max.bytes")


async def _alter(conn: Connection, resource: str, changes: list) -> tuple[int, str | None]:
    resp = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request_fields(resources=[{
        "resource_type": BROKER, "resource_name": resource,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in changes]}], validate_only=False))
    return int(resp.responses[0].error_code), resp.responses[0].error_message


async def _describe(conn: Connection, resource: str) -> dict:
    resp = await conn.request(ApiKey.DESCRIBE_CONFIGS, request_fields(resources=[{
        "resource_type": BROKER, "resource_name": resource, "configuration_keys": None}], include_synonyms=True))
    (result,) = resp.results
    assert int(result.error_code) == 0, result
    return {c.name: c for c in result.configs}


async def observe(bootstrap: str) -> dict:
    host, port = bootstrap.rsplit(":", 1)
    conn = await Connection.open(host, int(port), "dynamic-configs", 10)
    try:
        seen = {"refused": [await _alter(conn, r, c) for r, c in REFUSED]}
        seen["changed"] = [await _alter(conn, r, c) for r, c in CHANGED]
        # Kafka applies a change through its metadata log: describe once it has.
        for _ in range(50):
            described = await _describe(conn, "1")
            if described["message.max.bytes"].value == "2000000":
                break
            await asyncio.sleep(0.1)
        seen["node"] = {n: (described[n].value, int(described[n].config_source), described[n].read_only,
                            [(s.name, s.value, int(s.source)) for s in described[n].synonyms
                             if int(s.source) in (2, 3)]) for n in SHOWN}
        cluster = await _describe(conn, "")
        seen["cluster default"] = {n: (c.value, int(c.config_source)) for n, c in cluster.items() if n in SHOWN}
        seen["undone"] = [await _alter(conn, r, c) for r, c in UNDONE]
        for _ in range(50):
            described = await _describe(conn, "1")
            if described["message.max.bytes"].value != "2000000":
                break
            await asyncio.sleep(0.1)
        seen["after"] = {n: int(described[n].config_source) for n in SHOWN if n in described}
        seen["all read-only flags"] = {n: c.read_only for n, c in described.items()}
        seen["all types"] = {n: int(c.config_type) for n, c in described.items()}
        seen["defaults"] = {n: next((s.value for s in c.synonyms if int(s.source) == 5), None)
                            for n, c in described.items()}
        return seen
    finally:
        await conn.close()


def test_dynamic_broker_configs_refused_changed_and_described_as_in_kafka(kgroup_broker_session, kafka_reference):
    ours = asyncio.run(observe(kgroup_broker_session.bootstrap))
    kafkas = asyncio.run(observe(kafka_reference.bootstrap))
    for key in ("refused", "changed", "node", "cluster default", "undone"):
        assert ours[key] == kafkas[key], key
    assert ours["refused"][0] == (42, "Cannot update these configs dynamically: [num.partitions, group.max.size]")
    assert ours["node"]["message.max.bytes"][:2] == ("2000000", 2)
    # After the changes are undone, log.cleaner.threads is no setting of kgroup's (it is kept
    # only while set); the others fall back alike.
    assert ours["after"] == {n: s for n, s in kafkas["after"].items() if n in ours["after"]}
    # Every setting kgroup describes is read-only exactly when Kafka's is.
    flags = {n: f for n, f in ours["all read-only flags"].items() if n not in KGROUP_READ_ONLY_HERE}
    assert flags == {n: kafkas["all read-only flags"][n] for n in flags}
    # kgroup's table of Kafka's dynamic configs is Kafka's list, with its types and defaults.
    # (Kafka lists an internal config only when server.properties sets it: the reference
    # sets the assignor offload ones, REFERENCE_SETTINGS.)
    dynamic = {n for n, read_only in kafkas["all read-only flags"].items()
               if not read_only and not n.endswith(".assignor.offload.enable")}
    assert {row[0] for row in KAFKA_DYNAMIC} == dynamic
    assert {row[0]: int(row[1]) for row in KAFKA_DYNAMIC} == {n: kafkas["all types"][n] for n in dynamic}
    assert {row[0]: row[2] for row in KAFKA_DYNAMIC} == {n: kafkas["defaults"][n] for n in dynamic}

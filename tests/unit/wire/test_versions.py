"""The served versions (the broker's API tables): docs/protocol.md's minimums, kio coverage,
flexible flags, header versions."""

from __future__ import annotations

import pytest
from kafka.protocol.api_message import ApiMessage

from kgroup.broker.concerns import SERVED
from kgroup.wire.codec import request_class, response_class
from kgroup.wire.versions import (
    all_versions,
    is_flexible,
    request_header_version,
    response_header_version,
)


# docs/protocol.md, "serve at least" column.
AT_LEAST = {
    0: (3, 11), 1: (4, 16), 2: (1, 8), 3: (1, 12), 8: (2, 9), 9: (1, 9), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 18: (0, 4),
    19: (2, 7), 20: (1, 6), 42: (0, 2), 37: (0, 3), 47: (0, 0), 68: (0, 1), 69: (0, 1),
}


# Transactions and idempotence: the versions real clients send (librdkafka 2.16 InitProducerId
# 0-4, EndTxn 0-1, TxnOffsetCommit 0-3; kafka-python 3.0 up to 3 for the others; admin tools
# DescribeProducers 0, DescribeTransactions 0, ListTransactions 0-1).
TXN_AT_LEAST = {22: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 28: (0, 3), 61: (0, 0), 65: (0, 0), 66: (0, 1),
                27: (1, 2)}  # WriteTxnMarkers: between the nodes of a cluster (issue 32)

# Security (SASL, ACLs, SCRAM credentials): KIP-43/152, the ACL APIs, KIP-554.
SECURITY_APIS = {17, 36, 29, 30, 31, 50, 51}
SECURITY_APIS |= {38, 39, 40, 41}  # the delegation token APIs (KIP-48)

# Served beyond the first protocol table because admin tools and web UIs call them:
# DeleteRecords, DescribeConfigs, AlterConfigs, DescribeLogDirs, IncrementalAlterConfigs and
# DescribeCluster; UpdateFeatures for `kafka-features upgrade|downgrade|disable`;
# DescribeTopicPartitions (Admin.describeTopics, KIP-966) and OffsetForLeaderEpoch (consumers
# validating positions, KIP-320) at Kafka 4.4's versions; client telemetry (KIP-714:
# GetTelemetrySubscriptions, PushTelemetry) and ListConfigResources (KIP-1142, kafka-client-metrics);
# partition moves and elections (kafka-reassign-partitions, kafka-leader-election) and
# AlterReplicaLogDirs.
ADMIN_AT_LEAST = {21: (0, 2), 32: (1, 4), 33: (0, 2), 35: (1, 5), 44: (0, 1), 60: (0, 2), 57: (0, 2),
                  23: (2, 4), 75: (0, 0), 71: (0, 0), 72: (0, 0), 74: (0, 1),
                  34: (1, 2), 43: (0, 2), 45: (0, 1), 46: (0, 0)}
ADMIN_AT_LEAST.update({48: (0, 1), 49: (0, 1)})     # client quotas (issue 30)

# Share groups (KIP-932), from the versions librdkafka's ShareConsumer sends (v1 of 76-79) to
# Kafka 4.4's ShareFetch/ShareAcknowledge v2 (KIP-1206, KIP-1222), and the share-group
# offsets admin APIs.
SHARE_APIS = {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0),
              # The share-state persister (KIP-932), brokers to the share coordinator.
              83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1)}
# Streams groups (KIP-1071): Kafka 4.4's versions, exactly.
STREAMS_APIS = {88: (0, 1), 89: (0, 1), 93: (0, 0)}


def test_table_covers_protocol_md() -> None:
    assert set(SERVED) == set(AT_LEAST) | set(TXN_AT_LEAST) | set(ADMIN_AT_LEAST) | SECURITY_APIS \
        | set(SHARE_APIS) | set(STREAMS_APIS)
    for key, (lo, hi) in {**SHARE_APIS, **STREAMS_APIS}.items():
        assert (SERVED[key].min_version, SERVED[key].max_version) == (lo, hi)
    for key, (lo, hi) in {**AT_LEAST, **TXN_AT_LEAST, **ADMIN_AT_LEAST}.items():
        r = SERVED[key]
        assert r.min_version <= lo and r.max_version >= hi, r


# Kafka 4.4's ranges of the consumer-protocol APIs and the classic Heartbeat, served exactly.
CONSUMER_PROTOCOL_RANGES = {68: (0, 1), 69: (0, 1), 12: (0, 4)}


@pytest.mark.parametrize(("api_key", "lo", "hi"), [(k, lo, hi) for k, (lo, hi) in CONSUMER_PROTOCOL_RANGES.items()])
def test_the_consumer_protocol_is_served_and_ranges_are_exact(api_key: int, lo: int, hi: int) -> None:
    served = SERVED[api_key]
    assert (served.min_version, served.max_version) == (lo, hi)
    # A range holds its ends and nothing past them (the codec refuses what it does not hold).
    assert lo in served and hi in served
    assert lo - 1 not in served and hi + 1 not in served and str(hi) not in served


@pytest.mark.parametrize(("api_key", "version"), all_versions(SERVED.values()))
def test_kio_has_every_version(api_key: int, version: int) -> None:
    req, resp = request_class(api_key, version), response_class(api_key, version)
    assert req.__api_key__ == resp.__api_key__ == api_key
    assert req.__version__ == resp.__version__ == version
    assert req.__flexible__ == resp.__flexible__ == is_flexible(api_key, version)


def _kafka_python_classes() -> dict[int, type]:
    import kafka.protocol.admin as admin
    import kafka.protocol.consumer as consumer
    import kafka.protocol.metadata as metadata
    import kafka.protocol.producer as producer

    found: dict[int, type] = {}
    for mod in (admin, consumer, metadata, producer):
        for name in dir(mod):
            obj = getattr(mod, name)
            if (
                isinstance(obj, type)
                and issubclass(obj, ApiMessage)
                and obj is not ApiMessage
                and name.endswith("Request")
            ):
                try:
                    found[obj.API_KEY] = obj
                except Exception:  # abstract helpers
                    pass
    return found


def test_flexible_flags_agree_with_kafka_python() -> None:
    classes = _kafka_python_classes()
    checked = 0
    for api_key, version in all_versions(SERVED.values()):
        cls = classes.get(api_key)
        if cls is None or version > cls.max_version:
            continue
        assert cls.flexible_version_q(version) == is_flexible(api_key, version), (
            api_key,
            version,
        )
        checked += 1
    assert checked > 100


def test_header_versions() -> None:
    assert request_header_version(12, 3) == 1 and request_header_version(12, 4) == 2
    assert response_header_version(12, 3) == 0 and response_header_version(12, 4) == 1
    # ApiVersions responses always use header v0 (KIP-511), even at flexible v3/v4.
    assert is_flexible(18, 3) and response_header_version(18, 3) == 0
    assert response_header_version(18, 4) == 0 and request_header_version(18, 4) == 2
    for api_key, version in all_versions(SERVED.values()):
        expected = response_header_version(api_key, version)
        hdr = response_class(api_key, version).__header_schema__
        assert hdr.__version__ == expected, (api_key, version)
        assert request_class(api_key, version).__header_schema__.__version__ == (
            request_header_version(api_key, version)
        )

"""The APIs and version ranges kgroup serves, and their header versions.

The ranges follow the "serve at least" column of PROTOCOL.md, widened where kio has a newer
version whose new fields change nothing for us:

- Produce 3–12: v12 has the schema of v11; a Java client sends it only with KIP-890's
  transaction.version 2 (partitions added implicitly), which we do not advertise, so a
  transactional batch must still be in its transaction (AddPartitionsToTxn) at any version.
  v13 (topic ids instead of names) is left out.
- Fetch 4–18: v17/v18 add follower-only tagged fields (replica directory id, high
  watermark) that consumers never send. Fetch v13+ names topics by id only — the broker
  needs topic ids anyway for Metadata v10+.
- Metadata 1–13: v13 adds a top-level ``error_code`` to the response (set it to 0).
- SaslHandshake 0–1, as Kafka 4.x still advertises it (KAFKA-18270): librdkafka before that
  fix (Debian's kcat 1.7.1, older confluent-kafka and node-rdkafka) refuses a range without
  v0. v0 (Kafka 0.10) is followed by SASL tokens in bare frames with no request header,
  served as Kafka serves them (wire/sasl.py); v1 by SaslAuthenticate (0–2, v1 adds the
  session lifetime of KIP-368). ACL APIs from v1 (v0 predates prefixed patterns, KIP-290);
  the SCRAM credential APIs (KIP-554) have only v0.
- Admin APIs tools call: DeleteRecords 0–2, DescribeConfigs 1–4 (v0 is kio-less and gone
  from Kafka 4.0), AlterConfigs 0–2, DescribeLogDirs 1–4, IncrementalAlterConfigs 0–1,
  DescribeCluster 0–2.
- Not widened: ListOffsets v9+ (tiered-storage timestamps), OffsetCommit/OffsetFetch v10
  (topic ids), DescribeGroups v6 (GROUP_ID_NOT_FOUND semantics), CreateTopics v7 is the
  last kio ships.

Transactions (broker/txn_api.py has the per-version notes): InitProducerId 0-5,
AddPartitionsToTxn 0-4, AddOffsetsToTxn 0-4, EndTxn 0-4, TxnOffsetCommit 0-4,
DescribeProducers 0, DescribeTransactions 0, ListTransactions 0-1. Not served: EndTxn and
TxnOffsetCommit v5 and AddPartitionsToTxn v5 (KIP-890 part 2, "transaction.version 2": a
client uses them only when the broker advertises that feature, and none of ours needs it).

ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) are in the table but listed in
``CONSUMER_PROTOCOL_APIS`` so the broker can pass them as ``disabled`` until the consumer
protocol is implemented (then they are neither decoded nor advertised).

Flexible versions (request header v2, response header v1) come from kio's schema classes.
ApiVersions responses always use response header v0, even when flexible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from .schemas import load_request_schema


@dataclass(frozen=True, slots=True)
class ApiRange:
    """One API we serve: its key, name and inclusive version range."""

    api_key: int
    name: str
    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version


PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
SASL_HANDSHAKE = 17
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31
SASL_AUTHENTICATE = 36
CREATE_PARTITIONS = 37
DELETE_GROUPS = 42
OFFSET_DELETE = 47
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
DESCRIBE_LOG_DIRS = 35
INCREMENTAL_ALTER_CONFIGS = 44
DESCRIBE_CLUSTER = 60
DESCRIBE_PRODUCERS = 61
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
SHARE_GROUP_HEARTBEAT = 76
SHARE_GROUP_DESCRIBE = 77
SHARE_FETCH = 78
SHARE_ACKNOWLEDGE = 79
DESCRIBE_SHARE_GROUP_OFFSETS = 90
ALTER_SHARE_GROUP_OFFSETS = 91
DELETE_SHARE_GROUP_OFFSETS = 92
STREAMS_GROUP_HEARTBEAT = 88
STREAMS_GROUP_DESCRIBE = 89
STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 93

_RANGES = (
    ApiRange(PRODUCE, "Produce", 3, 12),
    ApiRange(FETCH, "Fetch", 4, 18),
    ApiRange(LIST_OFFSETS, "ListOffsets", 1, 8),
    ApiRange(METADATA, "Metadata", 1, 13),
    ApiRange(OFFSET_COMMIT, "OffsetCommit", 2, 9),
    ApiRange(OFFSET_FETCH, "OffsetFetch", 1, 9),
    ApiRange(FIND_COORDINATOR, "FindCoordinator", 0, 6),
    ApiRange(JOIN_GROUP, "JoinGroup", 0, 9),
    ApiRange(HEARTBEAT, "Heartbeat", 0, 4),
    ApiRange(LEAVE_GROUP, "LeaveGroup", 0, 5),
    ApiRange(SYNC_GROUP, "SyncGroup", 0, 5),
    ApiRange(DESCRIBE_GROUPS, "DescribeGroups", 0, 5),
    ApiRange(LIST_GROUPS, "ListGroups", 0, 5),
    ApiRange(SASL_HANDSHAKE, "SaslHandshake", 0, 1),
    ApiRange(API_VERSIONS, "ApiVersions", 0, 4),
    ApiRange(CREATE_TOPICS, "CreateTopics", 2, 7),
    ApiRange(DELETE_TOPICS, "DeleteTopics", 1, 6),
    ApiRange(DELETE_RECORDS, "DeleteRecords", 0, 2),
    ApiRange(DESCRIBE_CONFIGS, "DescribeConfigs", 1, 4),
    ApiRange(ALTER_CONFIGS, "AlterConfigs", 0, 2),
    ApiRange(DESCRIBE_LOG_DIRS, "DescribeLogDirs", 1, 4),
    ApiRange(INIT_PRODUCER_ID, "InitProducerId", 0, 5),
    ApiRange(ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 4),
    ApiRange(ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 4),
    ApiRange(END_TXN, "EndTxn", 0, 4),
    ApiRange(TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 4),
    ApiRange(DESCRIBE_ACLS, "DescribeAcls", 1, 3),
    ApiRange(CREATE_ACLS, "CreateAcls", 1, 3),
    ApiRange(DELETE_ACLS, "DeleteAcls", 1, 3),
    ApiRange(SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2),
    ApiRange(CREATE_PARTITIONS, "CreatePartitions", 0, 3),
    ApiRange(DELETE_GROUPS, "DeleteGroups", 0, 3),
    ApiRange(INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 0, 1),
    ApiRange(OFFSET_DELETE, "OffsetDelete", 0, 0),
    ApiRange(DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0),
    ApiRange(ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0),
    ApiRange(DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0),
    ApiRange(DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0),
    ApiRange(LIST_TRANSACTIONS, "ListTransactions", 0, 1),
    ApiRange(CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupHeartbeat", 0, 1),
    ApiRange(CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", 0, 1),
    ApiRange(DESCRIBE_CLUSTER, "DescribeCluster", 0, 2),
    # Share groups (KIP-932): v1 is the version Kafka 4.1+ and librdkafka speak (v0 was the
    # early-access one, never in kio); ShareFetch/ShareAcknowledge v2 (renew acks) are not served.
    ApiRange(SHARE_GROUP_HEARTBEAT, "ShareGroupHeartbeat", 1, 1),
    ApiRange(SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", 1, 1),
    ApiRange(SHARE_FETCH, "ShareFetch", 1, 1),
    ApiRange(SHARE_ACKNOWLEDGE, "ShareAcknowledge", 1, 1),
    ApiRange(DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsets", 0, 1),
    ApiRange(ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsets", 0, 0),
    ApiRange(DELETE_SHARE_GROUP_OFFSETS, "DeleteShareGroupOffsets", 0, 0),
    # Streams groups (KIP-1071) at Kafka 4.4's versions (KIP-1331's v1 and description push).
    ApiRange(STREAMS_GROUP_HEARTBEAT, "StreamsGroupHeartbeat", 0, 1),
    ApiRange(STREAMS_GROUP_DESCRIBE, "StreamsGroupDescribe", 0, 1),
    ApiRange(STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, "StreamsGroupTopologyDescriptionUpdate", 0, 0),
)

SUPPORTED_APIS: Mapping[int, ApiRange] = MappingProxyType({r.api_key: r for r in _RANGES})
"""api_key -> ApiRange for every API in the table (including the consumer-protocol ones)."""

CONSUMER_PROTOCOL_APIS: frozenset[int] = frozenset(
    {CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE}
)
"""APIs the broker should pass as ``disabled`` until the consumer protocol is implemented."""


def api_ranges(disabled: Iterable[int] = ()) -> tuple[ApiRange, ...]:
    """The ranges to advertise, sorted by api key, without the ``disabled`` keys."""
    off = frozenset(disabled)
    return tuple(r for r in _RANGES if r.api_key not in off)


def is_supported(api_key: int, version: int, disabled: Iterable[int] = ()) -> bool:
    """Whether we decode and serve ``(api_key, version)``."""
    r = SUPPORTED_APIS.get(api_key)
    return r is not None and version in r and api_key not in frozenset(disabled)


def all_versions() -> tuple[tuple[int, int], ...]:
    """Every (api_key, version) pair in the table."""
    return tuple(
        (r.api_key, v) for r in _RANGES for v in range(r.min_version, r.max_version + 1)
    )


@cache
def is_flexible(api_key: int, version: int) -> bool:
    """Whether this (api_key, version) uses the flexible (compact, tagged) encoding."""
    return bool(load_request_schema(api_key, version).__flexible__)


def request_header_version(api_key: int, version: int) -> int:
    """Request header version: 2 for flexible versions, else 1."""
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """Response header version: 1 for flexible versions, else 0; ApiVersions is always 0."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0

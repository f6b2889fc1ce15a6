"""The versions kgroup's client speaks, per API: the top of each range is the newest version
it builds requests in and reads answers of; `Connection.choose_version` picks the highest
version both it and the broker (ApiVersions) know.

These are the client's own: what a broker serves is the broker's business (kgroup's is in
kgroup/broker/*/apis.py). A client that learns a newer version widens its range here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from kgroup.wire.api_keys import ApiKey
from kgroup.wire.versions import ApiRange

_RANGES = (
    ApiRange(ApiKey.PRODUCE, 3, 12),
    ApiRange(ApiKey.FETCH, 4, 18),
    ApiRange(ApiKey.LIST_OFFSETS, 1, 8),
    ApiRange(ApiKey.METADATA, 1, 13),
    ApiRange(ApiKey.OFFSET_COMMIT, 2, 9),
    ApiRange(ApiKey.OFFSET_FETCH, 1, 9),
    ApiRange(ApiKey.FIND_COORDINATOR, 0, 6),
    ApiRange(ApiKey.JOIN_GROUP, 0, 9),
    ApiRange(ApiKey.HEARTBEAT, 0, 4),
    ApiRange(ApiKey.LEAVE_GROUP, 0, 5),
    ApiRange(ApiKey.SYNC_GROUP, 0, 5),
    ApiRange(ApiKey.DESCRIBE_GROUPS, 0, 5),
    ApiRange(ApiKey.LIST_GROUPS, 0, 5),
    ApiRange(ApiKey.SASL_HANDSHAKE, 1, 1),
    ApiRange(ApiKey.API_VERSIONS, 0, 4),
    ApiRange(ApiKey.CREATE_TOPICS, 2, 7),
    ApiRange(ApiKey.DELETE_TOPICS, 1, 6),
    ApiRange(ApiKey.DELETE_RECORDS, 0, 2),
    ApiRange(ApiKey.DESCRIBE_CONFIGS, 1, 4),
    ApiRange(ApiKey.ALTER_CONFIGS, 0, 2),
    ApiRange(ApiKey.DESCRIBE_LOG_DIRS, 1, 4),
    ApiRange(ApiKey.INIT_PRODUCER_ID, 0, 5),
    ApiRange(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 4),
    ApiRange(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4),
    ApiRange(ApiKey.END_TXN, 0, 4),
    ApiRange(ApiKey.TXN_OFFSET_COMMIT, 0, 4),
    ApiRange(ApiKey.DESCRIBE_ACLS, 1, 3),
    ApiRange(ApiKey.CREATE_ACLS, 1, 3),
    ApiRange(ApiKey.DELETE_ACLS, 1, 3),
    ApiRange(ApiKey.SASL_AUTHENTICATE, 0, 2),
    ApiRange(ApiKey.CREATE_PARTITIONS, 0, 3),
    ApiRange(ApiKey.ELECT_LEADERS, 1, 2),
    ApiRange(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1),
    ApiRange(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0),
    ApiRange(ApiKey.DELETE_GROUPS, 0, 2),
    ApiRange(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1),
    ApiRange(ApiKey.OFFSET_DELETE, 0, 0),
    ApiRange(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1),
    ApiRange(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1),
    ApiRange(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0),
    ApiRange(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0),
    ApiRange(ApiKey.CREATE_DELEGATION_TOKEN, 1, 3),
    ApiRange(ApiKey.RENEW_DELEGATION_TOKEN, 1, 2),
    ApiRange(ApiKey.EXPIRE_DELEGATION_TOKEN, 1, 2),
    ApiRange(ApiKey.DESCRIBE_DELEGATION_TOKEN, 1, 3),
    ApiRange(ApiKey.DESCRIBE_PRODUCERS, 0, 0),
    ApiRange(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0),
    ApiRange(ApiKey.LIST_TRANSACTIONS, 0, 1),
    ApiRange(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1),
    ApiRange(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1),
    ApiRange(ApiKey.DESCRIBE_CLUSTER, 0, 2),
    ApiRange(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1),
    ApiRange(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1),
    ApiRange(ApiKey.SHARE_FETCH, 1, 1),
    ApiRange(ApiKey.SHARE_ACKNOWLEDGE, 1, 1),
    ApiRange(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1),
    ApiRange(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0),
    ApiRange(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0),
    ApiRange(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 1),
    ApiRange(ApiKey.LIST_CONFIG_RESOURCES, 0, 1),
)

CLIENT_APIS: Mapping[int, ApiRange] = MappingProxyType({r.api_key: r for r in _RANGES})
"""api key -> the versions kgroup's client speaks."""

"""The admin APIs tools call: configs of topics, groups and the broker, DeleteRecords,
DescribeLogDirs, AlterReplicaLogDirs, UpdateFeatures, client quotas, and partition moves and
elections (AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders). One entry
each (broker/apis.py says what an entry holds).

Version notes: DescribeConfigs from v1 (v0 is kio-less and gone from Kafka 4.0).
AlterReplicaLogDirs 1–2 (v0 is gone since Kafka 4.0). AlterPartitionReassignments v1 adds
allow_replication_factor_change (KIP-860). ElectLeaders v1 adds the election type and a
top-level error, v2 is flexible.
"""

from __future__ import annotations

from kgroup.broker.admin import guards
from kgroup.broker.admin.configs_api import ConfigsApi
from kgroup.broker.admin.features_api import FeaturesApi
from kgroup.broker.admin.reassignments_api import ReassignmentsApi
from kgroup.broker.admin.quotas_api import QuotasApi
from kgroup.broker.admin.records_api import RecordsApi
from kgroup.broker.apis import Api
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.DELETE_RECORDS, 0, 2, RecordsApi.delete_records, guards.delete_records, edits=True),
    Api(K.DESCRIBE_CONFIGS, 1, 4, ConfigsApi.describe_configs, guards.describe_configs, edits=False),
    Api(K.ALTER_CONFIGS, 0, 2, ConfigsApi.alter_configs, guards.alter_configs, edits=True),
    Api(K.DESCRIBE_LOG_DIRS, 1, 5, RecordsApi.describe_log_dirs, guards.describe_log_dirs, edits=False),
    Api(K.INCREMENTAL_ALTER_CONFIGS, 0, 1, ConfigsApi.incremental_alter_configs, guards.incremental_alter_configs,
        edits=True),
    Api(K.LIST_CONFIG_RESOURCES, 0, 1, ConfigsApi.list_config_resources, guards.list_config_resources,
        edits=False),
    Api(K.ALTER_REPLICA_LOG_DIRS, 1, 2, RecordsApi.alter_replica_log_dirs, guards.alter_replica_log_dirs,
        edits=False),
    Api(K.ELECT_LEADERS, 0, 2, ReassignmentsApi.elect_leaders, guards.elect_leaders, edits=True),
    Api(K.ALTER_PARTITION_REASSIGNMENTS, 0, 1, ReassignmentsApi.alter_partition_reassignments,
        guards.alter_partition_reassignments, edits=True),
    Api(K.LIST_PARTITION_REASSIGNMENTS, 0, 0, ReassignmentsApi.list_partition_reassignments,
        guards.list_partition_reassignments, edits=False),
    Api(K.UPDATE_FEATURES, 0, 2, FeaturesApi.update_features, guards.update_features, edits=True),
    Api(K.DESCRIBE_CLIENT_QUOTAS, 0, 1, QuotasApi.describe_client_quotas, guards.describe_client_quotas,
        edits=False),
    Api(K.ALTER_CLIENT_QUOTAS, 0, 1, QuotasApi.alter_client_quotas, guards.alter_client_quotas, edits=True),
)

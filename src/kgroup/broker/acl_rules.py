"""Which operation on which resources each API needs: Kafka's rules, one row per API.

The table ``RULES`` maps an API key to its guard (``authorization.py`` says how a guard
works). Kafka's rules (its authorization docs' "operations and resources on protocols"):

    Produce              WRITE topic; transactional: WRITE transactional id
    Fetch                READ topic (a follower fetch: CLUSTER_ACTION on the cluster)
    ListOffsets          DESCRIBE topic
    Metadata             DESCRIBE topic (unlisted when asking for all); auto-creation
                         needs CREATE on the cluster or the topic
    OffsetCommit         READ group, READ topic
    OffsetFetch          DESCRIBE group, DESCRIBE topic (unlisted when asking for all)
    FindCoordinator      DESCRIBE group / DESCRIBE transactional id
    JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat   READ group
                         (ConsumerGroupHeartbeat also DESCRIBE on its subscribed topics)
    DescribeGroups, ConsumerGroupDescribe   DESCRIBE group (ConsumerGroupDescribe also
                         DESCRIBE on the topics its members use)
    ListGroups           DESCRIBE cluster, else only groups the principal may DESCRIBE (KIP-231)
    CreateTopics         CREATE cluster or CREATE topic (configs shown with DESCRIBE_CONFIGS)
    DeleteTopics         DELETE topic;  CreatePartitions  ALTER topic
    DeleteGroups         DELETE group;  OffsetDelete  DELETE group, READ topic
    InitProducerId       WRITE transactional id; without one IDEMPOTENT_WRITE on the
                         cluster or WRITE on some topic
    DescribeAcls         DESCRIBE cluster;  CreateAcls, DeleteAcls  ALTER cluster
    DescribeUserScramCredentials  DESCRIBE cluster;  AlterUserScramCredentials  ALTER cluster

Rows for APIs kgroup does not serve yet (transactions, share groups, configs, ...) are here
already, keyed by number, each checked against kio's schemas of every version, so the API is
enforced the day it is served:

    DeleteRecords        DELETE topic;   OffsetForLeaderEpoch  DESCRIBE topic (brokers:
                         CLUSTER_ACTION);  DescribeTopicPartitions  DESCRIBE topic
    AddPartitionsToTxn   WRITE transactional id and WRITE on every topic (v4+: CLUSTER_ACTION)
    AddOffsetsToTxn      WRITE transactional id, READ group;  EndTxn  WRITE transactional id
    TxnOffsetCommit      WRITE transactional id, READ group, READ topic
    WriteTxnMarkers      CLUSTER_ACTION;  DescribeProducers  READ topic
    DescribeTransactions, ListTransactions  DESCRIBE transactional id (listed only if allowed)
    DescribeConfigs / AlterConfigs, IncrementalAlterConfigs  DESCRIBE_CONFIGS / ALTER_CONFIGS
                         on the topic, the group or (brokers) the cluster
    DescribeLogDirs      DESCRIBE cluster;  DescribeCluster  nothing (operations if asked)
    ShareGroupHeartbeat, ShareFetch, ShareAcknowledge, AlterShareGroupOffsets  READ group
                         (and READ/DESCRIBE topics);  ShareGroupDescribe,
                         DescribeShareGroupOffsets  DESCRIBE group;  DeleteShareGroupOffsets
                         DELETE group;  share-group state APIs  CLUSTER_ACTION
    StreamsGroupHeartbeat  READ group, DESCRIBE on the topology's topics (internal topics
                         are created only with CREATE on the cluster or the topic);
                         StreamsGroupDescribe  DESCRIBE group (and its topology's topics);
                         StreamsGroupTopologyDescriptionUpdate  READ group

Refusals carry Kafka's codes: TOPIC_, GROUP_, CLUSTER_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
ApiVersions, SaslHandshake and SaslAuthenticate need nothing (``OPEN``). A new API adds its
row here (or switches its number to its name in wire.versions);
``tests/unit/broker/test_acl_rules.py`` fails for an API served without one.
"""

from __future__ import annotations

from kgroup.broker import acl_guards_admin as admin
from kgroup.broker import acl_guards_data as data
from kgroup.broker import acl_guards_groups as groups
from kgroup.broker import acl_guards_share as share
from kgroup.broker import acl_guards_streams as streams
from kgroup.broker import acl_guards_txn as txn
from kgroup.broker.authorization import Guard
from kgroup.wire import versions as api

RULES: dict[int, Guard] = {
    api.PRODUCE: data.produce,
    api.FETCH: data.fetch,
    api.LIST_OFFSETS: data.list_offsets,
    api.METADATA: data.metadata,
    api.OFFSET_COMMIT: groups.offset_commit,
    api.OFFSET_FETCH: groups.offset_fetch,
    api.FIND_COORDINATOR: groups.find_coordinator,
    api.JOIN_GROUP: groups.join_group,
    api.HEARTBEAT: groups.heartbeat,
    api.LEAVE_GROUP: groups.leave_group,
    api.SYNC_GROUP: groups.sync_group,
    api.DESCRIBE_GROUPS: groups.describe_groups,
    api.LIST_GROUPS: groups.list_groups,
    api.CREATE_TOPICS: data.create_topics,
    api.DELETE_TOPICS: data.delete_topics,
    api.INIT_PRODUCER_ID: txn.init_producer_id,
    api.DESCRIBE_ACLS: admin.describe_acls,
    api.CREATE_ACLS: admin.create_acls,
    api.DELETE_ACLS: admin.delete_acls,
    api.CREATE_PARTITIONS: data.create_partitions,
    api.DELETE_GROUPS: groups.delete_groups,
    api.OFFSET_DELETE: groups.offset_delete,
    api.DESCRIBE_USER_SCRAM_CREDENTIALS: admin.describe_user_scram_credentials,
    api.ALTER_USER_SCRAM_CREDENTIALS: admin.alter_user_scram_credentials,
    api.ADD_PARTITIONS_TO_TXN: txn.add_partitions_to_txn,
    api.ADD_OFFSETS_TO_TXN: txn.add_offsets_to_txn,
    api.END_TXN: txn.end_txn,
    api.TXN_OFFSET_COMMIT: txn.txn_offset_commit,
    api.DESCRIBE_PRODUCERS: txn.describe_producers,
    api.DESCRIBE_TRANSACTIONS: txn.describe_transactions,
    api.LIST_TRANSACTIONS: txn.list_transactions,
    api.CONSUMER_GROUP_HEARTBEAT: groups.consumer_group_heartbeat,
    api.CONSUMER_GROUP_DESCRIBE: groups.consumer_group_describe,
    api.STREAMS_GROUP_HEARTBEAT: streams.streams_group_heartbeat,
    api.STREAMS_GROUP_DESCRIBE: streams.streams_group_describe,
    api.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: streams.streams_group_topology_description_update,
    # Not served yet (see the module comment): by number until wire.versions names them.
    21: data.delete_records,                    # DeleteRecords
    23: data.offset_for_leader_epoch,           # OffsetForLeaderEpoch
    27: txn.write_txn_markers,                  # WriteTxnMarkers
    32: admin.describe_configs,                 # DescribeConfigs
    33: admin.alter_configs,                    # AlterConfigs
    35: admin.describe_log_dirs,                # DescribeLogDirs
    44: admin.incremental_alter_configs,        # IncrementalAlterConfigs
    60: admin.describe_cluster,                 # DescribeCluster
    75: data.describe_topic_partitions,         # DescribeTopicPartitions
    76: share.share_group_heartbeat,            # ShareGroupHeartbeat
    77: share.share_group_describe,             # ShareGroupDescribe
    78: share.share_records,                    # ShareFetch
    79: share.share_records,                    # ShareAcknowledge
    83: share.share_group_state,                # InitializeShareGroupState
    84: share.share_group_state,                # ReadShareGroupState
    85: share.share_group_state,                # WriteShareGroupState
    86: share.share_group_state,                # DeleteShareGroupState
    87: share.share_group_state,                # ReadShareGroupStateSummary
    90: share.describe_share_group_offsets,     # DescribeShareGroupOffsets
    91: share.alter_share_group_offsets,        # AlterShareGroupOffsets
    92: share.delete_share_group_offsets,       # DeleteShareGroupOffsets
}

# APIs every connection may use once authenticated, with no ACL.
OPEN: frozenset[int] = frozenset({api.API_VERSIONS, api.SASL_HANDSHAKE, api.SASL_AUTHENTICATE})

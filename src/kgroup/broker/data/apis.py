"""The data path's APIs: one entry each (broker/apis.py says what an entry holds).

Version notes (the handler modules say what each version adds):
- Produce 3–13: v12 has the schema of v11; a Java client sends it only with KIP-890's
  transaction.version 2, which adds a transactional batch's partition to the producer's
  transaction itself (txn/implicit_add.py); below v12 it must already be in it.
  v13 names topics by id (KIP-516).
- Fetch 4–18: v17/v18 add follower-only tagged fields (replica directory id, high
  watermark) that consumers never send; v13+ names topics by id only.
- ListOffsets 1–11: v8–v11 add tiered-storage timestamps (-4, -5, -6) answered as a broker
  without tiered storage answers them; v10's timeout has nothing to wait for.
- Metadata 1–13: v13 adds a top-level error_code.
- CreateTopics 2–7: v7 is the last kio ships.
- OffsetForLeaderEpoch 2–4 (Kafka 4.4's range: v0/v1 are gone since 4.0).
- DescribeTopicPartitions 0 (KIP-966).
"""

from __future__ import annotations

from kgroup.broker.apis import Api
from kgroup.broker.data import guards
from kgroup.broker.data.data_path import DataPath
from kgroup.broker.security.listeners import brokers_on_listener, cluster_on_listener
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.PRODUCE, 3, 13, DataPath.produce, guards.produce, edits=True),
    Api(K.FETCH, 4, 18, DataPath.fetch_answer, guards.fetch, edits=False, kio_handler=DataPath.fetch),
    Api(K.LIST_OFFSETS, 1, 11, DataPath.list_offsets, guards.list_offsets, edits=False),
    # Metadata may create the topics it asks for (allow_auto_topic_creation).
    Api(K.METADATA, 0, 13, DataPath.metadata, guards.metadata, edits=True, on_listener=brokers_on_listener),
    Api(K.CREATE_TOPICS, 2, 7, DataPath.create_topics, guards.create_topics, edits=True),
    Api(K.DELETE_TOPICS, 1, 6, DataPath.delete_topics, guards.delete_topics, edits=True),
    Api(K.CREATE_PARTITIONS, 0, 3, DataPath.create_partitions, guards.create_partitions, edits=True),
    Api(K.OFFSET_FOR_LEADER_EPOCH, 2, 4, DataPath.offset_for_leader_epoch, guards.offset_for_leader_epoch,
        edits=False),
    Api(K.DESCRIBE_TOPIC_PARTITIONS, 0, 0, DataPath.describe_topic_partitions, guards.describe_topic_partitions,
        edits=False),
    Api(K.DESCRIBE_CLUSTER, 0, 2, DataPath.describe_cluster, guards.describe_cluster, edits=False,
        on_listener=cluster_on_listener),
)

# Guards written for APIs not served yet: the day one is served, its entry above takes it.
PREPARED_GUARDS: dict = {}

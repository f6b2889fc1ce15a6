"""Streams groups' APIs (KIP-1071): one entry each (broker/apis.py says what an entry holds).

StreamsGroupHeartbeat and StreamsGroupDescribe v0-v1 and the topology description update
(KIP-1331) v0: the versions Kafka 4.4 serves and Kafka Streams 4.4 speaks.
"""

from __future__ import annotations

from kgroup.broker.apis import Api, Takes
from kgroup.broker.streams import guards
from kgroup.broker.streams.streams_group_api import StreamsGroupApi
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.STREAMS_GROUP_HEARTBEAT, 0, 1, StreamsGroupApi.heartbeat, guards.streams_group_heartbeat, edits=True,
        takes=Takes.CLIENT_HOST),
    Api(K.STREAMS_GROUP_DESCRIBE, 0, 1, StreamsGroupApi.describe, guards.streams_group_describe, edits=False),
    Api(K.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, 0, StreamsGroupApi.topology_description_update,
        guards.streams_group_topology_description_update, edits=True),
)

"""Share groups' APIs (KIP-932): one entry each (broker/apis.py says what an entry holds).

v1 of ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge is what Kafka
4.1+ and librdkafka speak (v0 was the early-access version, never in kio); ShareFetch and
ShareAcknowledge v2 (Kafka 4.2+) add the acquire modes (KIP-1206) and renewing
acknowledgements (KIP-1222), with the lock duration in ShareAcknowledge's answer.
"""

from __future__ import annotations

from kgroup.broker.apis import Api, Takes
from kgroup.broker.security.listeners import endpoints_on_listener
from kgroup.broker.share import guards
from kgroup.broker.share.share_fetch import ShareFetchService
from kgroup.broker.share.share_group_api import ShareGroupApi
from kgroup.broker.share.share_state_api import ShareStateApi
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.SHARE_GROUP_HEARTBEAT, 1, 1, ShareGroupApi.heartbeat, guards.share_group_heartbeat, edits=True,
        takes=Takes.CLIENT_HOST),
    Api(K.SHARE_GROUP_DESCRIBE, 1, 1, ShareGroupApi.describe, guards.share_group_describe, edits=False),
    # Share sessions end with their connection.
    Api(K.SHARE_FETCH, 1, 2, ShareFetchService.share_fetch, guards.share_records, edits=True,
        takes=Takes.CONNECTION, on_listener=endpoints_on_listener),
    Api(K.SHARE_ACKNOWLEDGE, 1, 2, ShareFetchService.share_acknowledge, guards.share_records, edits=True,
        takes=Takes.CONNECTION, on_listener=endpoints_on_listener),
    Api(K.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, ShareGroupApi.describe_offsets, guards.describe_share_group_offsets,
        edits=False),
    Api(K.ALTER_SHARE_GROUP_OFFSETS, 0, 0, ShareGroupApi.alter_offsets, guards.alter_share_group_offsets,
        edits=True),
    Api(K.DELETE_SHARE_GROUP_OFFSETS, 0, 0, ShareGroupApi.delete_offsets, guards.delete_share_group_offsets,
        edits=True),
)

# The share coordinator's persister APIs: partition leaders on other nodes read and write
# share-partition state through them (share_state_api.py; only brokers send them).
APIS += (
    Api(K.INITIALIZE_SHARE_GROUP_STATE, 0, 0, ShareStateApi.initialize_share_group_state, guards.share_group_state,
        edits=True),
    Api(K.READ_SHARE_GROUP_STATE, 0, 0, ShareStateApi.read_share_group_state, guards.share_group_state, edits=False),
    Api(K.WRITE_SHARE_GROUP_STATE, 0, 1, ShareStateApi.write_share_group_state, guards.share_group_state,
        edits=True),
    Api(K.DELETE_SHARE_GROUP_STATE, 0, 0, ShareStateApi.delete_share_group_state, guards.share_group_state,
        edits=True),
    Api(K.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, ShareStateApi.read_share_group_state_summary,
        guards.share_group_state, edits=False),
)

PREPARED_GUARDS: dict = {}

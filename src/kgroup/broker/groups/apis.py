"""The group coordinator's APIs: classic groups, offsets, and the consumer protocol (KIP-848).

One entry each (broker/apis.py says what an entry holds). Version notes: OffsetCommit and
OffsetFetch v10 name topics by id (groups/topic_ids.py); JoinGroup 0–9 covers every version
real clients send; ConsumerGroupHeartbeat v1 adds regex subscriptions (KIP-848's
subscribed_topic_regex); DescribeGroups v6 answers a group that is missing or not classic
with GROUP_ID_NOT_FOUND and a message saying which (v0–v5: Dead, no error).
"""

from __future__ import annotations

from kgroup.broker.apis import Api, Takes
from kgroup.broker.groups import guards
from kgroup.broker.groups.group_api import ConsumerGroupApi, GroupApi
from kgroup.broker.security.listeners import coordinator_on_listener
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.OFFSET_COMMIT, 2, 10, GroupApi.offset_commit, guards.offset_commit, edits=True),
    Api(K.OFFSET_FETCH, 1, 10, GroupApi.offset_fetch, guards.offset_fetch, edits=False),
    Api(K.FIND_COORDINATOR, 0, 6, GroupApi.find_coordinator, guards.find_coordinator, edits=False,
        on_listener=coordinator_on_listener),
    # The members' hosts are recorded with them (DescribeGroups shows them).
    Api(K.JOIN_GROUP, 0, 9, GroupApi.join_group, guards.join_group, edits=True, takes=Takes.CLIENT_HOST),
    Api(K.HEARTBEAT, 0, 4, GroupApi.heartbeat, guards.heartbeat, edits=False),
    Api(K.LEAVE_GROUP, 0, 5, GroupApi.leave_group, guards.leave_group, edits=True),
    Api(K.SYNC_GROUP, 0, 5, GroupApi.sync_group, guards.sync_group, edits=True),
    Api(K.DESCRIBE_GROUPS, 0, 6, GroupApi.describe_groups, guards.describe_groups, edits=False),
    Api(K.LIST_GROUPS, 0, 5, GroupApi.list_groups, guards.list_groups, edits=False),
    Api(K.DELETE_GROUPS, 0, 3, GroupApi.delete_groups, guards.delete_groups, edits=True),
    Api(K.OFFSET_DELETE, 0, 0, GroupApi.offset_delete, guards.offset_delete, edits=True),
    Api(K.CONSUMER_GROUP_HEARTBEAT, 0, 1, ConsumerGroupApi.heartbeat, guards.consumer_group_heartbeat,
        edits=True, takes=Takes.CLIENT_HOST),
    Api(K.CONSUMER_GROUP_DESCRIBE, 0, 1, ConsumerGroupApi.describe, guards.consumer_group_describe, edits=False),
)

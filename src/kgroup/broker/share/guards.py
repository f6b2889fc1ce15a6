"""Guards of the share-group APIs, KIP-932 (share/apis.py lists which guards which API): the same rules
as consumer groups — READ on the group to be a member, fetch or acknowledge, DESCRIBE to
describe it or its offsets, DELETE to delete offsets — and READ or DESCRIBE on each topic.
Topics are named by id in ShareFetch and ShareAcknowledge.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.groups.guards import consumer_group_describe, consumer_group_heartbeat, describe_group_offsets
from kgroup.broker.security.authorization import (GROUP, TOPIC, Access, Admission, Refused, TopicList,
    admit_items, admit_topics, cluster_guard, plain_refusal)
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, hint, item

E = ErrorCode

share_group_heartbeat = consumer_group_heartbeat
share_group_describe = consumer_group_describe
describe_share_group_offsets = describe_group_offsets(
    TopicList(request_partitions="partitions", failed={"start_offset": -1, "leader_epoch": -1, "lag": -1}))



def _no_leader(part_cls: type) -> Any:
    """ShareFetch/ShareAcknowledge partitions carry a leader struct, never null on the wire."""
    return build(hint(part_cls, "current_leader"), leader_id=-1, leader_epoch=-1)


_SHARE_TOPICS = TopicList(response="responses", failed={"current_leader": _no_leader})


def share_records(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """ShareFetch and ShareAcknowledge: READ on the group, READ on each topic."""
    group = get(request, "group_id")
    if group is not None and not access.allowed(Op.READ, GROUP, group):
        return plain_refusal(header, E.GROUP_AUTHORIZATION_FAILED, responses=())
    return admit_topics(access, header, request, Op.READ, _SHARE_TOPICS)


def alter_share_group_offsets(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return plain_refusal(header, E.GROUP_AUTHORIZATION_FAILED, responses=())
    return admit_topics(access, header, request, Op.READ, _SHARE_TOPICS)


def delete_share_group_offsets(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.DELETE, GROUP, request.group_id):
        return plain_refusal(header, E.GROUP_AUTHORIZATION_FAILED, responses=())
    return admit_items(request, "topics", lambda t: access.allowed(Op.READ, TOPIC, t.topic_name),
                       lambda cls, t: build(item(cls, "responses"), topic_name=t.topic_name, topic_id=None,
                                            error_code=E.TOPIC_AUTHORIZATION_FAILED, error_message=None),
                       "responses")


def _state_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    """The share-group state APIs (brokers to the share coordinator): every partition refused."""
    cls = response_class(header.api_key, header.api_version)
    result_cls = item(cls, "results")
    part_cls = item(result_cls, "partitions")
    return build(cls, results=tuple(
        build(result_cls, topic_id=t.topic_id, partitions=tuple(
            build(part_cls, partition=p.partition, error_code=code, error_message=None) for p in t.partitions))
        for t in request.topics))


share_group_state = cluster_guard(Op.CLUSTER_ACTION, _state_refused)

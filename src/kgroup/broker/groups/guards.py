"""Guards of the group APIs (groups/apis.py lists which guards which API;
security/authorization.py says how a guard works): the classic protocol, offsets, FindCoordinator, DescribeGroups, ListGroups,
DeleteGroups, the consumer protocol, and what share groups reuse.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.security.authorization import (CLUSTER, GROUP, TOPIC, TRANSACTIONAL_ID, Access, Admission,
    Guard, Refused, TopicList, admit_items, admit_topics, all_partitions_refused, error_for, plain_refusal,
    topic_name_of, whole)
from kgroup.broker.security.authorized_operations import NOT_REQUESTED
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader
from kgroup.wire.kio_build import build, get, item
from kgroup.wire.kio_build import replace_fields as replaced

E = ErrorCode
GROUP_FAILED = E.GROUP_AUTHORIZATION_FAILED
TOPIC_FAILED = E.TOPIC_AUTHORIZATION_FAILED

COMMIT_TOPICS = TopicList()
OFFSET_FETCH_TOPICS = TopicList(request_partitions="partition_indexes",
                                failed={"committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""})


def _group_id(request: Any) -> str:
    return request.group_id


join_group = whole(Op.READ, GROUP, _group_id, generation_id=-1, member_id="", leader="")
sync_group = whole(Op.READ, GROUP, _group_id, assignment=b"")
heartbeat = whole(Op.READ, GROUP, _group_id)
leave_group = whole(Op.READ, GROUP, _group_id)


def offset_commit(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return all_partitions_refused(header, request, COMMIT_TOPICS, GROUP_FAILED)
    return admit_topics(access, header, request, Op.READ, COMMIT_TOPICS)


def offset_delete(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.DELETE, GROUP, request.group_id):
        return plain_refusal(header, GROUP_FAILED)
    return admit_topics(access, header, request, Op.READ, COMMIT_TOPICS)


def _group_offsets_topics(access: Access, group: Any, spec: TopicList) -> tuple[Any, Any]:
    """(one group's part of an offsets request with only describable topics, a finish for
    its part of the response)."""
    topics = get(group, "topics")
    if topics is None:
        # All of the group's offsets: only topics the principal may describe.
        def only_describable(part: Any) -> Any:
            return replaced(part, topics=tuple(t for t in part.topics
                                               if access.allowed(Op.DESCRIBE, TOPIC, topic_name_of(access, t))))

        return group, only_describable
    admission = admit_topics(access, None, group, Op.DESCRIBE, spec)  # type: ignore[arg-type]
    return admission.request, admission.finish


def describe_group_offsets(spec: TopicList) -> Guard:
    """OffsetFetch v8+ and DescribeShareGroupOffsets: several groups, each refused
    (GROUP_AUTHORIZATION_FAILED) or narrowed to the topics its principal may describe."""

    def guard(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
        finishes: dict[str, Any] = {}
        groups = []
        for g in request.groups:
            if access.allowed(Op.DESCRIBE, GROUP, g.group_id):
                narrowed, finishes[g.group_id] = _group_offsets_topics(access, g, spec)
                groups.append(narrowed)
        refused = [g for g in request.groups if g.group_id not in finishes]

        def finish(response: Any) -> Any:
            group_cls = item(type(response), "groups")
            out = [finishes[g.group_id](g) if finishes.get(g.group_id) else g for g in response.groups]
            out += [build(group_cls, group_id=g.group_id, topics=(), error_code=GROUP_FAILED) for g in refused]
            return replaced(response, groups=tuple(out))

        return Admission(replaced(request, groups=tuple(groups)), finish)

    return guard


_offset_fetch_groups = describe_group_offsets(OFFSET_FETCH_TOPICS)


def offset_fetch(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if header.api_version >= 8:
        return _offset_fetch_groups(access, header, request)
    if not access.allowed(Op.DESCRIBE, GROUP, request.group_id):
        if header.api_version < 2 or request.topics is not None:
            return all_partitions_refused(header, request, OFFSET_FETCH_TOPICS, GROUP_FAILED,
                                          error_code=GROUP_FAILED)
        return plain_refusal(header, GROUP_FAILED)
    narrowed, finish = _group_offsets_topics(access, request, OFFSET_FETCH_TOPICS)
    return Admission(narrowed, finish)


def find_coordinator(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    key_type = get(request, "key_type", 0)
    if key_type == 0:
        rtype, op = GROUP, Op.DESCRIBE
    elif key_type == 1:
        rtype, op = TRANSACTIONAL_ID, Op.DESCRIBE
    else:  # share-group coordinator keys: brokers only
        rtype, op = CLUSTER, Op.CLUSTER_ACTION

    def allowed(key: str) -> bool:
        return access.cluster(op) if rtype is CLUSTER else access.allowed(op, rtype, key)

    code = error_for(rtype)
    if header.api_version < 4:
        if allowed(request.key):
            return Admission(request)
        return plain_refusal(header, code, node_id=-1, host="", port=-1)
    return admit_items(request, "coordinator_keys", allowed,
                       lambda cls, key: build(item(cls, "coordinators"), key=key, node_id=-1, host="",
                                              port=-1, error_code=code, error_message=""),   # Kafka: ""
                       "coordinators")


def describe_groups(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    def with_operations(response: Any) -> Any:
        if not get(request, "include_authorized_operations", False):
            return response
        return replaced(response, groups=tuple(
            replaced(g, authorized_operations=access.operations(GROUP, g.group_id))
            if g.error_code == E.NONE else g for g in response.groups))

    return admit_items(request, "groups", lambda g: access.allowed(Op.DESCRIBE, GROUP, g),
                       lambda cls, g: build(item(cls, "groups"), error_code=GROUP_FAILED, group_id=g,
                                            group_state="", protocol_type="", protocol_data="", members=()),
                       "groups", with_operations)


def list_groups(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if access.cluster(Op.DESCRIBE):
        return Admission(request)

    def only_describable(response: Any) -> Any:
        return replaced(response, groups=tuple(
            g for g in response.groups if access.allowed(Op.DESCRIBE, GROUP, g.group_id)))

    return Admission(request, only_describable)


def delete_groups(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    return admit_items(request, "groups_names", lambda g: access.allowed(Op.DELETE, GROUP, g),
                       lambda cls, g: build(item(cls, "results"), group_id=g, error_code=GROUP_FAILED),
                       "results")


def consumer_group_heartbeat(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    refusal = dict(error_message=None, member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None)
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return plain_refusal(header, GROUP_FAILED, **refusal)
    # A member may only subscribe to topics it may describe (Kafka 4.0).
    for topic in request.subscribed_topic_names or ():
        if not access.allowed(Op.DESCRIBE, TOPIC, topic):
            return plain_refusal(header, TOPIC_FAILED, **refusal)
    return Admission(request)


def consumer_group_describe(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    def check_topics(response: Any) -> Any:
        # A group whose members use topics the principal may not describe is refused with
        # TOPIC_AUTHORIZATION_FAILED rather than shown in part (Kafka 4.0).
        out = []
        for g in response.groups:
            names = {n for m in g.members for n in m.subscribed_topic_names}
            names |= {tp.topic_name for m in g.members for a in (m.assignment, get(m, "target_assignment"))
                      if a is not None for tp in a.topic_partitions if tp.topic_name}
            if g.error_code == E.NONE and not all(access.allowed(Op.DESCRIBE, TOPIC, n) for n in names):
                g = replaced(g, error_code=TOPIC_FAILED, members=(), authorized_operations=NOT_REQUESTED)
            elif g.error_code == E.NONE and get(request, "include_authorized_operations", False):
                g = replaced(g, authorized_operations=access.operations(GROUP, g.group_id))
            out.append(g)
        return replaced(response, groups=tuple(out))

    return admit_items(request, "group_ids", lambda g: access.allowed(Op.DESCRIBE, GROUP, g),
                       lambda cls, g: build(item(cls, "groups"), error_code=GROUP_FAILED, group_id=g,
                                            members=(), group_state="", assignor_name=""),
                       "groups", check_topics)



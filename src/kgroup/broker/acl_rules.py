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

Refusals carry Kafka's codes: TOPIC_, GROUP_, CLUSTER_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
ApiVersions, SaslHandshake and SaslAuthenticate need nothing (``OPEN``). A new API adds its
row here; ``tests/unit/broker/test_acl_rules.py`` fails for an API served without one.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.authorization import (
    CLUSTER,
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    Access,
    Admission,
    Guard,
    Refused,
    TopicList,
    admit_items,
    admit_topics,
    all_partitions_refused,
    cluster_guard,
    error_for,
    per_topic,
    plain_refusal,
    topic_name_of,
    whole,
)
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire import versions as api
from kgroup.wire.kio_build import build, get, has, item
from kgroup.wire.kio_build import replace_fields as replaced

E = ErrorCode
GROUP_FAILED = E.GROUP_AUTHORIZATION_FAILED
TOPIC_FAILED = E.TOPIC_AUTHORIZATION_FAILED

# -- where each API keeps its topics -----------------------------------------------------------

PRODUCE_TOPICS = TopicList(request="topic_data", request_partitions="partition_data", request_index="index",
                           response="responses", response_partitions="partition_responses",
                           response_index="index", failed={"base_offset": -1, "log_start_offset": -1})
FETCH_TOPICS = TopicList(request_index="partition", response="responses",
                         failed={"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                                 "preferred_read_replica": -1, "records": b""})
LIST_OFFSETS_TOPICS = TopicList(failed={"timestamp": -1, "offset": -1, "leader_epoch": -1})
COMMIT_TOPICS = TopicList()
OFFSET_FETCH_TOPICS = TopicList(request_partitions="partition_indexes",
                                failed={"committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""})


# -- data path ---------------------------------------------------------------------------------

def produce(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    txn = get(request, "transactional_id")
    if txn is not None and not access.allowed(Op.WRITE, TRANSACTIONAL_ID, txn):
        return all_partitions_refused(header, request, PRODUCE_TOPICS, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return admit_topics(access, header, request, Op.WRITE, PRODUCE_TOPICS)


def fetch(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    replica = get(request, "replica_id")
    if replica is None and has(type(request), "replica_state"):
        replica = request.replica_state.replica_id
    if replica is not None and replica >= 0 and not access.cluster(Op.CLUSTER_ACTION):
        return all_partitions_refused(header, request, FETCH_TOPICS, TOPIC_FAILED, error_code=E.NONE)
    return admit_topics(access, header, request, Op.READ, FETCH_TOPICS)


def metadata(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    want_topic_ops = get(request, "include_topic_authorized_operations", False)
    want_cluster_ops = get(request, "include_cluster_authorized_operations", False)

    def authorized_ops(response: Any) -> Any:
        if want_topic_ops:
            response = replaced(response, topics=tuple(
                replaced(t, topic_authorized_operations=access.operations(TOPIC, t.name))
                if t.error_code == E.NONE and t.name else t for t in response.topics))
        if want_cluster_ops:
            response = replaced(response, cluster_authorized_operations=access.operations(CLUSTER, "kafka-cluster"))
        return response

    requested = get(request, "topics")
    if requested is None:
        # 1. All topics: list only those the principal may describe.
        def only_describable(response: Any) -> Any:
            return authorized_ops(replaced(response, topics=tuple(
                t for t in response.topics if t.name and access.allowed(Op.DESCRIBE, TOPIC, t.name))))

        return Admission(request, only_describable)

    # 2. Named topics: DESCRIBE, and CREATE (cluster or topic) for one that auto-creation
    #    would create; refused ones answer TOPIC_AUTHORIZATION_FAILED (never "unknown").
    creating = get(request, "allow_auto_topic_creation", True)
    may_create_any = creating and access.cluster(Op.CREATE)

    def keep(wanted: Any) -> bool:
        name = topic_name_of(access, wanted)
        if name is None:
            return True  # an unknown id, or no name: the handler answers
        if not access.allowed(Op.DESCRIBE, TOPIC, name):
            return False
        return (not creating or may_create_any or access.topic_exists(name)
                or access.allowed(Op.CREATE, TOPIC, name))

    def refused(cls: type, wanted: Any) -> Any:
        topic_cls = item(cls, "topics")
        return build(topic_cls, error_code=TOPIC_FAILED, name=topic_name_of(access, wanted),
                     topic_id=get(wanted, "topic_id"), is_internal=False, partitions=())

    return admit_items(request, "topics", keep, refused, "topics", authorized_ops)


def create_topics(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    anywhere = access.cluster(Op.CREATE)

    def keep(topic: Any) -> bool:
        return anywhere or access.allowed(Op.CREATE, TOPIC, topic.name)

    def refused(cls: type, topic: Any) -> Any:
        return build(item(cls, "topics"), name=topic.name, error_code=TOPIC_FAILED, error_message=None,
                     num_partitions=-1, replication_factor=-1, topic_config_error_code=TOPIC_FAILED)

    def hide_configs(response: Any) -> Any:
        # Configs of a created topic are shown only with DESCRIBE_CONFIGS on it.
        if not has(item(type(response), "topics"), "configs"):
            return response
        return replaced(response, topics=tuple(
            t if t.error_code != E.NONE or access.allowed(Op.DESCRIBE_CONFIGS, TOPIC, t.name)
            else replaced(t, configs=(), topic_config_error_code=TOPIC_FAILED) for t in response.topics))

    return admit_items(request, "topics", keep, refused, "topics", hide_configs)


def delete_topics(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if header.api_version < 6:
        return admit_items(request, "topic_names", lambda name: access.allowed(Op.DELETE, TOPIC, name),
                           lambda cls, name: build(item(cls, "responses"), name=name, error_code=TOPIC_FAILED),
                           "responses")

    def code(topic: Any) -> ErrorCode:
        name = topic_name_of(access, topic)
        if name is None:
            return E.NONE  # unknown id: the handler answers
        if topic.name is None and not access.allowed(Op.DESCRIBE, TOPIC, name):
            return E.UNKNOWN_TOPIC_ID  # by id, without DESCRIBE: do not reveal the topic
        return E.NONE if access.allowed(Op.DELETE, TOPIC, name) else TOPIC_FAILED

    return admit_items(request, "topics", lambda t: code(t) == E.NONE,
                       lambda cls, t: build(item(cls, "responses"), name=t.name, topic_id=t.topic_id,
                                            error_code=code(t)), "responses")


def create_partitions(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    return admit_items(request, "topics", lambda t: access.allowed(Op.ALTER, TOPIC, t.name),
                       lambda cls, t: build(item(cls, "results"), name=t.name, error_code=TOPIC_FAILED),
                       "results")


def init_producer_id(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    txn = get(request, "transactional_id")
    if txn is not None:
        if access.allowed(Op.WRITE, TRANSACTIONAL_ID, txn):
            return Admission(request)
        return plain_refusal(header, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1)
    if access.cluster(Op.IDEMPOTENT_WRITE) or access.allowed_on_some(Op.WRITE, TOPIC):
        return Admission(request)
    return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1)


# -- groups ------------------------------------------------------------------------------------

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


def _offset_fetch_topics(access: Access, group: Any) -> tuple[Any, Any]:
    """(the group's request with only describable topics, a finish for its response part)."""
    topics = get(group, "topics")
    if topics is None:
        # All of the group's offsets: only topics the principal may describe.
        def only_describable(part: Any) -> Any:
            return replaced(part, topics=tuple(t for t in part.topics if access.allowed(Op.DESCRIBE, TOPIC, t.name)))

        return group, only_describable
    admission = admit_topics(access, None, group, Op.DESCRIBE, OFFSET_FETCH_TOPICS)  # type: ignore[arg-type]
    return admission.request, admission.finish


def offset_fetch(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if header.api_version < 8:
        if not access.allowed(Op.DESCRIBE, GROUP, request.group_id):
            if header.api_version < 2 or request.topics is not None:
                return all_partitions_refused(header, request, OFFSET_FETCH_TOPICS, GROUP_FAILED,
                                              error_code=GROUP_FAILED)
            return plain_refusal(header, GROUP_FAILED)
        narrowed, finish = _offset_fetch_topics(access, request)
        return Admission(narrowed, finish)
    # v8+: several groups, each refused or narrowed on its own.
    finishes: dict[str, Any] = {}
    groups = []
    for g in request.groups:
        if access.allowed(Op.DESCRIBE, GROUP, g.group_id):
            narrowed, finishes[g.group_id] = _offset_fetch_topics(access, g)
            groups.append(narrowed)
    refused = [g for g in request.groups if g.group_id not in finishes]

    def finish(response: Any) -> Any:
        group_cls = item(type(response), "groups")
        out = [finishes[g.group_id](g) if finishes.get(g.group_id) else g for g in response.groups]
        out += [build(group_cls, group_id=g.group_id, topics=(), error_code=GROUP_FAILED) for g in refused]
        return replaced(response, groups=tuple(out))

    return Admission(replaced(request, groups=tuple(groups)), finish)


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
                                              port=-1, error_code=code, error_message=None),
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
    refusal = dict(error_message=None, member_id=None, member_epoch=-1, heartbeat_interval=0, assignment=None)
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
            names |= {tp.topic_name for m in g.members for a in (m.assignment, m.target_assignment)
                      if a is not None for tp in a.topic_partitions if tp.topic_name}
            if g.error_code == E.NONE and not all(access.allowed(Op.DESCRIBE, TOPIC, n) for n in names):
                g = replaced(g, error_code=TOPIC_FAILED, members=())
            elif g.error_code == E.NONE and get(request, "include_authorized_operations", False):
                g = replaced(g, authorized_operations=access.operations(GROUP, g.group_id))
            out.append(g)
        return replaced(response, groups=tuple(out))

    return admit_items(request, "group_ids", lambda g: access.allowed(Op.DESCRIBE, GROUP, g),
                       lambda cls, g: build(item(cls, "groups"), error_code=GROUP_FAILED, group_id=g,
                                            members=(), group_state="", assignor_name=""),
                       "groups", check_topics)


# -- security APIs -----------------------------------------------------------------------------

def _acl_creations_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    return build(cls, results=tuple(build(item(cls, "results"), error_code=code, error_message=None)
                                    for _ in request.creations))


def _acl_deletions_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    return build(cls, filter_results=tuple(
        build(item(cls, "filter_results"), error_code=code, error_message=None, matching_acls=())
        for _ in request.filters))


def _scram_describe_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    users = [u.name for u in request.users or ()]
    return build(cls, error_code=code, error_message=None, results=tuple(
        build(item(cls, "results"), user=u, error_code=code, error_message=None, credential_infos=())
        for u in users))


def _scram_alter_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    return build(cls, results=tuple(build(item(cls, "results"), user=u, error_code=code, error_message=None)
                                    for u in users))


# -- the table ---------------------------------------------------------------------------------

RULES: dict[int, Guard] = {
    api.PRODUCE: produce,
    api.FETCH: fetch,
    api.LIST_OFFSETS: per_topic(Op.DESCRIBE, LIST_OFFSETS_TOPICS),
    api.METADATA: metadata,
    api.OFFSET_COMMIT: offset_commit,
    api.OFFSET_FETCH: offset_fetch,
    api.FIND_COORDINATOR: find_coordinator,
    api.JOIN_GROUP: join_group,
    api.HEARTBEAT: heartbeat,
    api.LEAVE_GROUP: leave_group,
    api.SYNC_GROUP: sync_group,
    api.DESCRIBE_GROUPS: describe_groups,
    api.LIST_GROUPS: list_groups,
    api.CREATE_TOPICS: create_topics,
    api.DELETE_TOPICS: delete_topics,
    api.INIT_PRODUCER_ID: init_producer_id,
    api.DESCRIBE_ACLS: cluster_guard(Op.DESCRIBE),
    api.CREATE_ACLS: cluster_guard(Op.ALTER, _acl_creations_refused),
    api.DELETE_ACLS: cluster_guard(Op.ALTER, _acl_deletions_refused),
    api.CREATE_PARTITIONS: create_partitions,
    api.DELETE_GROUPS: delete_groups,
    api.OFFSET_DELETE: offset_delete,
    api.DESCRIBE_USER_SCRAM_CREDENTIALS: cluster_guard(Op.DESCRIBE, _scram_describe_refused),
    api.ALTER_USER_SCRAM_CREDENTIALS: cluster_guard(Op.ALTER, _scram_alter_refused),
    api.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    api.CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
}

# APIs every connection may use once authenticated, with no ACL.
OPEN: frozenset[int] = frozenset({api.API_VERSIONS, api.SASL_HANDSHAKE, api.SASL_AUTHENTICATE})

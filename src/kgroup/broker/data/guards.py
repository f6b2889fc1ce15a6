"""Guards of the data-path APIs (data/apis.py lists which guards which API;
security/authorization.py says how a guard works): Produce, Fetch, ListOffsets, Metadata,
CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster, OffsetForLeaderEpoch,
DescribeTopicPartitions.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.security.authorization import (CLUSTER, TOPIC, TRANSACTIONAL_ID, Access, Admission,
    Refused, TopicList, admit_items, admit_topics, all_partitions_refused, per_topic, topic_name_of)
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, has, item
from kgroup.wire.kio_build import replace_fields as replaced

E = ErrorCode
GROUP_FAILED = E.GROUP_AUTHORIZATION_FAILED
TOPIC_FAILED = E.TOPIC_AUTHORIZATION_FAILED

PRODUCE_TOPICS = TopicList(request="topic_data", request_partitions="partition_data", request_index="index",
                           response="responses", response_partitions="partition_responses",
                           response_index="index", failed={"base_offset": -1, "log_start_offset": -1})
FETCH_TOPICS = TopicList(request_index="partition", response="responses",
                         failed={"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                                 "preferred_read_replica": -1, "records": b""})
LIST_OFFSETS_TOPICS = TopicList(failed={"timestamp": -1, "offset": -1, "leader_epoch": -1})


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
    admission = admit_topics(access, header, request, Op.READ, FETCH_TOPICS)
    if get(request, "session_epoch", -1) in (0, -1) or (replica is not None and replica >= 0):
        return admission
    # An incremental fetch (KIP-227) also reads the partitions its session holds, which it
    # does not list: every topic answered is checked again, as Kafka authorizes each
    # partition of the session on every fetch (an ACL removed mid-session takes effect).
    then = admission.finish

    def session_checked(response: Any) -> Any:
        response = replaced(response, responses=tuple(
            t if _readable(access, t) else replaced(t, partitions=tuple(
                replaced(p, error_code=TOPIC_FAILED, aborted_transactions=(), **FETCH_TOPICS.failed)
                for p in t.partitions))
            for t in response.responses))
        return then(response) if then is not None else response

    return Admission(admission.request, session_checked)


def _readable(access: Access, topic: Any) -> bool:
    name = get(topic, "topic") or access.topic_name(get(topic, "topic_id"))
    return name is None or access.allowed(Op.READ, TOPIC, name)


def metadata(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    want_topic_ops = get(request, "include_topic_authorized_operations", False)
    want_cluster_ops = get(request, "include_cluster_authorized_operations", False)

    def authorized_ops(response: Any) -> Any:
        if want_topic_ops:
            response = replaced(response, topics=tuple(
                replaced(t, topic_authorized_operations=access.operations(TOPIC, t.name))
                if t.error_code != TOPIC_FAILED and t.name else t for t in response.topics))
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



list_offsets = per_topic(Op.DESCRIBE, LIST_OFFSETS_TOPICS)


def describe_cluster(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """Anyone may describe the cluster; its authorized operations are filled in if asked."""
    if not get(request, "include_cluster_authorized_operations", False):
        return Admission(request)
    return Admission(request, lambda r: replaced(
        r, cluster_authorized_operations=access.operations(CLUSTER, "kafka-cluster")))


_EPOCH_TOPICS = TopicList(request_index="partition", response_index="partition",
                          failed={"leader_epoch": -1, "end_offset": -1})


def offset_for_leader_epoch(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if get(request, "replica_id", -1) >= 0 and not access.cluster(Op.CLUSTER_ACTION):
        return all_partitions_refused(header, request, _EPOCH_TOPICS, E.CLUSTER_AUTHORIZATION_FAILED)
    return admit_topics(access, header, request, Op.DESCRIBE, _EPOCH_TOPICS)


def describe_topic_partitions(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """DESCRIBE on each topic: named ones refused with TOPIC_AUTHORIZATION_FAILED, others left
    out when asking for all (no names); each topic answered carries the principal's operations."""
    def own_operations(response: Any) -> Any:
        return replaced(response, topics=tuple(
            replaced(t, topic_authorized_operations=access.operations(TOPIC, t.name))
            if t.error_code != TOPIC_FAILED and t.name else t for t in response.topics))

    if not request.topics:
        return Admission(request, lambda r: own_operations(replaced(r, topics=tuple(
            t for t in r.topics if t.name and access.allowed(Op.DESCRIBE, TOPIC, t.name)))))
    def refused_entry(cls: type, t: Any) -> Any:
        return build(item(cls, "topics"), error_code=TOPIC_FAILED, name=t.name, topic_id=None, is_internal=False,
                     partitions=())

    if not any(access.allowed(Op.DESCRIBE, TOPIC, t.name) for t in request.topics):
        # Nothing left to ask (an empty list would ask for every topic).
        cls = response_class(header.api_key, header.api_version)
        return Refused(build(cls, throttle_time=0, next_cursor=None,
                             topics=tuple(refused_entry(cls, t) for t in request.topics)))
    return admit_items(request, "topics", lambda t: access.allowed(Op.DESCRIBE, TOPIC, t.name), refused_entry,
                       "topics", then=own_operations)

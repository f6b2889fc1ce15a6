"""Metadata (data/apis.py: the versions served): the brokers clients may use, and who leads each partition.

Version notes: v0 empty topics = all (Kafka 4.4 serves v0 again, for old clients); v1 null
topics = all, empty list = none; v2 cluster_id; v4
allow_auto_topic_creation (older versions always allow); v7 leader_epoch; v8–v10 authorized
operations (left at "not requested"); v10 topic ids (a topic may be asked for by id only
from v12; from v12 an id, when given, wins over the name); v13 top-level error_code.
Authorized operations (v8+) are filled in when asked for, on every topic answered (errors
included, as Kafka does): all of them without an authorizer (security/authorized_operations.py),
the principal's with one (data/guards.py).

Whole-request errors, as Kafka 4.4's KafkaApis throws them and MetadataRequest's error
response answers (every topic asked for, echoed with the error, no brokers, controller -1,
and the error at the top level in v13): a null name or a topic id before v12 is
INVALID_REQUEST; a topic with neither a name nor an id from v12 is UNKNOWN_SERVER_ERROR
(Kafka fails on the null name) unless another topic is asked for by id: Kafka then looks up
the ids only and ignores every name. Topics asked for twice are answered once.

Leaders: a single broker leads everything. In a cluster the leader of a partition is the
node that owns it (broker/cluster/ownership.py); while it moves (its owner is down, or handing it
over) the partition is answered with LEADER_NOT_AVAILABLE and leader -1, and clients ask
again. The brokers listed are the nodes not known to be down; the controller is the lowest
of them. Each partition lists as many replicas as its topic's replication factor, the live
ones in sync and the ones that are down offline (data/replicas.py: one shared data dir). The leader epoch is the partition's ownership epoch
less one (storage/leader_epochs.py): 0 on a single broker, one more after each takeover; a
consumer that sees it go up validates its position on the new leader (OffsetForLeaderEpoch,
data/leader_epochs_api.py), which finds nothing truncated (the shared data dir has no
replicas to diverge).

Auto-creation: an unknown, legal topic name is created with `default_partitions` when the
broker allows it and the request does. As Kafka 4.4 does, the request that creates it is
answered UNKNOWN_TOPIC_OR_PARTITION for that topic (Kafka's metadata has it only once the
controller's record reaches the broker) and the client asks again; the next request finds it
with its partitions and leaders (DataPath first waits briefly for the owners to take them).
Internal topics (`__kgroup_events`, internal_topics.py) are
flagged `is_internal` and never auto-created.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kgroup.acl_bindings import ResourceType
from kgroup.broker.security.authorized_operations import NOT_REQUESTED, if_asked
from kgroup.broker.data.context import DataContext, log
from kgroup.broker.internal_topics import is_internal
from kgroup.broker.data.replicas import replica_set
from kgroup.wire.kio_build import build, get, item
from kgroup.storage import StorageError, TopicExistsError, TopicMeta
from kgroup.storage.data_dir import check_topic_name
from kgroup.wire import RequestHeader, response_class
from kgroup.error_codes import ErrorCode

ZERO_UUID = uuid.UUID(int=0)


def legal_topic_name(name: str | None) -> bool:
    if not name:
        return False
    try:
        check_topic_name(name)
    except StorageError:
        return False
    return True


def _by_name(ctx: DataContext, name: str, allow_auto: bool, topic_ok: Callable[[TopicMeta], Any],
             topic_error: Callable[..., Any], created: list[str]) -> Any:
    """A topic asked for by name: known, refused, or auto-created (added to `created`)."""
    if not legal_topic_name(name):
        return topic_error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    known = ctx.data.topics().get(name)
    if known is not None:
        return topic_ok(known)
    if not allow_auto or is_internal(name):
        # Internal topics are the broker's to create (group_events may be off).
        return topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    try:
        meta = ctx.data.create_topic(name, ctx.config.default_partitions)
    except TopicExistsError:
        ctx.data.refresh_topics()  # created through another node just now
        return topic_ok(ctx.data.topic(name))
    except StorageError as exc:
        log.error("auto-creating topic %r failed: %s", name, exc)
        return topic_error(ErrorCode.KAFKA_STORAGE_ERROR, name)
    log.info("auto-created topic %r with %d partitions", name, meta.partitions)
    created.append(name)
    # Kafka answers the request that creates a topic with UNKNOWN_TOPIC_OR_PARTITION (it is
    # not in its metadata yet); the client asks again and finds it.
    return topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)


def metadata(ctx: DataContext, header: RequestHeader, request: Any) -> tuple[Any, list[str]]:
    """The Metadata response, and the topics it auto-created."""
    cls = response_class(header.api_key, header.api_version)
    broker_cls = item(cls, "brokers")
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    cluster = ctx.cluster
    nodes = sorted(ctx.config.nodes)
    live = cluster.brokers()
    topic_ops = if_asked(get(request, "include_topic_authorized_operations", False), ResourceType.TOPIC)

    def partition(meta: TopicMeta, p: int) -> Any:
        leader = cluster.leader(meta.slots[p]) if p < len(meta.slots) else None
        if leader is None:
            epoch = ctx.data.leader_epoch(meta.slots[p]) if p < len(meta.slots) else 0
            return build(part_cls, error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p,
                         leader_id=-1, leader_epoch=epoch, replica_nodes=(), isr_nodes=(), offline_replicas=())
        replicas, in_sync, offline = replica_set(p, nodes, live, leader, meta.replication_factor)
        return build(part_cls, error_code=ErrorCode.NONE, partition_index=p, leader_id=leader,
                     leader_epoch=ctx.data.leader_epoch(meta.slots[p]), replica_nodes=replicas, isr_nodes=in_sync, offline_replicas=offline)

    def topic_ok(meta: TopicMeta) -> Any:
        parts = tuple(partition(meta, p) for p in range(meta.partitions))
        return build(topic_cls, error_code=ErrorCode.NONE, name=meta.name,
                     topic_id=meta.topic_id, is_internal=is_internal(meta.name), partitions=parts,
                     topic_authorized_operations=topic_ops)

    def topic_error(code: ErrorCode, name: str | None, topic_id: uuid.UUID | None = None) -> Any:
        # An unknown topic id is answered apart from the topics Kafka looks up by name: its
        # authorized operations stay at "not requested".
        ops = NOT_REQUESTED if code == ErrorCode.UNKNOWN_TOPIC_ID else topic_ops
        return build(topic_cls, error_code=code, name=name, topic_id=topic_id or ZERO_UUID,
                     is_internal=is_internal(name), partitions=(), topic_authorized_operations=ops)

    # 1. Which topics: null = all, otherwise by name (or by id from v12). Another node of a
    #    cluster may have changed topics.json since this node last looked.
    requested = get(request, "topics", None)
    if header.api_version == 0 and not requested:
        requested = None            # v0 has no null: an empty list asks for every topic
    refused = _whole_request_error(header.api_version, requested)
    if requested is not None and refused is None:
        requested = _looked_up(requested)
    if refused is not None:
        return _error_response(cls, topic_cls, requested, refused), []
    ctx.data.refresh_topics()
    created: list[str] = []
    topics: list[Any] = []
    if requested is None:
        topics = [topic_ok(m) for _, m in sorted(ctx.data.topics().items())]
    else:
        allow_auto = ctx.config.auto_create_topics and get(request, "allow_auto_topic_creation", True)
        by_id = {m.topic_id: m for m in ctx.data.topics().values()}
        for wanted in requested:
            name = get(wanted, "name", None)
            topic_id = _topic_id(wanted)
            # 2. By id when one is given (v12+; kio reads the zero id as None).
            if topic_id is not None:
                meta = by_id.get(topic_id)
                topics.append(topic_ok(meta) if meta is not None
                              else topic_error(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id))
                continue
            # 3. By name, auto-creating a legal unknown name when allowed.
            topics.append(_by_name(ctx, name, allow_auto, topic_ok, topic_error, created))

    # 4. The brokers; the lowest id is the controller.
    brokers = tuple(build(broker_cls, node_id=n, host=h, port=p, rack=None)
                    for n, (h, p) in sorted(live.items()))
    response = build(cls, throttle_time=0, brokers=brokers, cluster_id=ctx.config.cluster_id,
                     controller_id=min(live), topics=tuple(topics), error_code=ErrorCode.NONE,
                     cluster_authorized_operations=if_asked(
                         get(request, "include_cluster_authorized_operations", False), ResourceType.CLUSTER))
    return response, created


def _looked_up(requested: Any) -> list[Any]:
    """The topics Kafka looks up: by id when any is given (the names are then ignored), else
    by name; each once (it makes a set of them)."""
    by_id_only = [t for t in requested if _topic_id(t) is not None]
    seen: set[Any] = set()
    out = []
    for t in by_id_only or list(requested):
        key = _topic_id(t) if by_id_only else get(t, "name", None)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _whole_request_error(version: int, requested: Any) -> ErrorCode | None:
    """The error Kafka answers the whole request with, if any (see the module docstring)."""
    if requested is None or version < 10:
        return None
    ids_given = any(_topic_id(t) is not None for t in requested)
    for wanted in requested:
        name, topic_id = get(wanted, "name", None), _topic_id(wanted)
        if version < 12 and (name is None or topic_id is not None):
            return ErrorCode.INVALID_REQUEST
        if name is None and topic_id is None and not ids_given:
            return ErrorCode.UNKNOWN_SERVER_ERROR      # (with an id anywhere, names are not read)
    return None


def _topic_id(wanted: Any) -> uuid.UUID | None:
    """The topic id asked for; None for none (kio reads the zero id as None, a request built
    in-process may carry the zero UUID itself)."""
    topic_id = get(wanted, "topic_id", None)
    return None if topic_id is None or topic_id == ZERO_UUID else topic_id


def _error_response(cls: Any, topic_cls: Any, requested: Any, code: ErrorCode) -> Any:
    """MetadataRequest.getErrorResponse's answer: each topic asked for, with ``code``."""
    topics = tuple(build(topic_cls, error_code=code, name=get(t, "name", None) or "",
                         topic_id=_topic_id(t) or ZERO_UUID, is_internal=False, partitions=())
                   for t in requested)
    return build(cls, throttle_time=0, brokers=(), cluster_id=None, controller_id=-1, topics=topics,
                 error_code=code)


_BROKERS_ENDPOINT = 1
_CONTROLLERS_ENDPOINT = 2


def describe_cluster(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """DescribeCluster: the live brokers (this broker alone, or the live
    nodes of a cluster, as Metadata lists them); the lowest id is the controller.

    v1 endpoint_type: brokers (1) only; a broker asked for controllers (2) answers
    MISMATCHED_ENDPOINT_TYPE as Kafka's brokers do. v2 include_fenced_brokers: never fenced.
    """
    cls = response_class(header.api_key, header.api_version)
    broker_cls = item(cls, "brokers")
    nodes = ctx.cluster.brokers()
    endpoint = int(get(request, "endpoint_type", _BROKERS_ENDPOINT))
    if endpoint != _BROKERS_ENDPOINT:
        # A type Kafka does not know (only BROKER 1 and CONTROLLER 2 exist) is unsupported.
        known = endpoint == _CONTROLLERS_ENDPOINT
        return build(cls, throttle_time=0,
                     error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE if known else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                     error_message="The request was sent to an endpoint of type BROKER, but we wanted "
                     "an endpoint of type CONTROLLER" if known else f"Unsupported endpoint type {endpoint}",
                     endpoint_type=_BROKERS_ENDPOINT,
                     cluster_id=ctx.config.cluster_id, controller_id=-1, brokers=(),
                     cluster_authorized_operations=NOT_REQUESTED)
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                 endpoint_type=_BROKERS_ENDPOINT, cluster_id=ctx.config.cluster_id, controller_id=min(nodes),
                 brokers=tuple(build(broker_cls, broker_id=n, host=h, port=p, rack=None, is_fenced=False)
                               for n, (h, p) in sorted(nodes.items())),
                 cluster_authorized_operations=if_asked(
                     get(request, "include_cluster_authorized_operations", False), ResourceType.CLUSTER))

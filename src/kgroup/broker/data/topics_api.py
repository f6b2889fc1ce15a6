"""CreateTopics, DeleteTopics, CreatePartitions (data/apis.py: the versions served).

Each handler returns `(response, changed)`; `changed` tells DataPath to call its
`on_topics_changed` hook (a partition-count change triggers a rebalance).

CreateTopics, per topic in order: a name given twice in one request → INVALID_REQUEST;
illegal name → INVALID_TOPIC_EXCEPTION; existing → TOPIC_ALREADY_EXISTS; a replication factor
below 1 (other than -1) or above the number of nodes → INVALID_REPLICATION_FACTOR
(replicas.py says what it means with one shared data dir); a manual assignment must give
partitions 0..n-1 each a list of known nodes, none twice, all as long (then
num_partitions/replication must be -1) → INVALID_REPLICA_ASSIGNMENT; num_partitions -1 →
default_partitions, else <= 0 →
INVALID_PARTITIONS; configs must be Kafka topic configs with values of their type
(topic_configs.py: an unknown name or a bad value → INVALID_CONFIG naming the valid ones);
they are stored as given and the ones kgroup acts on are applied. validate_only checks
everything and creates nothing. v5+ answers num_partitions, replication_factor and every
topic config (given ones as DYNAMIC_TOPIC_CONFIG, the others as DEFAULT_CONFIG); v7 the
topic id. An internal topic's name (internal_topics.py) → INVALID_REQUEST: only the broker
creates those.

DeleteTopics: v1–v5 by name, v6 by name or id; unknown → UNKNOWN_TOPIC_OR_PARTITION /
UNKNOWN_TOPIC_ID; an internal topic → INVALID_TOPIC_EXCEPTION (the broker writes it; Kafka
itself would let a client delete `__consumer_offsets`, which only ever does harm). Long-polling
fetches of the deleted partitions are woken.

CreatePartitions: grow only (count <= current → INVALID_PARTITIONS), unknown topic →
UNKNOWN_TOPIC_OR_PARTITION, an internal topic → INVALID_TOPIC_EXCEPTION, duplicates →
INVALID_REQUEST, assignments None or one list per new partition of known nodes as long as the
topic's replication factor → else INVALID_REPLICA_ASSIGNMENT; validate_only.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from kgroup.broker.data import topic_configs
from kgroup.broker.data.context import DataContext, log
from kgroup.broker.internal_topics import internal_topic_problem, is_internal
from kgroup.wire.kio_build import build, get, has, item, ms
from kgroup.broker.data.metadata_api import ZERO_UUID, legal_topic_name
from kgroup.broker.data.replicas import (
    DEFAULT_REPLICATION_FACTOR,
    assignment_problem,
    inconsistent_factors,
    replication_problem,
)
from kgroup.storage import StorageError
from kgroup.storage.errors import StorageConfigError, TopicError, TopicExistsError
from kgroup.wire import RequestHeader, response_class
from kgroup.error_codes import ErrorCode

CONFIG_SOURCE_DYNAMIC_TOPIC = 1
CONFIG_SOURCE_DEFAULT = 5


class TopicFailure(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_create(ctx: DataContext, topic: Any) -> tuple[int, dict[str, str], int]:
    """(partition count, configs, replication factor) for a valid CreatableTopic; raises
    TopicFailure."""
    name = topic.name
    nodes = ctx.config.nodes
    if not legal_topic_name(name):
        raise TopicFailure(ErrorCode.INVALID_TOPIC_EXCEPTION, f"illegal topic name {name!r}: "
                           "use 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'")
    if name in ctx.data.topics():
        raise TopicFailure(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if is_internal(name):
        raise TopicFailure(ErrorCode.INVALID_REQUEST, internal_topic_problem(name, "created"))
    num = int(topic.num_partitions)
    replication = int(topic.replication_factor)
    assignments = tuple(topic.assignments or ())
    if assignments:
        if num != -1 or replication != -1:
            raise TopicFailure(ErrorCode.INVALID_REQUEST, "both num_partitions/replication_factor "
                               "and manual partition assignment were given; use one or the other")
        indexes = sorted(int(a.partition_index) for a in assignments)
        if indexes != list(range(len(assignments))):
            raise TopicFailure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"partitions in the assignment must be 0..{len(assignments) - 1}, got {indexes}")
        lists = [[int(b) for b in a.broker_ids] for a in sorted(assignments, key=lambda a: int(a.partition_index))]
        problem = (next(filter(None, (assignment_problem(ids, nodes) for ids in lists)), None)
                   or inconsistent_factors(len(lists[0]), lists, 0))
        if problem:
            raise TopicFailure(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
        num, replication = len(assignments), len(lists[0])
    else:
        problem = replication_problem(replication, len(nodes))
        if problem:
            raise TopicFailure(ErrorCode.INVALID_REPLICATION_FACTOR, problem)
        if replication == -1:
            replication = DEFAULT_REPLICATION_FACTOR
    if num == -1:
        num = ctx.config.default_partitions
    if num <= 0:
        raise TopicFailure(ErrorCode.INVALID_PARTITIONS, f"Number of partitions must be larger than 0, got {num}.")
    try:
        configs = topic_configs.checked({c.name: c.value for c in (topic.configs or ())})
        ctx.data.default_log_config.with_topic_configs(configs)
    except (StorageConfigError, ValueError) as exc:
        raise TopicFailure(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return num, configs, replication


def _past_deadline(request: Any) -> bool:
    """Kafka's controller runs a topic change by the request's deadline, now + timeout: a
    timeout of 0 or less has passed before it runs, and the request (once anything of it
    reaches the controller) is answered REQUEST_TIMED_OUT for every topic it names."""
    return ms(get(request, "timeout", 0)) <= 0


def create_topics(ctx: DataContext, header: RequestHeader, request: Any) -> tuple[Any, bool]:
    """The CreateTopics response, and whether any topic was created."""
    ctx.data.refresh_topics()  # another node of a cluster may have changed them
    cls = response_class(header.api_key, header.api_version)
    result_cls = item(cls, "topics")
    config_cls = item(result_cls, "configs") if has(result_cls, "configs") else None
    validate_only = bool(get(request, "validate_only", False))
    counts = Counter(t.name for t in request.topics)
    changed = False
    if _past_deadline(request) and any(c == 1 for c in counts.values()):
        return build(cls, throttle_time=0, topics=tuple(
            build(result_cls, name=t.name, topic_id=ZERO_UUID, error_code=ErrorCode.REQUEST_TIMED_OUT,
                  error_message=None, num_partitions=-1, replication_factor=-1, configs=())
            for t in request.topics)), False
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            continue
        try:
            # 1. Check everything before touching storage.
            num, configs, replication = _check_create(ctx, topic)
            # 2. Create (unless only validating).
            topic_id = ZERO_UUID
            if not validate_only:
                try:
                    meta = ctx.data.create_topic(topic.name, num, configs, replication_factor=replication)
                except TopicExistsError:
                    raise TopicFailure(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.") from None
                except StorageConfigError as exc:
                    raise TopicFailure(ErrorCode.INVALID_CONFIG, str(exc)) from None
                except StorageError as exc:
                    log.error("creating topic %r failed: %s", topic.name, exc)
                    raise TopicFailure(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None
                topic_id = meta.topic_id
                changed = True
                log.info("created topic %r with %d partitions (replication factor %d)", topic.name, num,
                         replication)
            # 3. Describe it (v5+).
            shown = () if config_cls is None else tuple(
                build(config_cls, name=d.name, value=d.value, read_only=False, is_sensitive=False,
                      config_source=CONFIG_SOURCE_DYNAMIC_TOPIC if d.from_topic else CONFIG_SOURCE_DEFAULT)
                for d in topic_configs.describe(ctx.config, configs))
            results.append(build(result_cls, name=topic.name, topic_id=topic_id,
                                 error_code=ErrorCode.NONE, error_message=None,
                                 num_partitions=num, replication_factor=replication, configs=shown))
        except TopicFailure as exc:
            results.append(build(result_cls, name=topic.name, topic_id=ZERO_UUID,
                                 error_code=exc.code, error_message=exc.message,
                                 num_partitions=-1, replication_factor=-1, configs=()))   # Kafka: empty, not null
    # A name given twice is refused once, after the others, as Kafka's controller does.
    results += [build(result_cls, name=name, topic_id=ZERO_UUID, error_code=ErrorCode.INVALID_REQUEST,
                      error_message="Duplicate topic name.", num_partitions=-1, replication_factor=-1, configs=())
                for name, count in counts.items() if count > 1]
    return build(cls, throttle_time=0, topics=tuple(results)), changed


def delete_topics(ctx: DataContext, header: RequestHeader, request: Any) -> tuple[Any, bool]:
    """The DeleteTopics response, and whether any topic was deleted."""
    ctx.data.refresh_topics()  # another node of a cluster may have changed them
    cls = response_class(header.api_key, header.api_version)
    result_cls = item(cls, "responses")
    # 1. v1–v5 name topics in topic_names; v6 in topics (by name or id).
    wanted: list[tuple[str | None, uuid.UUID | None]] = []
    if get(request, "topics", None) is not None:
        # (kio reads the zero id as None; a request built in-process may carry it.)
        wanted = [(get(t, "name", None), None if get(t, "topic_id", None) == ZERO_UUID else get(t, "topic_id", None))
                  for t in request.topics]
    else:
        wanted = [(name, None) for name in get(request, "topic_names", ())]
    # 2. What Kafka's controller refuses before looking anything up, in its order: an entry
    #    with neither a name nor an id (or both), then each name and each id given twice.
    results = []
    zero = ZERO_UUID

    def refused(name: str | None, topic_id: uuid.UUID | None, message: str) -> None:
        results.append(build(result_cls, name=name, topic_id=topic_id or zero, error_code=ErrorCode.INVALID_REQUEST,
                             error_message=message))

    names = Counter(n for n, i in wanted if n is not None and i is None)
    ids = Counter(i for n, i in wanted if n is None and i is not None)
    for name, topic_id in wanted:
        if name is None and topic_id is None:
            refused(None, None, "Neither topic name nor id were specified.")
        elif name is not None and topic_id is not None:
            refused(name, topic_id, "You may not specify both topic name and topic id.")
    for name in (n for n, c in names.items() if c > 1):
        refused(name, None, "Duplicate topic name.")
    for topic_id in (i for i, c in ids.items() if c > 1):
        refused(None, topic_id, "Duplicate topic id.")
    wanted = [(n, None) for n, c in names.items() if c == 1] + [(None, i) for i, c in ids.items() if c == 1]
    changed = False
    if wanted and _past_deadline(request):
        if get(request, "topics", None) is not None:
            timed_out = [(get(t, "name", None), get(t, "topic_id", None)) for t in request.topics]
        else:
            timed_out = [(n, None) for n in get(request, "topic_names", ())]
        return build(cls, throttle_time=0, responses=tuple(
            build(result_cls, name=n, topic_id=i or ZERO_UUID, error_code=ErrorCode.REQUEST_TIMED_OUT,
                  error_message=None) for n, i in timed_out)), False
    # 3. The rest, each looked up and deleted (Kafka answers them in the order of its hash
    #    sets; the differential suite compares them by name).
    for name, topic_id in wanted:
        by_id = name is None
        topics = ctx.data.topics()
        if by_id:
            name = next((n for n, m in topics.items() if m.topic_id == topic_id), None)
        meta = topics.get(name) if name is not None else None
        code, message = ErrorCode.NONE, None
        if meta is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            message = (f"unknown topic id {topic_id}" if by_id
                       else f"This server does not host this topic: {name!r}")
        elif is_internal(meta.name):
            code, message = ErrorCode.INVALID_TOPIC_EXCEPTION, internal_topic_problem(meta.name, "deleted")
        else:
            try:
                ctx.data.delete_topic(meta.name)
                changed = True
                log.info("deleted topic %r", meta.name)
            except StorageError as exc:
                log.error("deleting topic %r failed: %s", meta.name, exc)
                code, message = ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
            # 2. Waiting fetches of its partitions answer now (with UNKNOWN_TOPIC...).
            for p in range(meta.partitions):
                ctx.watch.ring((meta.name, p))
        results.append(build(result_cls, name=name,
                             topic_id=meta.topic_id if meta is not None else (topic_id or ZERO_UUID),
                             error_code=code, error_message=message))
    return build(cls, throttle_time=0, responses=tuple(results)), changed


def create_partitions(ctx: DataContext, header: RequestHeader, request: Any) -> tuple[Any, bool]:
    """The CreatePartitions response, and whether any topic grew."""
    ctx.data.refresh_topics()  # another node of a cluster may have changed them
    cls = response_class(header.api_key, header.api_version)
    result_cls = item(cls, "results")
    nodes = ctx.config.nodes
    validate_only = bool(get(request, "validate_only", False))
    counts = Counter(t.name for t in request.topics)
    changed = False
    if _past_deadline(request) and any(c == 1 for c in counts.values()):
        return build(cls, throttle_time=0, results=tuple(
            build(result_cls, name=t.name, error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=None)
            for t in request.topics)), False
    # A name given twice is refused once, first, as Kafka's controller does.
    results = [build(result_cls, name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name.")
               for name, count in counts.items() if count > 1]
    for topic in request.topics:
        code, message = ErrorCode.NONE, None
        if counts[topic.name] > 1:
            continue
        try:
            # 1. Checks.
            meta = ctx.data.topics().get(topic.name)
            if meta is None:
                raise TopicFailure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)   # Kafka: no message
            if is_internal(meta.name):
                raise TopicFailure(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                   internal_topic_problem(meta.name, "given partitions"))
            count = int(topic.count)
            if count < meta.partitions:
                raise TopicFailure(ErrorCode.INVALID_PARTITIONS,
                                   f"The topic {meta.name} currently has {meta.partitions} partition(s); "
                                   f"{count} would not be an increase.")
            if count == meta.partitions:
                raise TopicFailure(ErrorCode.INVALID_PARTITIONS,
                                   f"Topic already has {meta.partitions} partition(s).")
            if topic.assignments is not None:
                new = count - meta.partitions
                if len(topic.assignments) != new:
                    raise TopicFailure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                       f"Increasing the number of partitions by {new} but "
                                       f"{len(topic.assignments)} assignments provided.")
                lists = [[int(b) for b in a.broker_ids] for a in topic.assignments]
                problem = (next(filter(None, (assignment_problem(ids, nodes) for ids in lists)), None)
                           or inconsistent_factors(meta.replication_factor, lists, meta.partitions))
                if problem:
                    raise TopicFailure(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
            # 2. Grow.
            if not validate_only:
                try:
                    ctx.data.create_partitions(topic.name, count)
                except TopicError as exc:
                    raise TopicFailure(ErrorCode.INVALID_PARTITIONS, str(exc)) from None
                except StorageError as exc:
                    log.error("growing topic %r failed: %s", topic.name, exc)
                    raise TopicFailure(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None
                changed = True
                log.info("topic %r now has %d partitions", topic.name, count)
        except TopicFailure as exc:
            code, message = exc.code, exc.message
        results.append(build(result_cls, name=topic.name, error_code=code, error_message=message))
    return build(cls, throttle_time=0, results=tuple(results)), changed

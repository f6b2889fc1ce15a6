"""An error answer to any request, for any API and version kio knows.

How this works: Kafka's brokers answer a request they refuse as a whole with the error in
every error field of the response — the top-level one and every per-topic, per-partition,
per-group or per-member entry the request named (`AbstractRequest.getErrorResponse`).
`error_response` does the same from the schemas alone, so it serves every API in the
version table, including ones added later: it walks the response class, and for each array
of entities finds the request's array it answers (same name, or one of `_MIRRORS`), builds
one entry per request entry, copies the identifying fields (topic name or id, partition,
group, member) and sets every error code field (`error_code`, `partition_error_code`, ...) to
the error. Numbers that mean "unknown" in an
error answer (offsets, epochs, node ids) are -1, as Kafka sends them.

Used by the control API's faults ("answer the next Heartbeat with REBALANCE_IN_PROGRESS").
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode

from .codec import response_class
from .kio_build import build

# Response array -> request arrays it may answer, besides one of the same name.
_MIRRORS: dict[str, tuple[str, ...]] = {
    "responses": ("topic_data", "topics", "topic_names", "resources"),  # Produce, Fetch, DeleteTopics,
                                                             # (Incremental)AlterConfigs
    "partition_responses": ("partition_data",),              # Produce
    "partitions": ("partition_indexes",),                    # OffsetFetch
    "coordinators": ("coordinator_keys",),                   # FindCoordinator v4+
    "results": ("topics", "groups_names", "resources", "creations"),  # CreatePartitions, DeleteGroups,
                                                             # DescribeConfigs, CreateAcls
    "groups": ("group_ids",),                                # ConsumerGroupDescribe
    "results_by_topic_v3_and_below": ("v3_and_below_topics",),  # AddPartitionsToTxn v0-3
    "results_by_transaction": ("transactions",),             # AddPartitionsToTxn v4+
    "topic_results": ("topics",),
    "results_by_partition": ("partitions",),
    "transaction_states": ("transactional_ids",),            # DescribeTransactions
    "filter_results": ("filters",),                          # DeleteAcls
    "replica_election_results": ("topic_partitions",),       # ElectLeaders
    "partition_result": ("partitions",),
}
# Response arrays that answer the entries of a request array's entries (each dir's topics).
_NESTED: dict[str, tuple[str, str]] = {
    "results": ("dirs", "topics"),                           # AlterReplicaLogDirs
}
# Response arrays that answer several request arrays at once, in this order.
_JOINED: dict[str, tuple[str, ...]] = {
    "results": ("deletions", "upsertions"),                  # AlterUserScramCredentials
}
# Identifying fields copied from a request entry, with the request's other names for them.
_IDENTITY: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "topic_id": ("topic_id",),
    "topic_name": ("topic_name", "name", "topic"),
    "partition_index": ("partition_index", "partition"),
    "partition": ("partition", "partition_index"),
    "index": ("index",),
    "group_id": ("group_id",),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
    "instance_id": ("instance_id",),
    "key": ("key",),
    "transactional_id": ("transactional_id",),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
    "user": ("name",),
}
# Where a request entry is a bare string or number (DescribeGroups' group ids, OffsetFetch's
# partition indexes), the response entry's field that holds it.
_BARE_TARGETS = ("group_id", "key", "name", "partition_index", "partition_id", "transactional_id")
_UNKNOWN_NUMBERS = frozenset({
    "high_watermark", "last_stable_offset", "log_start_offset", "base_offset", "committed_offset",
    "offset", "timestamp", "leader_id", "leader_epoch", "committed_leader_epoch",
    "preferred_read_replica", "generation_id", "member_epoch", "producer_id", "producer_epoch",
    "node_id", "port",
})


def error_response(api_key: int, version: int, request: Any, code: int, message: str | None = None) -> Any:
    """The response of `api_key`/`version` that refuses `request` with error `code`
    everywhere, naming what the request named; `message` goes in error_message fields."""
    return _answer(response_class(api_key, version), request, KioErrorCode(int(code)), message)


@cache
def _shape(cls: type) -> tuple[tuple[str, Any, type | None, bool], ...]:
    """(field, type hint, entity class of an array field or None, int-typed) per field."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        out.append((f.name, hint, _entity_of_array(hint), _is_int(hint)))
    return tuple(out)


def _entity_of_array(hint: Any) -> type | None:
    for candidate in (hint, *typing.get_args(hint)):
        if typing.get_origin(candidate) is tuple:
            inner = typing.get_args(candidate)[0]
            if dataclasses.is_dataclass(inner):
                return inner
    return None


def _is_int(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, int) and not issubclass(hint, bool) and hint is not KioErrorCode


def _answer(cls: type, source: Any, code: KioErrorCode, message: str | None) -> Any:
    values: dict[str, Any] = {}
    has_error = any(hint is KioErrorCode for _, hint, _, _ in _shape(cls))
    for name, hint, entity, is_int in _shape(cls):
        if hint is KioErrorCode:               # error_code, partition_error_code, ...
            values[name] = code
        elif name.endswith("error_message") and has_error:
            values[name] = message
        elif entity is not None:
            values[name] = tuple(_entry(entity, item, code, message) for item in _mirrored(name, source))
        elif dataclasses.is_dataclass(hint):
            # A struct that may not be null (ShareFetch's current_leader): unknown inside.
            values[name] = _answer(hint, None, code, message)
        elif name in _IDENTITY and not isinstance(source, (str, int)):
            for alias in _IDENTITY[name]:
                if hasattr(source, alias):
                    values[name] = getattr(source, alias)
                    break
        if name not in values and is_int and name in _UNKNOWN_NUMBERS:
            values[name] = -1
    return build(cls, **values)


def _entry(cls: type, item: Any, code: KioErrorCode, message: str | None) -> Any:
    if isinstance(item, (str, int)):
        fields = {name for name, *_ in _shape(cls)}
        target = next((f for f in _BARE_TARGETS if f in fields), None)
        entry = _answer(cls, None, code, message)
        return dataclasses.replace(entry, **{target: item}) if target is not None else entry
    return _answer(cls, item, code, message)


def _mirrored(name: str, source: Any) -> tuple:
    """The request entries that the response array `name` answers, one entry each."""
    if source is None or isinstance(source, (str, int)):
        return ()
    joined = _JOINED.get(name, ())
    if joined and all(isinstance(getattr(source, j, None), tuple) for j in joined):
        return tuple(item for j in joined for item in getattr(source, j))
    for candidate in (name, *_MIRRORS.get(name, ())):
        items = getattr(source, candidate, None)
        if isinstance(items, tuple):
            return items
    outer, inner = _NESTED.get(name, ("", ""))
    if isinstance(getattr(source, outer, None), tuple):
        return tuple(item for entry in getattr(source, outer) for item in getattr(entry, inner, ()))
    return ()

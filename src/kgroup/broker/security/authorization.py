"""Authorization at the edge: one guard per API, applied in one place (broker/requests.py).

How this works. Before a request reaches its handler the request path takes the guard its
API's table entry names (each concern's apis.py; Kafka's rules, API by API, are in
docs/protocol.md) and calls it with the connection's ``Access`` (principal, host and the
authorizer's decisions), the header and the decoded request. A guard answers either

- ``Refused(response)``: the whole request is refused and this is the answer (e.g. JoinGroup
  without READ on the group gets GROUP_AUTHORIZATION_FAILED; the handler never runs), or
- ``Admission(request, finish)``: the handler serves ``request`` — the original, or a copy
  without the items the principal may not touch (topics it may not read, groups it may not
  describe) — and ``finish`` (if any) puts those items back into the handler's response
  with the error Kafka gives them, or filters what the principal may not see (Metadata for
  all topics, ListGroups), or fills in authorized operations.

So handlers never see what they must not act on, and nothing here changes stored state.
When the authorizer is off the server never calls a guard (decided once per connection).
``TopicList`` describes where an API keeps its topics in request and response, so the common
"per topic" rule is one helper (``per_topic``) for Produce, Fetch, ListOffsets, OffsetCommit,
OffsetDelete, DeleteRecords and DescribeProducers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kgroup.acl_bindings import CLUSTER_NAME, AclOperation, ResourceType
from kgroup.core.acls import AUTHORIZATION_ERROR, Authorizer
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, has, item
from kgroup.wire.kio_build import replace_fields as replaced

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


class Access:
    """What one principal, connected from one host, may do; made for each request."""

    __slots__ = ("authorizer", "principal", "host", "_topics", "_by_id")

    def __init__(self, authorizer: Authorizer, principal: str, host: str,
                 topics: Callable[[], Mapping[str, Any]]) -> None:
        self.authorizer = authorizer
        self.principal = principal
        self.host = host
        self._topics = topics  # name -> metadata with a topic_id (DataDir.topics)
        self._by_id: dict[uuid.UUID, str] | None = None

    def allowed(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(self.principal, self.host, op, rtype, name)

    def cluster(self, op: AclOperation) -> bool:
        return self.authorizer.authorize(self.principal, self.host, op, CLUSTER, CLUSTER_NAME)

    def allowed_on_some(self, op: AclOperation, rtype: ResourceType) -> bool:
        """Whether ``op`` is allowed on at least one resource of ``rtype``."""
        return self.authorizer.authorize_by_type(self.principal, self.host, op, rtype)

    def operations(self, rtype: ResourceType, name: str) -> int:
        """Kafka's authorized-operations bit field for one resource."""
        return self.authorizer.authorized_operations(self.principal, self.host, rtype, name)

    def topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        """The name of the topic with this id (None if there is none)."""
        if topic_id is None:
            return None
        if self._by_id is None:
            self._by_id = {meta.topic_id: name for name, meta in self._topics().items()}
        return self._by_id.get(topic_id)

    def topic_exists(self, name: str) -> bool:
        return name in self._topics()


@dataclass(frozen=True, slots=True)
class Refused:
    """The whole request is refused: ``response`` is the answer."""

    response: Any


@dataclass(frozen=True, slots=True)
class Admission:
    """Serve ``request``; ``finish`` (if any) turns the handler's response into the answer."""

    request: Any
    finish: Callable[[Any], Any] | None = None


Guard = Callable[[Access, RequestHeader, Any], "Refused | Admission"]


def error_for(rtype: ResourceType) -> ErrorCode:
    return AUTHORIZATION_ERROR[rtype]


def plain_refusal(header: RequestHeader, code: ErrorCode, **fields: Any) -> Refused:
    """The response of the request's version with a top-level ``error_code`` (and any other
    fields given); for APIs whose responses are flat."""
    cls = response_class(header.api_key, header.api_version)
    return Refused(build(cls, error_code=code, **fields))


def whole(op: AclOperation, rtype: ResourceType, name_of: Callable[[Any], str], **fields: Any) -> Guard:
    """A guard for an API on one resource: ``op`` on it, or the whole request is refused
    with that resource type's error (and ``fields`` for the rest of the response)."""

    def guard(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
        if access.allowed(op, rtype, name_of(request)):
            return Admission(request)
        return plain_refusal(header, error_for(rtype), **fields)

    return guard


def cluster_guard(op: AclOperation, refuse: Callable[[RequestHeader, Any, ErrorCode], Any] | None = None) -> Guard:
    """A guard for an API on the cluster resource; ``refuse`` builds the answer when the
    response is not flat."""

    def guard(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
        if access.cluster(op):
            return Admission(request)
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        if refuse is None:
            return plain_refusal(header, code)
        return Refused(refuse(header, request, code))

    return guard


# -- per topic -------------------------------------------------------------------------------

@dataclass(frozen=True)
class TopicList:
    """Where an API keeps its topics: request field and the fields of each topic and its
    partitions, response field likewise, and the values a refused partition carries (a
    callable value is called with the partition class: for a struct such as a leader)."""

    request: str = "topics"
    request_partitions: str = "partitions"
    request_index: str = "partition_index"
    response: str = "topics"
    response_partitions: str = "partitions"
    response_index: str = "partition_index"
    failed: dict[str, Any] = field(default_factory=dict)
    error_field: str = "error_code"

    def refused_topic(self, response_cls: type, topic: Any, code: ErrorCode) -> Any:
        """The response's entry for a request topic that was refused, every partition
        carrying ``code``."""
        topic_cls = item(response_cls, self.response)
        part_cls = item(topic_cls, self.response_partitions)
        partitions = getattr(topic, self.request_partitions)
        indexes = [p if isinstance(p, int) else getattr(p, self.request_index) for p in partitions]
        names = {k: get(topic, k) for k in _NAME_FIELDS if has(type(topic), k)}
        failed = {k: v(part_cls) if callable(v) else v for k, v in self.failed.items()}
        return build(topic_cls, **names, **{self.response_partitions: tuple(
            build(part_cls, **{self.response_index: i, self.error_field: code}, **failed) for i in indexes)})


# How requests name a topic (by API and version): its name, or its id.
_NAME_FIELDS = ("name", "topic", "topic_name", "topic_id")


def topic_name_of(access: Access, topic: Any) -> str | None:
    """A request topic's name: its name field, or the name of its topic id (None if unknown)."""
    name = get(topic, "name") or get(topic, "topic") or get(topic, "topic_name")
    return name if name else access.topic_name(get(topic, "topic_id"))


def split_topics(access: Access, op: AclOperation, topics: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """(topics ``op`` is allowed on, topics it is not). A topic id nobody knows stays with
    the allowed ones, for the handler to answer UNKNOWN_TOPIC_ID."""
    allowed, refused = [], []
    for topic in topics:
        name = topic_name_of(access, topic)
        (allowed if name is None or access.allowed(op, TOPIC, name) else refused).append(topic)
    return allowed, refused


def per_topic(op: AclOperation, spec: TopicList) -> Guard:
    """Topics the principal may not ``op`` are taken out of the request and answered
    TOPIC_AUTHORIZATION_FAILED; the rest is served."""

    def guard(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
        return admit_topics(access, header, request, op, spec)

    return guard


def admit_topics(access: Access, header: RequestHeader, request: Any, op: AclOperation,
                 spec: TopicList, then: Callable[[Any], Any] | None = None) -> Admission:
    """``per_topic``'s work, with ``then`` applied to the response after it (if given)."""
    allowed, refused = split_topics(access, op, getattr(request, spec.request))
    if not refused:
        return Admission(request, then)
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED

    def finish(response: Any) -> Any:
        if response is None:  # Produce with acks=0
            return None
        cls = type(response)
        extra = tuple(spec.refused_topic(cls, t, code) for t in refused)
        response = replaced(response, **{spec.response: tuple(getattr(response, spec.response)) + extra})
        return then(response) if then is not None else response

    return Admission(replaced(request, **{spec.request: tuple(allowed)}), finish)


def all_partitions_refused(header: RequestHeader, request: Any, spec: TopicList, code: ErrorCode,
                           **fields: Any) -> Refused:
    """Every partition of every request topic answered ``code`` (e.g. OffsetCommit to a
    group the principal may not read)."""
    cls = response_class(header.api_key, header.api_version)
    topics = tuple(spec.refused_topic(cls, t, code) for t in getattr(request, spec.request) or ())
    return Refused(build(cls, **{spec.response: topics}, **fields))


# -- per named item (groups, coordinator keys, topics of admin APIs) ---------------------------

def admit_items(request: Any, field_name: str, keep: Callable[[Any], bool],
                refused_entry: Callable[[type, Any], Any], response_field: str,
                then: Callable[[Any], Any] | None = None) -> Admission:
    """Items of ``request.<field_name>`` that ``keep`` refuses are taken out and answered by
    ``refused_entry(response_cls, item)`` in ``response.<response_field>``."""
    items = getattr(request, field_name)
    refused = [x for x in items if not keep(x)]
    if not refused:
        return Admission(request, then)

    def finish(response: Any) -> Any:
        extra = tuple(refused_entry(type(response), x) for x in refused)
        response = replaced(response, **{response_field: tuple(getattr(response, response_field)) + extra})
        return then(response) if then is not None else response

    return Admission(replaced(request, **{field_name: tuple(x for x in items if keep(x))}), finish)

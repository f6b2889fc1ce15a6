"""A small asyncio admin client: topics, groups, offsets, and a simple produce/fetch.

How this works: ``AdminClient`` is a set of admin operations over a ``Cluster``
(``client/cluster.py``: connections, metadata, leaders, coordinators and the retries when
they move). Partition requests (Produce, Fetch, ListOffsets) go to the partition leaders,
group requests to the group's coordinator, topic changes to the controller. A coordinator
that moves or loads and a leader that moves are followed until the request timeout; every
other non-zero error code is raised as a ``BrokerError`` carrying its Kafka code.

An ``AdminClient`` makes its own ``Cluster`` from a bootstrap list, or works over one it is
given (the consumer's), which it then leaves open on ``close``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup.error_codes import ErrorCode
from kgroup.wire import record_batch
from kgroup.wire.versions import (
    CONSUMER_GROUP_DESCRIBE,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
    DESCRIBE_GROUPS,
    FETCH,
    INCREMENTAL_ALTER_CONFIGS,
    LEAVE_GROUP,
    LIST_GROUPS,
    LIST_OFFSETS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    PRODUCE,
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    SHARE_GROUP_DESCRIBE,
    STREAMS_GROUP_DESCRIBE,
)

from .cluster import (
    BrokerInfo,
    Cluster,
    ClusterMetadata,
    Recovery,
    Route,
    TopicInfo,
    recovery,
    request_fields,
)
from .connection import DEFAULT_TIMEOUT, Connection
from .errors import BrokerError, GroupNotEmpty, UnsupportedApi
from .security import ClientSecurity
from .security_admin import SecurityAdmin
from .transactions_admin import TransactionAdmin

__all__ = [
    "AdminClient",
    "ConfigEntry",
    "EARLIEST",
    "FetchedPartition",
    "FetchedRecord",
    "GroupDescription",
    "GroupListing",
    "LATEST",
    "MemberDescription",
]

EARLIEST = -2
LATEST = -1
_GROUP_FENCED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                           ErrorCode.REBALANCE_IN_PROGRESS})


# -- results -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None = None
    group_type: str | None = None


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment_bytes: bytes
    # topic -> partitions when the assignment bytes are ConsumerProtocol, else None
    assignment: Mapping[str, tuple[int, ...]] | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = ()
    error: ErrorCode = ErrorCode.NONE
    # "classic" (DescribeGroups: members carry their metadata and assignment bytes),
    # "consumer" (ConsumerGroupDescribe: assignments only, decoded) or "share"
    # (ShareGroupDescribe: assignments only; a partition may be assigned to several members)
    # or "streams" (StreamsGroupDescribe: the source partitions of each member's active tasks)
    group_type: str = "classic"
    # The consumer group's epoch (ConsumerGroupDescribe); None for classic groups, whose
    # generation DescribeGroups does not tell.
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(slots=True)
class FetchedPartition:
    partition: int
    records: list[FetchedRecord] = field(default_factory=list)
    high_watermark: int = -1
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config of a topic, broker or group, as DescribeConfigs answers it."""

    name: str
    value: str | None
    source: str                     # Kafka's ConfigSource name, e.g. DYNAMIC_TOPIC_CONFIG
    read_only: bool = False
    # (name, value, source) from the value in force down to the broker default
    synonyms: tuple[tuple[str, str | None, str], ...] = ()


# Config resource types and IncrementalAlterConfigs operations (Kafka's numbers).
TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32
CONFIG_SET, CONFIG_DELETE = 0, 1
_CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                   3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                   6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


def _err(obj: Any, name: str = "error_code") -> int:
    return int(getattr(obj, name, 0) or 0)


def _check(code: int, context: str, message: str | None = None) -> None:
    if code:
        raise BrokerError(code, context, message)


# -- the client --------------------------------------------------------------------------


class AdminClient(SecurityAdmin):
    """Admin operations against a Kafka-compatible cluster; use ``async with``.

    ``config`` takes the security settings (``client/security.py``: security.protocol,
    sasl.*, ssl.*); ACL and SCRAM credential calls come from ``SecurityAdmin``."""

    def __init__(
        self,
        bootstrap: str | Sequence[str] = "127.0.0.1:9092",
        *,
        client_id: str = "kgroup-cli",
        timeout: float = DEFAULT_TIMEOUT,
        cluster: Cluster | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self._owns_cluster = cluster is None
        security = ClientSecurity.from_settings(config) if config else None
        self.cluster = cluster or Cluster(bootstrap, client_id=client_id, timeout=timeout, security=security)
        # ListTransactions, DescribeTransactions, DescribeProducers (transactions_admin.py).
        self.transactions = TransactionAdmin(self.cluster)

    async def __aenter__(self) -> AdminClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> Connection:
        """Connect to a reachable broker of the bootstrap list."""
        return await self.cluster.connect()

    async def close(self) -> None:
        """Disconnect (unless the cluster was given: its owner closes it)."""
        if self._owns_cluster:
            await self.cluster.close()

    # -- metadata and topics ---------------------------------------------------------

    async def metadata(
        self, topics: Iterable[str] | None = None, *, auto_create: bool = False
    ) -> ClusterMetadata:
        """Brokers and topics (all topics when ``topics`` is None)."""
        return await self.cluster.metadata(topics, auto_create=auto_create)

    async def describe_topic(self, topic: str, *, auto_create: bool = False) -> TopicInfo:
        """One topic's metadata; BrokerError UNKNOWN_TOPIC_OR_PARTITION if it is missing."""
        return await self.cluster.topic(topic, auto_create=auto_create)

    async def _controller(self) -> Connection:
        md = await self.metadata(topics=())
        if md.controller_id >= 0 and self.cluster.broker(md.controller_id) is not None:
            return await self.cluster.node(md.controller_id)
        return await self.connect()

    async def create_topics(
        self,
        topics: Mapping[str, int],
        *,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> dict[str, int]:
        """Create topics (name -> partition count); returns name -> partitions created."""
        conn = await self._controller()
        cfg = [{"name": k, "value": v} for k, v in (configs or {}).items()]
        resp = await self.cluster.request(
            conn,
            CREATE_TOPICS,
            request_fields(
                topics=[
                    {"name": name, "num_partitions": n, "replication_factor": replication_factor,
                     "assignments": (), "configs": cfg}
                    for name, n in topics.items()
                ],
                timeout=timeout_ms,
                validate_only=validate_only,
            ),
        )
        out: dict[str, int] = {}
        for t in resp.topics:
            _check(_err(t), f"create topic {t.name!r}", getattr(t, "error_message", None))
            out[t.name] = int(getattr(t, "num_partitions", topics.get(t.name, -1)))
        return out

    async def delete_topics(self, topics: Sequence[str], *, timeout_ms: int = 30000) -> None:
        """Delete topics by name."""
        conn = await self._controller()
        names = list(topics)
        resp = await self.cluster.request(
            conn,
            DELETE_TOPICS,
            request_fields(topic_names=names, topics=[{"name": n} for n in names],
                           timeout=timeout_ms),
        )
        for r in resp.responses:
            _check(_err(r), f"delete topic {r.name!r}", getattr(r, "error_message", None))

    async def create_partitions(
        self, topic: str, total: int, *, timeout_ms: int = 30000, validate_only: bool = False
    ) -> None:
        """Grow ``topic`` to ``total`` partitions."""
        conn = await self._controller()
        resp = await self.cluster.request(
            conn,
            CREATE_PARTITIONS,
            request_fields(
                topics=[{"name": topic, "count": total, "assignments": None}],
                timeout=timeout_ms,
                validate_only=validate_only,
            ),
        )
        for r in resp.results:
            _check(_err(r), f"create partitions for {r.name!r}", getattr(r, "error_message", None))

    # -- groups ------------------------------------------------------------------------

    async def find_coordinator(self, group: str) -> BrokerInfo:
        """The coordinator of ``group``, retrying while the cluster cannot name one."""
        self.cluster.forget_coordinator(group)
        return await self.cluster.retrying(lambda: self.cluster.find_coordinator(group))

    async def _call_coordinator(self, group: str, api_key: int, body: Any,
                                error_of: Any, **kw: Any) -> Any:
        return await self.cluster.call_coordinator(group, api_key, body, error_of=error_of, **kw)

    async def list_groups(
        self, states: Sequence[str] = (), types: Sequence[str] = ()
    ) -> list[GroupListing]:
        """Groups on every broker, optionally filtered by state and type."""
        md = await self.metadata(topics=())
        listings: dict[str, GroupListing] = {}
        for broker in md.brokers or (BrokerInfo(-1, *self.cluster.bootstrap[0]),):
            conn = await self.cluster.connection(broker.host, broker.port)
            resp = await self.cluster.request(
                conn, LIST_GROUPS,
                request_fields(states_filter=list(states), types_filter=list(types))
            )
            _check(_err(resp), f"list groups on {conn.address}")
            for g in resp.groups:
                listings[g.group_id] = GroupListing(
                    g.group_id,
                    g.protocol_type,
                    getattr(g, "group_state", None),
                    getattr(g, "group_type", None),
                )
        out = sorted(listings.values(), key=lambda g: g.group_id)
        # Filter here too, for brokers whose ListGroups version has no filter.
        if states:
            wanted = {s.lower() for s in states}
            out = [g for g in out if g.state is None or g.state.lower() in wanted]
        if types:
            wanted_t = {t.lower() for t in types}
            out = [g for g in out if g.group_type is None or g.group_type.lower() in wanted_t]
        return out

    async def describe_group(self, group: str) -> GroupDescription:
        """State, protocol and members of one group (assignments decoded when possible).

        A consumer-protocol group is described with ConsumerGroupDescribe, the only API that
        carries its members' assignments; a classic group (the broker answers that it is not
        a consumer group), or a broker without that API, with DescribeGroups — the order
        Kafka's own admin client uses.
        """
        try:
            described = await self._describe_consumer_group(group)
        except UnsupportedApi:
            described = None
        if described is None:
            try:
                described = await self.describe_share_group(group)
            except UnsupportedApi:
                described = None
        if described is None:
            try:
                described = await self.describe_streams_group(group)
            except UnsupportedApi:
                described = None
        return described if described is not None else await self._describe_classic_group(group)

    async def describe_streams_group(self, group: str) -> GroupDescription | None:
        """A streams group's state and members (None: no such streams group), with
        StreamsGroupDescribe (KIP-1071). A member's assignment is the source partitions of its
        active tasks (task (s, p) reads partition p of subtopology s's source topics)."""
        resp = await self._call_coordinator(
            group,
            STREAMS_GROUP_DESCRIBE,
            request_fields(group_ids=[group], include_authorized_operations=False),
            lambda r: _err(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        if _err(g) == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        _check(_err(g), f"describe streams group {group!r}", g.error_message)
        sources = {s.subtopology_id: (*s.source_topics, *(t.name for t in s.repartition_source_topics))
                   for s in (g.topology.subtopologies if g.topology is not None else ())}

        def partitions(tasks) -> dict[str, tuple[int, ...]]:
            out: dict[str, set[int]] = {}
            for t in tasks:
                for topic in sources.get(t.subtopology_id, ()):
                    out.setdefault(topic, set()).update(t.partitions)
            return {topic: tuple(sorted(ps)) for topic, ps in sorted(out.items())}

        members = tuple(
            MemberDescription(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                client_host=m.client_host, metadata=b"", assignment_bytes=b"",
                assignment=partitions(m.assignment.active_tasks))
            for m in g.members
        )
        return GroupDescription(group_id=g.group_id, state=g.group_state, protocol_type="streams",
                                protocol="", members=members, group_type="streams", epoch=g.group_epoch)

    async def describe_share_group(self, group: str) -> GroupDescription | None:
        """A share group's state and members with their assignments (None: no such share
        group), with ShareGroupDescribe (KIP-932)."""
        resp = await self._call_coordinator(
            group,
            SHARE_GROUP_DESCRIBE,
            request_fields(group_ids=[group], include_authorized_operations=False),
            lambda r: _err(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        if _err(g) == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        _check(_err(g), f"describe share group {group!r}", g.error_message)
        members = tuple(
            MemberDescription(
                member_id=m.member_id, group_instance_id=None, client_id=m.client_id,
                client_host=m.client_host, metadata=b"", assignment_bytes=b"",
                assignment={tp.topic_name or str(tp.topic_id): tuple(sorted(tp.partitions))
                            for tp in m.assignment.topic_partitions},
            )
            for m in g.members
        )
        return GroupDescription(group_id=g.group_id, state=g.group_state, protocol_type="share",
                                protocol=g.assignor_name, members=members, group_type="share")

    async def list_share_group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the share partition's start offset, for every partition the
        share group has state for (DescribeShareGroupOffsets)."""
        return {k: start for k, (start, _) in (await self.share_group_offsets(group)).items()}

    async def share_group_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (start offset, lag): where each share partition of the group
        starts, and how many records past it are not yet acknowledged or archived (-1: the
        broker does not say)."""
        resp = await self._call_coordinator(
            group,
            DESCRIBE_SHARE_GROUP_OFFSETS,
            request_fields(groups=[dict(group_id=group, topics=None)]),
            lambda r: _err(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        _check(_err(g), f"describe share group offsets of {group!r}", g.error_message)
        return {(t.topic_name, p.partition_index): (p.start_offset, getattr(p, "lag", -1))
                for t in g.topics for p in t.partitions}

    async def alter_share_group_offsets(self, group: str, offsets: Mapping[str, Mapping[int, int]]) -> None:
        """Set share partitions' start offsets (the share group must be empty)."""
        resp = await self._call_coordinator(
            group,
            ALTER_SHARE_GROUP_OFFSETS,
            request_fields(group_id=group, topics=[
                dict(topic_name=t, partitions=[dict(partition_index=p, start_offset=o)
                                               for p, o in sorted(ps.items())])
                for t, ps in sorted(offsets.items())]),
            _err,
        )
        _check(_err(resp), f"alter share group offsets of {group!r}", resp.error_message)
        for t in resp.responses:
            for p in t.partitions:
                _check(_err(p), f"alter share group offset of {t.topic_name}-{p.partition_index}")

    async def delete_share_group_offsets(self, group: str, topics: Sequence[str]) -> dict[str, ErrorCode]:
        """DeleteShareGroupOffsets: forget the share partitions' state of whole topics (the
        share group must be empty); topic -> its outcome (ErrorCode.NONE when deleted)."""
        resp = await self._call_coordinator(
            group,
            DELETE_SHARE_GROUP_OFFSETS,
            request_fields(group_id=group, topics=[dict(topic_name=t) for t in topics]),
            _err,
        )
        _check(_err(resp), f"delete share group offsets of {group!r}", resp.error_message)
        return {t.topic_name: ErrorCode(_err(t)) for t in resp.responses}

    async def _describe_consumer_group(self, group: str) -> GroupDescription | None:
        resp = await self._call_coordinator(
            group,
            CONSUMER_GROUP_DESCRIBE,
            request_fields(group_ids=[group], include_authorized_operations=False),
            lambda r: _err(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        if _err(g) == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        _check(_err(g), f"describe group {group!r}", g.error_message)
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=b"",
                assignment_bytes=b"",
                assignment={tp.topic_name or str(tp.topic_id): tuple(sorted(tp.partitions))
                            for tp in m.assignment.topic_partitions},
            )
            for m in g.members
        )
        return GroupDescription(group_id=g.group_id, state=g.group_state, protocol_type="consumer",
                                protocol=g.assignor_name, members=members, group_type="consumer",
                                epoch=int(g.group_epoch))

    async def _describe_classic_group(self, group: str) -> GroupDescription:
        resp = await self._call_coordinator(
            group,
            DESCRIBE_GROUPS,
            request_fields(groups=[group], include_authorized_operations=False),
            lambda r: _err(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        _check(_err(g), f"describe group {group!r}")
        members = []
        for m in g.members:
            members.append(
                MemberDescription(
                    member_id=m.member_id,
                    group_instance_id=getattr(m, "group_instance_id", None),
                    client_id=m.client_id,
                    client_host=m.client_host,
                    metadata=bytes(m.member_metadata),
                    assignment_bytes=bytes(m.member_assignment),
                    assignment=_decode_assignment(g.protocol_type, bytes(m.member_assignment)),
                )
            )
        return GroupDescription(
            group_id=g.group_id,
            state=g.group_state,
            protocol_type=g.protocol_type,
            protocol=g.protocol_data,
            members=tuple(members),
        )

    async def delete_groups(self, groups: Sequence[str]) -> None:
        """Delete groups (each must be Empty)."""
        for group in groups:
            resp = await self._call_coordinator(
                group,
                DELETE_GROUPS,
                request_fields(groups_names=[group]),
                lambda r: _err(r.results[0]) if r.results else 0,
            )
            for r in resp.results:
                _check(_err(r), f"delete group {r.group_id!r}")

    async def remove_members(self, group: str, instance_ids: Sequence[str]) -> None:
        """Remove static members by group.instance.id (LeaveGroup v3+ batch)."""
        members = [
            {"member_id": "", "group_instance_id": i, "reason": "removed by kgroup admin"}
            for i in instance_ids
        ]
        resp = await self._call_coordinator(
            group, LEAVE_GROUP, request_fields(group_id=group, members=members), _err, min_version=3
        )
        _check(_err(resp), f"remove members from group {group!r}")
        for m in resp.members:
            _check(_err(m), f"remove member {m.group_instance_id!r} from group {group!r}")

    async def list_group_offsets(
        self, group: str, topics: Mapping[str, Sequence[int]] | None = None, *,
        require_stable: bool = False,
    ) -> dict[tuple[str, int], int]:
        """Committed offsets of ``group``: (topic, partition) -> offset (all when None).

        ``require_stable`` (KIP-447, what a read_committed consumer asks): while a
        transaction is committing an offset of a partition the broker answers
        UNSTABLE_OFFSET_COMMIT, and the request is sent again after a backoff until the
        request timeout."""
        retries = self.cluster.retries()
        while True:
            try:
                return await self._group_offsets(group, topics, require_stable)
            except BrokerError as exc:
                delay = retries.next_delay() if exc.code is ErrorCode.UNSTABLE_OFFSET_COMMIT else None
                if delay is None:
                    raise
            await self.cluster.sleep(delay)

    async def _group_offsets(self, group: str, topics: Mapping[str, Sequence[int]] | None,
                             require_stable: bool) -> dict[tuple[str, int], int]:
        wanted = (
            None
            if topics is None
            else [{"name": t, "partition_indexes": list(ps)} for t, ps in topics.items()]
        )
        body = request_fields(
            group_id=group,
            topics=wanted,
            groups=[{"group_id": group, "topics": wanted, "member_id": None,
                     "member_epoch": -1}],
            require_stable=require_stable,
        )

        def error_of(r: Any) -> int:
            if hasattr(r, "groups"):
                return _err(r.groups[0]) if r.groups else 0
            return _err(r)

        resp = await self._call_coordinator(group, OFFSET_FETCH, body, error_of)
        _check(error_of(resp), f"fetch offsets of group {group!r}")
        result_topics = resp.groups[0].topics if hasattr(resp, "groups") else resp.topics
        if result_topics is None and topics is None:
            # Some brokers (librdkafka's mock) answer "all topics" with null: ask by name.
            md = await self.metadata()
            every = {t.name: [p.partition for p in t.partitions]
                     for t in md.topics.values() if not t.is_internal and t.partitions}
            return await self._group_offsets(group, every, require_stable) if every else {}
        out: dict[tuple[str, int], int] = {}
        for t in result_topics or ():
            for p in t.partitions:
                _check(_err(p), f"fetch offset of group {group!r} {t.name}-{p.partition_index}")
                if int(p.committed_offset) >= 0:
                    out[(t.name, int(p.partition_index))] = int(p.committed_offset)
        return out

    async def alter_group_offsets(
        self,
        group: str,
        offsets: Mapping[tuple[str, int], int],
        *,
        require_empty: bool = True,
    ) -> None:
        """Commit ``offsets`` for ``group`` as a "simple" consumer (generation -1).

        Like Kafka's reset-offsets this only works on a group without active members:
        with ``require_empty`` the state is checked first (GroupNotEmpty otherwise) when the
        broker serves DescribeGroups; the broker fences the commit in any case.
        """
        if require_empty:
            try:
                desc = await self.describe_group(group)
            except UnsupportedApi:
                desc = None
            if desc is not None and desc.state not in ("Empty", "Dead", ""):
                raise GroupNotEmpty(
                    f"group {group!r} is {desc.state} with {len(desc.members)} member(s); "
                    "offsets can only be changed on an Empty group"
                )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": ""}
            )
        body = request_fields(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            retention_time=-1,
            topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        )

        def first_error(r: Any) -> int:
            for t in r.topics:
                for p in t.partitions:
                    if _err(p):
                        return _err(p)
            return 0

        resp = await self._call_coordinator(group, OFFSET_COMMIT, body, first_error)
        for t in resp.topics:
            for p in t.partitions:
                code = _err(p)
                if code in _GROUP_FENCED:
                    raise GroupNotEmpty(
                        f"group {group!r} refused the commit ({ErrorCode(code).name}): "
                        "it has active members"
                    )
                _check(code, f"commit offset of group {group!r} {t.name}-{p.partition_index}")

    # -- data path ----------------------------------------------------------------------

    async def list_offsets(
        self, topic: str, partitions: Sequence[int] | None = None, spec: int = LATEST
    ) -> dict[int, int]:
        """partition -> offset for ``spec`` (EARLIEST, LATEST, or a timestamp in ms).

        A timestamp past the last record gives -1 (no such offset), as in Kafka.
        """
        if partitions is None:
            partitions = [p.partition for p in (await self.describe_topic(topic)).partitions]
        wanted = list(partitions)
        cluster = self.cluster

        async def attempt() -> dict[int, int]:
            out: dict[int, int] = {}
            for leader, parts in (await cluster.leaders(topic, wanted)).items():
                resp = await cluster.request(
                    await cluster.node(leader),
                    LIST_OFFSETS,
                    request_fields(
                        replica_id=-1,
                        isolation_level=0,
                        topics=[{"name": topic, "partitions": [
                            {"partition_index": p, "current_leader_epoch": -1, "timestamp": spec}
                            for p in parts]}],
                    ),
                )
                for t in resp.topics:
                    for p in t.partitions:
                        index = int(p.partition_index)
                        cluster.check(_err(p), f"list offsets of {t.name}-{index}",
                                      partitions=[(t.name, index)])
                        out[index] = int(p.offset)
            return out

        return await cluster.retrying(attempt)

    async def produce(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]]
        | Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes]], int]],
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
    ) -> int:
        """Append ``records`` ((key, value) or (key, value, headers, ts_ms)) as one batch.

        Returns the base offset (-1 with acks=0, which gets no answer).
        """
        now = int(time.time() * 1000)
        rows = [r if len(r) == 4 else (r[0], r[1], (), now) for r in records]
        batch = record_batch.build_batch(rows)  # type: ignore[arg-type]
        body = request_fields(
            transactional_id=None,
            acks=acks,
            timeout=timeout_ms,
            topic_data=[{"name": topic, "partition_data": [{"index": partition,
                                                             "records": batch}]}],
        )
        cluster = self.cluster

        async def attempt() -> int:
            conn = await cluster.node(await cluster.leader(topic, partition))
            resp = await cluster.request(conn, PRODUCE, body)
            if resp is None:
                return -1
            for t in resp.responses:
                for p in t.partition_responses:
                    cluster.check(_err(p), f"produce to {topic}-{p.index}",
                                  partitions=[(topic, partition)],
                                  message=getattr(p, "error_message", None))
                    return int(p.base_offset)
            return -1

        return await cluster.retrying(attempt)

    async def fetch(
        self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> FetchedPartition:
        """Records of one partition from ``offset`` (waits up to ``max_wait_ms`` for data)."""
        result = await self.fetch_many(topic, {partition: offset}, max_wait_ms=max_wait_ms,
                                       max_bytes=max_bytes)
        got = result[partition]
        _check(got.error, f"fetch {topic}-{partition} at offset {offset}")
        return got

    async def fetch_many(
        self, topic: str, offsets: Mapping[int, int], *, max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> dict[int, FetchedPartition]:
        """Fetch several partitions of one topic; errors are reported per partition, except
        a moved leader, which is followed."""
        cluster = self.cluster

        async def attempt() -> dict[int, FetchedPartition]:
            out: dict[int, FetchedPartition] = {}
            for leader, parts in (await cluster.leaders(topic, sorted(offsets))).items():
                wanted = {p: offsets[p] for p in parts}
                out.update(await self._fetch_from(leader, topic, wanted, max_wait_ms, max_bytes))
            return out

        return await cluster.retrying(attempt)

    async def _fetch_from(self, leader: int, topic: str, wanted: Mapping[int, int],
                          max_wait_ms: int, max_bytes: int) -> dict[int, FetchedPartition]:
        cluster = self.cluster
        topic_id = cluster.topic_id(topic)
        resp = await cluster.request(
            await cluster.node(leader),
            FETCH,
            request_fields(
                replica_id=-1,
                max_wait=max_wait_ms,
                min_bytes=1,
                max_bytes=max_bytes,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[{
                    "topic": topic,
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition": p, "fetch_offset": off, "partition_max_bytes": max_bytes,
                         "current_leader_epoch": -1, "log_start_offset": -1,
                         "last_fetched_epoch": -1}
                        for p, off in sorted(wanted.items())
                    ],
                }],
                forgotten_topics_data=[],
                rack_id="",
            ),
            max_version=None if topic_id is not None else 12,
            timeout=cluster.timeout + max_wait_ms / 1000,
        )
        _check(_err(resp), f"fetch from {topic}")
        out: dict[int, FetchedPartition] = {}
        for t in resp.responses:
            for p in t.partitions:
                index = int(p.partition_index)
                fp = FetchedPartition(index, high_watermark=int(p.high_watermark))
                out[index] = fp
                code = ErrorCode(_err(p))
                if code is not ErrorCode.NONE:
                    fp.error = code
                    if recovery(code, Route.LEADER) is not Recovery.FAIL:
                        # The leader moved: fetch everything again from the new leaders.
                        cluster.check(code, f"fetch {topic}-{index}", partitions=[(topic, index)])
                    continue
                fp.records = _records(topic, index, bytes(p.records or b""), wanted[index])
        return out


    # -- configs, offset deletion, record deletion (operator tools) -------------------------

    async def _config_request(self, resource_type: int, name: str, api_key: int, body: Any,
                              error_of: Any) -> Any:
        """A config request where it is answered: at the group's coordinator (which keeps
        the group's configs), at the broker itself, or at the controller for topics."""
        if resource_type == GROUP_RESOURCE:
            return await self._call_coordinator(name, api_key, body, error_of)
        if resource_type == BROKER_RESOURCE and name.isdigit():
            conn = await self.cluster.node(int(name))
        else:
            conn = await self._controller()
        return await self.cluster.request(conn, api_key, body)

    async def describe_configs(
        self, resource_type: int, name: str, keys: Sequence[str] | None = None, *, synonyms: bool = False
    ) -> list[ConfigEntry]:
        """Configs of one resource (TOPIC_RESOURCE, BROKER_RESOURCE or GROUP_RESOURCE)."""
        body = request_fields(
            resources=[{"resource_type": resource_type, "resource_name": name,
                        "configuration_keys": None if keys is None else list(keys)}],
            include_synonyms=synonyms, include_documentation=False)
        resp = await self._config_request(resource_type, name, DESCRIBE_CONFIGS, body,
                                          lambda r: _err(r.results[0]) if r.results else 0)
        (result,) = resp.results
        _check(_err(result), f"describe configs of {name!r}", result.error_message)
        return [ConfigEntry(c.name, c.value, _CONFIG_SOURCES.get(int(getattr(c, "config_source", 0)), "UNKNOWN"),
                            bool(c.read_only),
                            tuple((s.name, s.value, _CONFIG_SOURCES.get(int(s.source), "UNKNOWN"))
                                  for s in getattr(c, "synonyms", ()) or ()))
                for c in result.configs]

    async def alter_configs(
        self, resource_type: int, name: str, changes: Sequence[tuple[str, int, str | None]], *,
        validate_only: bool = False,
    ) -> None:
        """IncrementalAlterConfigs on one resource: (name, CONFIG_SET or CONFIG_DELETE, value)."""
        body = request_fields(
            resources=[{"resource_type": resource_type, "resource_name": name, "configs": [
                {"name": n, "config_operation": op, "value": v} for n, op, v in changes]}],
            validate_only=validate_only)
        resp = await self._config_request(resource_type, name, INCREMENTAL_ALTER_CONFIGS, body,
                                          lambda r: _err(r.responses[0]) if r.responses else 0)
        (result,) = resp.responses
        _check(_err(result), f"alter configs of {name!r}", result.error_message)

    async def delete_group_offsets(
        self, group: str, partitions: Mapping[str, Sequence[int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        """OffsetDelete: (topic, partition) -> its outcome (ErrorCode.NONE when deleted)."""
        body = request_fields(group_id=group, topics=[
            {"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in partitions.items()])
        resp = await self._call_coordinator(group, OFFSET_DELETE, body, _err)
        _check(_err(resp), f"delete offsets of group {group!r}")
        return {(t.name, int(p.partition_index)): ErrorCode(_err(p)) for t in resp.topics for p in t.partitions}

    async def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """DeleteRecords: partition -> new log start offset (-1 in ``before``: the log end)."""
        cluster = self.cluster

        async def attempt() -> dict[int, int]:
            out: dict[int, int] = {}
            for leader, parts in (await cluster.leaders(topic, sorted(before))).items():
                resp = await cluster.request(await cluster.node(leader), DELETE_RECORDS, request_fields(
                    timeout=30000, topics=[{"name": topic, "partitions": [
                        {"partition_index": p, "offset": before[p]} for p in parts]}]))
                for p in resp.topics[0].partitions:
                    index = int(p.partition_index)
                    cluster.check(_err(p), f"delete records of {topic}-{index}", partitions=[(topic, index)])
                    out[index] = int(p.low_watermark)
            return out

        return await cluster.retrying(attempt)


def _records(topic: str, partition: int, blob: bytes, start: int) -> list[FetchedRecord]:
    out: list[FetchedRecord] = []
    for batch in record_batch.split_batches(record_batch.whole_batches(blob)):
        if batch.header.is_control:
            continue
        for r in record_batch.decode_records(batch):
            if r.offset >= start:
                out.append(FetchedRecord(topic, partition, r.offset, r.timestamp, r.key,
                                         r.value, r.headers))
    return out


def _decode_assignment(protocol_type: str, data: bytes) -> Mapping[str, tuple[int, ...]] | None:
    if protocol_type != "consumer" or not data:
        return {} if protocol_type == "consumer" else None
    try:
        from kgroup.assignors import decode_assignment

        return decode_assignment(data).as_dict()
    except Exception:  # not ConsumerProtocol bytes after all, or assignors unavailable
        return None

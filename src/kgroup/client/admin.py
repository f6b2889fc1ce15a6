"""A small asyncio admin client: topics, groups, offsets, and a simple produce/fetch.

How this works: ``AdminClient`` connects to the first reachable address of its bootstrap
list and keeps one ``Connection`` per broker address. Partition requests (Produce, Fetch,
ListOffsets) go to the partition leader from Metadata; group requests go to the group's
coordinator from FindCoordinator. A group request answered with COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS is retried after rediscovering the
coordinator, with a short bounded backoff. Every other non-zero error code is raised as a
``BrokerError`` carrying its Kafka name.

Requests are described as plain field dicts and built for whichever version both sides
speak by ``kgroup.wire.kio_build`` (a pure helper; see ``_make``), so one call site
covers every version: fields a version lacks are dropped.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup.wire.kio_build import build, has, item
from kgroup.wire import record_batch
from kgroup.wire.versions import (
    CONSUMER_GROUP_DESCRIBE,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
    DELETE_TOPICS,
    DESCRIBE_GROUPS,
    FETCH,
    FIND_COORDINATOR,
    LEAVE_GROUP,
    LIST_GROUPS,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    PRODUCE,
)

from .connection import DEFAULT_TIMEOUT, Connection
from .errors import (
    BrokerError,
    GroupNotEmpty,
    KafkaClientError,
    KafkaConnectionError,
    UnsupportedApi,
    error_code,
    error_name,
)

__all__ = [
    "AdminClient",
    "BrokerInfo",
    "ClusterMetadata",
    "EARLIEST",
    "FetchedRecord",
    "GroupDescription",
    "GroupListing",
    "LATEST",
    "MemberDescription",
    "PartitionInfo",
    "TopicInfo",
    "parse_address",
    "parse_bootstrap",
]

EARLIEST = -2
LATEST = -1
_RETRIABLE_COORDINATOR = frozenset({"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                                    "COORDINATOR_LOAD_IN_PROGRESS"})
_COORDINATOR_ATTEMPTS = 6
_BACKOFF_S = 0.05
_ZERO_UUID = uuid.UUID(int=0)


# -- addresses ---------------------------------------------------------------------------


def parse_address(text: str, default_port: int = 9092) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``, or ``"host"``) -> (host, port); ValueError."""
    text = text.strip()
    if not text:
        raise ValueError("empty address")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"address {text!r} has no host")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"address {text!r} has a bad port {port_text!r}")
    return host, int(port_text)


def parse_bootstrap(bootstrap: str | Sequence[str]) -> list[tuple[str, int]]:
    """A comma-separated ``host:port`` list (or a list of them) -> addresses."""
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    addresses = [parse_address(a) for a in items if a.strip()]
    if not addresses:
        raise ValueError("no bootstrap address given")
    return addresses


# -- results -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error: str = "NONE"


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionInfo, ...]
    topic_id: uuid.UUID | None = None
    is_internal: bool = False
    error: str = "NONE"


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    brokers: tuple[BrokerInfo, ...]
    topics: Mapping[str, TopicInfo]
    controller_id: int = -1
    cluster_id: str | None = None


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
    error: str = "NONE"


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
    error: str = "NONE"


# -- building requests -------------------------------------------------------------------


def _make(cls: type, **fields: Any) -> Any:
    """``build`` that also builds nested entities given as dicts (lists of dicts)."""
    values: dict[str, Any] = {}
    for name, value in fields.items():
        if not has(cls, name):
            continue
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], Mapping):
            sub = item(cls, name)
            value = tuple(_make(sub, **v) for v in value)
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return build(cls, **values)


def _fields(**fields: Any) -> Any:
    return lambda cls: _make(cls, **fields)


def _err(obj: Any, name: str = "error_code") -> int:
    return int(getattr(obj, name, 0) or 0)


def _check(code: int, context: str, message: str | None = None) -> None:
    if code:
        raise BrokerError(code, context, message)


def _complete_batches(blob: bytes) -> bytes:
    """The prefix of a Fetch records blob made of whole batches (a reply may end mid-batch)."""
    pos = 0
    end = len(blob)
    while end - pos >= 12:
        length = int.from_bytes(blob[pos + 8 : pos + 12], "big", signed=True)
        if length <= 0 or pos + 12 + length > end:
            break
        pos += 12 + length
    return blob[:pos]


# -- the client --------------------------------------------------------------------------


class AdminClient:
    """Admin operations against a Kafka-compatible cluster; use ``async with``."""

    def __init__(
        self,
        bootstrap: str | Sequence[str] = "127.0.0.1:9092",
        *,
        client_id: str = "kgroup-cli",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.timeout = timeout
        self._conns: dict[tuple[str, int], Connection] = {}
        self._brokers: dict[int, tuple[str, int]] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._names: dict[uuid.UUID, str] = {}
        self._leaders: dict[tuple[str, int], int] = {}
        self._bootstrap_conn: Connection | None = None

    async def __aenter__(self) -> AdminClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> Connection:
        """Connect to the first reachable bootstrap address."""
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        errors: list[str] = []
        for host, port in self.bootstrap:
            try:
                self._bootstrap_conn = await self._connect(host, port)
                return self._bootstrap_conn
            except KafkaConnectionError as exc:
                errors.append(str(exc))
        raise KafkaConnectionError("; ".join(errors))

    async def _connect(self, host: str, port: int) -> Connection:
        conn = self._conns.get((host, port))
        if conn is None or conn.closed:
            conn = await Connection.open(host, port, self.client_id, self.timeout)
            self._conns[(host, port)] = conn
        return conn

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        self._bootstrap_conn = None
        for conn in conns:
            await conn.close()

    async def _node(self, node_id: int) -> Connection:
        if node_id not in self._brokers:
            await self.metadata(topics=())
        address = self._brokers.get(node_id)
        if address is None:
            raise KafkaClientError(f"broker {node_id} is not in the cluster metadata",
                                   "the cluster is changing; retry")
        return await self._connect(*address)

    # -- metadata and topics ---------------------------------------------------------

    async def metadata(
        self, topics: Iterable[str] | None = None, *, auto_create: bool = False
    ) -> ClusterMetadata:
        """Brokers and topics (all topics when ``topics`` is None)."""
        conn = await self.connect()
        names = None if topics is None else [{"name": t} for t in topics]
        resp = await conn.request(
            METADATA, _fields(topics=names, allow_auto_topic_creation=auto_create)
        )
        brokers = tuple(
            BrokerInfo(int(b.node_id), b.host, int(b.port)) for b in resp.brokers
        )
        self._brokers.update({b.node_id: (b.host, b.port) for b in brokers})
        infos: dict[str, TopicInfo] = {}
        for t in resp.topics:
            topic_id = getattr(t, "topic_id", None)
            parts = tuple(
                sorted(
                    (
                        PartitionInfo(
                            int(p.partition_index),
                            int(p.leader_id),
                            tuple(int(r) for r in p.replica_nodes),
                            tuple(int(r) for r in p.isr_nodes),
                            error_name(int(p.error_code)) if _err(p) else "NONE",
                        )
                        for p in t.partitions
                    ),
                    key=lambda p: p.partition,
                )
            )
            info = TopicInfo(
                name=t.name,
                partitions=parts,
                topic_id=topic_id if topic_id != _ZERO_UUID else None,
                is_internal=bool(t.is_internal),
                error=error_name(_err(t)) if _err(t) else "NONE",
            )
            infos[t.name] = info
            if info.topic_id is not None:
                self._topic_ids[t.name] = info.topic_id
                self._names[info.topic_id] = t.name
            for p in parts:
                self._leaders[(t.name, p.partition)] = p.leader
        return ClusterMetadata(
            brokers=brokers,
            topics=infos,
            controller_id=int(getattr(resp, "controller_id", -1)),
            cluster_id=getattr(resp, "cluster_id", None),
        )

    async def describe_topic(self, topic: str, *, auto_create: bool = False) -> TopicInfo:
        """One topic's metadata; BrokerError UNKNOWN_TOPIC_OR_PARTITION if it is missing."""
        md = await self.metadata([topic], auto_create=auto_create)
        info = md.topics.get(topic)
        if info is None:
            raise BrokerError(3, f"topic {topic!r}")
        if info.error != "NONE":
            raise BrokerError(_code(info.error), f"topic {topic!r}")
        return info

    async def _controller(self) -> Connection:
        md = await self.metadata(topics=())
        if md.controller_id >= 0 and md.controller_id in self._brokers:
            return await self._node(md.controller_id)
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
        resp = await conn.request(
            CREATE_TOPICS,
            _fields(
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
        resp = await conn.request(
            DELETE_TOPICS,
            _fields(topic_names=names, topics=[{"name": n} for n in names], timeout=timeout_ms),
        )
        for r in resp.responses:
            _check(_err(r), f"delete topic {r.name!r}", getattr(r, "error_message", None))

    async def create_partitions(
        self, topic: str, total: int, *, timeout_ms: int = 30000, validate_only: bool = False
    ) -> None:
        """Grow ``topic`` to ``total`` partitions."""
        conn = await self._controller()
        resp = await conn.request(
            CREATE_PARTITIONS,
            _fields(
                topics=[{"name": topic, "count": total, "assignments": None}],
                timeout=timeout_ms,
                validate_only=validate_only,
            ),
        )
        for r in resp.results:
            _check(_err(r), f"create partitions for {r.name!r}", getattr(r, "error_message", None))

    # -- groups ------------------------------------------------------------------------

    async def find_coordinator(self, group: str) -> BrokerInfo:
        """The coordinator of ``group``, retrying briefly while it is not available."""
        conn = await self.connect()
        delay = _BACKOFF_S
        for attempt in range(_COORDINATOR_ATTEMPTS):
            resp = await conn.request(
                FIND_COORDINATOR, _fields(key=group, key_type=0, coordinator_keys=[group])
            )
            entry = resp.coordinators[0] if hasattr(resp, "coordinators") else resp
            code = _err(entry)
            if code == 0:
                info = BrokerInfo(int(entry.node_id), entry.host, int(entry.port))
                self._brokers[info.node_id] = (info.host, info.port)
                return info
            err = BrokerError(code, f"find coordinator for group {group!r}",
                              getattr(entry, "error_message", None))
            if err.name not in _RETRIABLE_COORDINATOR or attempt == _COORDINATOR_ATTEMPTS - 1:
                raise err
            await asyncio.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    async def _group_request(
        self, group: str, api_key: int, body: Any, error_of: Any, **kw: Any
    ) -> Any:
        """Send a request to the group's coordinator, rediscovering it on retriable errors."""
        delay = _BACKOFF_S
        for attempt in range(_COORDINATOR_ATTEMPTS):
            coord = await self.find_coordinator(group)
            conn = await self._connect(coord.host, coord.port)
            resp = await conn.request(api_key, body, **kw)
            code = error_of(resp)
            if code and error_name(code) in _RETRIABLE_COORDINATOR:
                if attempt < _COORDINATOR_ATTEMPTS - 1:
                    await asyncio.sleep(delay)
                    delay *= 2
                    continue
            return resp
        raise AssertionError("unreachable")

    async def list_groups(
        self, states: Sequence[str] = (), types: Sequence[str] = ()
    ) -> list[GroupListing]:
        """Groups on every broker, optionally filtered by state and type."""
        md = await self.metadata(topics=())
        listings: dict[str, GroupListing] = {}
        for broker in md.brokers or (BrokerInfo(-1, *self.bootstrap[0]),):
            conn = await self._connect(broker.host, broker.port)
            resp = await conn.request(
                LIST_GROUPS, _fields(states_filter=list(states), types_filter=list(types))
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
        return described if described is not None else await self._describe_classic_group(group)

    async def _describe_consumer_group(self, group: str) -> GroupDescription | None:
        resp = await self._group_request(
            group,
            CONSUMER_GROUP_DESCRIBE,
            _fields(group_ids=[group], include_authorized_operations=False),
            lambda r: _err(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        if error_name(_err(g)) == "GROUP_ID_NOT_FOUND":
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
                                protocol=g.assignor_name, members=members)

    async def _describe_classic_group(self, group: str) -> GroupDescription:
        resp = await self._group_request(
            group,
            DESCRIBE_GROUPS,
            _fields(groups=[group], include_authorized_operations=False),
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
            resp = await self._group_request(
                group,
                DELETE_GROUPS,
                _fields(groups_names=[group]),
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
        resp = await self._group_request(
            group, LEAVE_GROUP, _fields(group_id=group, members=members), _err, min_version=3
        )
        _check(_err(resp), f"remove members from group {group!r}")
        for m in resp.members:
            _check(_err(m), f"remove member {m.group_instance_id!r} from group {group!r}")

    async def list_group_offsets(
        self, group: str, topics: Mapping[str, Sequence[int]] | None = None
    ) -> dict[tuple[str, int], int]:
        """Committed offsets of ``group``: (topic, partition) -> offset (all when None)."""
        wanted = (
            None
            if topics is None
            else [{"name": t, "partition_indexes": list(ps)} for t, ps in topics.items()]
        )
        body = _fields(
            group_id=group,
            topics=wanted,
            groups=[{"group_id": group, "topics": wanted, "member_id": None,
                     "member_epoch": -1}],
            require_stable=False,
        )

        def error_of(r: Any) -> int:
            if hasattr(r, "groups"):
                return _err(r.groups[0]) if r.groups else 0
            return _err(r)

        resp = await self._group_request(group, OFFSET_FETCH, body, error_of)
        _check(error_of(resp), f"fetch offsets of group {group!r}")
        result_topics = resp.groups[0].topics if hasattr(resp, "groups") else resp.topics
        if result_topics is None and topics is None:
            # Some brokers (librdkafka's mock) answer "all topics" with null: ask by name.
            md = await self.metadata()
            every = {t.name: [p.partition for p in t.partitions]
                     for t in md.topics.values() if not t.is_internal and t.partitions}
            return await self.list_group_offsets(group, every) if every else {}
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
        body = _fields(
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

        resp = await self._group_request(group, OFFSET_COMMIT, body, first_error)
        for t in resp.topics:
            for p in t.partitions:
                code = _err(p)
                if error_name(code) in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION",
                                              "REBALANCE_IN_PROGRESS"):
                    raise GroupNotEmpty(
                        f"group {group!r} refused the commit ({error_name(code)}): "
                        "it has active members"
                    )
                _check(code, f"commit offset of group {group!r} {t.name}-{p.partition_index}")

    # -- data path ----------------------------------------------------------------------

    async def _leader(self, topic: str, partition: int) -> Connection:
        if (topic, partition) not in self._leaders:
            await self.describe_topic(topic)
        leader = self._leaders.get((topic, partition))
        if leader is None:
            raise BrokerError(3, f"partition {topic}-{partition}")
        if leader < 0:
            raise BrokerError(5, f"partition {topic}-{partition}")  # LEADER_NOT_AVAILABLE
        return await self._node(leader)

    async def list_offsets(
        self, topic: str, partitions: Sequence[int] | None = None, spec: int = LATEST
    ) -> dict[int, int]:
        """partition -> offset for ``spec`` (EARLIEST, LATEST, or a timestamp in ms).

        A timestamp past the last record gives -1 (no such offset), as in Kafka.
        """
        if partitions is None:
            partitions = [p.partition for p in (await self.describe_topic(topic)).partitions]
        by_leader: dict[int, list[int]] = {}
        for p in partitions:
            await self._leader(topic, p)
            by_leader.setdefault(self._leaders[(topic, p)], []).append(p)
        out: dict[int, int] = {}
        for leader, parts in by_leader.items():
            conn = await self._node(leader)
            resp = await conn.request(
                LIST_OFFSETS,
                _fields(
                    replica_id=-1,
                    isolation_level=0,
                    topics=[{"name": topic, "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": spec}
                        for p in parts]}],
                ),
            )
            for t in resp.topics:
                for p in t.partitions:
                    _check(_err(p), f"list offsets of {t.name}-{p.partition_index}")
                    out[int(p.partition_index)] = int(p.offset)
        return out

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
        conn = await self._leader(topic, partition)
        resp = await conn.request(
            PRODUCE,
            _fields(
                transactional_id=None,
                acks=acks,
                timeout=timeout_ms,
                topic_data=[{"name": topic, "partition_data": [
                    {"index": partition, "records": batch}]}],
            ),
        )
        if resp is None:
            return -1
        for t in resp.responses:
            for p in t.partition_responses:
                _check(_err(p), f"produce to {topic}-{p.index}", getattr(p, "error_message", None))
                return int(p.base_offset)
        return -1

    async def fetch(
        self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> FetchedPartition:
        """Records of one partition from ``offset`` (waits up to ``max_wait_ms`` for data)."""
        result = await self.fetch_many(topic, {partition: offset}, max_wait_ms=max_wait_ms,
                                       max_bytes=max_bytes)
        got = result[partition]
        _check(_code(got.error), f"fetch {topic}-{partition} at offset {offset}")
        return got

    async def fetch_many(
        self, topic: str, offsets: Mapping[int, int], *, max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> dict[int, FetchedPartition]:
        """Fetch several partitions of one topic; errors are reported per partition."""
        if topic not in self._topic_ids or any((topic, p) not in self._leaders for p in offsets):
            await self.describe_topic(topic)
        by_leader: dict[int, dict[int, int]] = {}
        for p, off in offsets.items():
            leader = self._leaders.get((topic, p))
            if leader is None:
                raise BrokerError(3, f"partition {topic}-{p}")
            by_leader.setdefault(leader, {})[p] = off
        out: dict[int, FetchedPartition] = {}
        topic_id = self._topic_ids.get(topic)
        for leader, wanted in by_leader.items():
            conn = await self._node(leader)
            max_version = None if topic_id is not None else 12
            resp = await conn.request(
                FETCH,
                _fields(
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
                max_version=max_version,
                timeout=self.timeout + max_wait_ms / 1000,
            )
            _check(_err(resp), f"fetch from {topic}")
            for t in resp.responses:
                for p in t.partitions:
                    index = int(p.partition_index)
                    fp = FetchedPartition(index, high_watermark=int(p.high_watermark))
                    out[index] = fp
                    if _err(p):
                        fp.error = error_name(_err(p))
                        continue
                    fp.records = _records(topic, index, bytes(p.records or b""), wanted[index])
        return out


def _records(topic: str, partition: int, blob: bytes, start: int) -> list[FetchedRecord]:
    out: list[FetchedRecord] = []
    for batch in record_batch.split_batches(_complete_batches(blob)):
        if batch.header.is_control:
            continue
        for r in record_batch.decode_records(batch):
            if r.offset >= start:
                out.append(FetchedRecord(topic, partition, r.offset, r.timestamp, r.key,
                                         r.value, r.headers))
    return out


_code = error_code


def _decode_assignment(protocol_type: str, data: bytes) -> Mapping[str, tuple[int, ...]] | None:
    if protocol_type != "consumer" or not data:
        return {} if protocol_type == "consumer" else None
    try:
        from kgroup.assignors import decode_assignment

        return decode_assignment(data).as_dict()
    except Exception:  # not ConsumerProtocol bytes after all, or assignors unavailable
        return None

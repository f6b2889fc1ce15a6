"""A small asyncio admin client: topics, groups, offsets, and a simple produce/fetch.

How this works: ``AdminClient`` is a set of admin operations over a ``ClusterClient``
(``client/cluster.py``: connections, metadata, leaders, coordinators and the retries when
they move). Partition requests (Produce, Fetch, ListOffsets) go to the partition leaders,
group requests to the group's coordinator, topic changes to the controller. A coordinator
that moves or loads and a leader that moves are followed until the request timeout; every
other non-zero error code is raised as a ``BrokerError`` carrying its Kafka code.

An ``AdminClient`` makes its own ``ClusterClient`` from a bootstrap list, or works over one it is
given (the consumer's), which it then leaves open on ``close``. Its calls come in parts: the
groups' (offsets, descriptions, share groups) are here, topics and configs in
``topics_admin.py``, offsets, records and their deletion in ``records_admin.py``, ACLs and
credentials in ``security_admin.py``, transactions in ``transactions_admin.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgroup.assignors.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from kgroup.error_codes import ErrorCode
from kgroup.group_types import CLASSIC, CONSUMER, GROUP_TYPES, SHARE, STREAMS, DescribeApi, GroupType
from kgroup.wire.api_keys import ApiKey

from .cluster import BrokerInfo, ClusterClient, request_fields
from .connection import DEFAULT_TIMEOUT, Connection
from .errors import BrokerError, GroupNotEmpty, UnsupportedApi, error_code_of, raise_for
from .lifecycle import AsyncClient
from .moves_admin import MovesAdmin
from .records_admin import EARLIEST, LATEST, FetchedPartition, FetchedRecord, RecordsAdmin
from .security import ClientSecurity
from .security_admin import SecurityAdmin
from .token_admin import TokenAdmin
from .topics_admin import (  # noqa: F401 (the config constants are the admin client's too)
    BROKER_RESOURCE,
    CONFIG_DELETE,
    CONFIG_SET,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    ConfigEntry,
    TopicsAdmin,
)
from .transactions_admin import TransactionAdmin

__all__ = [
    "AdminClient",
    "BROKER_RESOURCE",
    "CONFIG_DELETE",
    "CONFIG_SET",
    "ConfigEntry",
    "EARLIEST",
    "FetchedPartition",
    "FetchedRecord",
    "GROUP_RESOURCE",
    "GroupDescription",
    "GroupListing",
    "LATEST",
    "MemberDescription",
    "TOPIC_RESOURCE",
]

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
    # The modern describe APIs only (None from DescribeGroups): the member's epoch; a consumer
    # group member's target assignment; and whether it speaks the consumer protocol (True) or
    # is a classic member of a consumer group (False), None where the broker does not say
    # (ConsumerGroupDescribe v1's MemberType, KIP-1099).
    member_epoch: int | None = None
    target_assignment: Mapping[str, tuple[int, ...]] | None = None
    upgraded: bool | None = None
    # A streams group member (StreamsGroupDescribe): its process, the topology epoch it runs,
    # and its tasks and target tasks by kind, "active" / "standby" / "warmup" -> subtopology
    # id -> partitions.
    process_id: str | None = None
    topology_epoch: int | None = None
    tasks: Mapping[str, Mapping[str, tuple[int, ...]]] | None = None
    target_tasks: Mapping[str, Mapping[str, tuple[int, ...]]] | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = ()
    error: ErrorCode = ErrorCode.NONE
    # Its kind's name (kgroup/group_types.py), as the API that described it tells: a classic
    # group (DescribeGroups: members carry their metadata and assignment bytes), a consumer
    # group (ConsumerGroupDescribe: assignments only, decoded), a share group
    # (ShareGroupDescribe: assignments only; a partition may be assigned to several members)
    # or a streams group (StreamsGroupDescribe: the source partitions of each member's active tasks)
    group_type: str = CLASSIC.name
    # The group epoch (ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe); None
    # for classic groups, whose generation DescribeGroups does not tell.
    epoch: int | None = None
    # The epoch of the group's target assignment (ConsumerGroupDescribe's AssignmentEpoch).
    assignment_epoch: int | None = None


def _topic_partitions(assignment: Any) -> dict[str, tuple[int, ...]] | None:
    """A describe API's Assignment as topic -> partitions (None: no assignment given)."""
    if assignment is None:
        return None
    return {tp.topic_name or str(tp.topic_id): tuple(sorted(tp.partitions)) for tp in assignment.topic_partitions}


# -- the client --------------------------------------------------------------------------


class AdminClient(AsyncClient, TopicsAdmin, RecordsAdmin, SecurityAdmin, TokenAdmin, MovesAdmin):
    """Admin operations against a Kafka-compatible cluster; use ``async with``.

    ``config`` takes the security settings (``client/security.py``: security.protocol,
    sasl.*, ssl.*); topic and config calls come from ``TopicsAdmin``, record calls from
    ``RecordsAdmin``, ACL and SCRAM credential calls from ``SecurityAdmin``."""

    def __init__(
        self,
        bootstrap: str | Sequence[str] = "127.0.0.1:9092",
        *,
        client_id: str = "kgroup-cli",
        timeout: float = DEFAULT_TIMEOUT,
        cluster: ClusterClient | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self._owns_cluster = cluster is None
        security = ClientSecurity.from_settings(config) if config else None
        self.cluster = cluster or ClusterClient(bootstrap, client_id=client_id, timeout=timeout, security=security)
        # ListTransactions, DescribeTransactions, DescribeProducers (transactions_admin.py).
        self.transactions = TransactionAdmin(self.cluster)

    async def start(self) -> None:
        """Connect (``async with`` does)."""
        await self.connect()

    async def connect(self) -> Connection:
        """Connect to a reachable broker of the bootstrap list."""
        return await self.cluster.connect()

    async def close(self) -> None:
        """Disconnect (unless the cluster was given: its owner closes it)."""
        if self._owns_cluster:
            await self.cluster.close()

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
                conn, ApiKey.LIST_GROUPS,
                request_fields(states_filter=list(states), types_filter=list(types))
            )
            raise_for(error_code_of(resp), f"list groups on {conn.address}")
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

        Each kind of the registry is asked with the API that describes it in full, the
        modern ones first (ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe:
        the only APIs that carry their members' assignments), and a group none of them knows (a classic group),
        or a broker without those APIs, with DescribeGroups — the order Kafka's own admin
        client uses.
        """
        describers = {DescribeApi.CONSUMER_GROUP_DESCRIBE: self._describe_consumer_group,
                      DescribeApi.SHARE_GROUP_DESCRIBE: self.describe_share_group,
                      DescribeApi.STREAMS_GROUP_DESCRIBE: self.describe_streams_group}
        for kind in GROUP_TYPES:
            if kind.describe_api is DescribeApi.DESCRIBE_GROUPS:
                continue
            try:
                described = await describers[kind.describe_api](group)
            except UnsupportedApi:
                continue
            if described is not None:
                return described
        return await self._describe_classic_group(group)

    async def _described(self, group: str, api: ApiKey, kind: str) -> Any | None:
        """The group as a modern group's describe API answers it (its `groups[0]`); None
        when the broker says there is no such group of that kind."""
        resp = await self._call_coordinator(
            group, api, request_fields(group_ids=[group], include_authorized_operations=False),
            lambda r: error_code_of(r.groups[0]) if r.groups else 0)
        g = resp.groups[0]
        if error_code_of(g) == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        raise_for(error_code_of(g), f"describe {kind} group {group!r}", g.error_message)
        return g

    async def describe_streams_group(self, group: str) -> GroupDescription | None:
        """A streams group's state and members (None: no such streams group), with
        StreamsGroupDescribe (KIP-1071). A member's assignment is the source partitions of its
        active tasks (task (s, p) reads partition p of subtopology s's source topics)."""
        g = await self._described(group, ApiKey.STREAMS_GROUP_DESCRIBE, STREAMS.name)
        if g is None:
            return None
        sources = {s.subtopology_id: (*s.source_topics, *(t.name for t in s.repartition_source_topics))
                   for s in (g.topology.subtopologies if g.topology is not None else ())}

        def partitions(tasks) -> dict[str, tuple[int, ...]]:
            out: dict[str, set[int]] = {}
            for t in tasks:
                for topic in sources.get(t.subtopology_id, ()):
                    out.setdefault(topic, set()).update(t.partitions)
            return {topic: tuple(sorted(ps)) for topic, ps in sorted(out.items())}

        def by_kind(a) -> dict[str, dict[str, tuple[int, ...]]]:
            return {kind: {t.subtopology_id: tuple(t.partitions) for t in getattr(a, f"{kind}_tasks")}
                    for kind in ("active", "standby", "warmup")}

        members = tuple(
            MemberDescription(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                client_host=m.client_host, metadata=b"", assignment_bytes=b"",
                assignment=partitions(m.assignment.active_tasks), member_epoch=int(m.member_epoch),
                process_id=m.process_id, topology_epoch=int(m.topology_epoch), tasks=by_kind(m.assignment), target_tasks=by_kind(m.target_assignment))
            for m in g.members
        )
        # protocol: the group's task assignor (v1's AssignorName), kafka-streams-groups.sh's ASSIGNOR.
        return GroupDescription(group_id=g.group_id, state=g.group_state, protocol_type=STREAMS.protocol_type,
                                protocol=getattr(g, "assignor_name", None) or "", members=members,
                                group_type=STREAMS.name, epoch=g.group_epoch, assignment_epoch=g.assignment_epoch)

    async def describe_share_group(self, group: str) -> GroupDescription | None:
        """A share group's state and members with their assignments (None: no such share
        group), with ShareGroupDescribe (KIP-932)."""
        return await self._partitions_group(group, ApiKey.SHARE_GROUP_DESCRIBE, SHARE)

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
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            request_fields(groups=[dict(group_id=group, topics=None)]),
            lambda r: error_code_of(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        raise_for(error_code_of(g), f"describe share group offsets of {group!r}", g.error_message)
        return {(t.topic_name, p.partition_index): (p.start_offset, getattr(p, "lag", -1))
                for t in g.topics for p in t.partitions}

    async def alter_share_group_offsets(self, group: str, offsets: Mapping[str, Mapping[int, int]]) -> None:
        """Set share partitions' start offsets (the share group must be empty)."""
        resp = await self._call_coordinator(
            group,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS,
            request_fields(group_id=group, topics=[
                dict(topic_name=t, partitions=[dict(partition_index=p, start_offset=o)
                                               for p, o in sorted(ps.items())])
                for t, ps in sorted(offsets.items())]),
            error_code_of,
        )
        raise_for(error_code_of(resp), f"alter share group offsets of {group!r}", resp.error_message)
        for t in resp.responses:
            for p in t.partitions:
                raise_for(error_code_of(p), f"alter share group offset of {t.topic_name}-{p.partition_index}")

    async def delete_share_group_offsets(self, group: str, topics: Sequence[str]) -> dict[str, ErrorCode]:
        """DeleteShareGroupOffsets: forget the share partitions' state of whole topics (the
        share group must be empty); topic -> its outcome (ErrorCode.NONE when deleted)."""
        resp = await self._call_coordinator(
            group,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            request_fields(group_id=group, topics=[dict(topic_name=t) for t in topics]),
            error_code_of,
        )
        raise_for(error_code_of(resp), f"delete share group offsets of {group!r}", resp.error_message)
        return {t.topic_name: ErrorCode(error_code_of(t)) for t in resp.responses}

    async def _describe_consumer_group(self, group: str) -> GroupDescription | None:
        return await self._partitions_group(group, ApiKey.CONSUMER_GROUP_DESCRIBE, CONSUMER)

    async def _partitions_group(self, group: str, api: ApiKey, kind: GroupType) -> GroupDescription | None:
        """A consumer or share group, whose members are assigned topic partitions, as its
        describe API answers (None: no such group of that kind)."""
        g = await self._described(group, api, kind.name)
        if g is None:
            return None
        members = tuple(
            MemberDescription(
                member_id=m.member_id, group_instance_id=getattr(m, "instance_id", None), client_id=m.client_id,
                client_host=m.client_host, metadata=b"", assignment_bytes=b"",
                assignment=_topic_partitions(m.assignment), member_epoch=int(m.member_epoch),
                target_assignment=_topic_partitions(getattr(m, "target_assignment", None)),
                upgraded={0: False, 1: True}.get(getattr(m, "member_type", -1)),
            )
            for m in g.members
        )
        target_epoch = getattr(g, "assignment_epoch", None)
        return GroupDescription(group_id=g.group_id, state=g.group_state, protocol_type=kind.protocol_type,
                                protocol=g.assignor_name, members=members, group_type=kind.name,
                                epoch=int(g.group_epoch),
                                assignment_epoch=None if target_epoch is None else int(target_epoch))

    async def _describe_classic_group(self, group: str) -> GroupDescription:
        resp = await self._call_coordinator(
            group,
            ApiKey.DESCRIBE_GROUPS,
            request_fields(groups=[group], include_authorized_operations=False),
            lambda r: error_code_of(r.groups[0]) if r.groups else 0,
        )
        g = resp.groups[0]
        raise_for(error_code_of(g), f"describe group {group!r}")
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
                ApiKey.DELETE_GROUPS,
                request_fields(groups_names=[group]),
                lambda r: error_code_of(r.results[0]) if r.results else 0,
            )
            for r in resp.results:
                raise_for(error_code_of(r), f"delete group {r.group_id!r}")

    async def remove_members(self, group: str, instance_ids: Sequence[str]) -> None:
        """Remove static members by group.instance.id (LeaveGroup v3+ batch)."""
        members = [
            {"member_id": "", "group_instance_id": i, "reason": "removed by kgroup admin"}
            for i in instance_ids
        ]
        resp = await self._call_coordinator(
            group, ApiKey.LEAVE_GROUP, request_fields(group_id=group, members=members), error_code_of, min_version=3
        )
        raise_for(error_code_of(resp), f"remove members from group {group!r}")
        for m in resp.members:
            raise_for(error_code_of(m), f"remove member {m.group_instance_id!r} from group {group!r}")

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
                return error_code_of(r.groups[0]) if r.groups else 0
            return error_code_of(r)

        resp = await self._call_coordinator(group, ApiKey.OFFSET_FETCH, body, error_of)
        raise_for(error_of(resp), f"fetch offsets of group {group!r}")
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
                raise_for(error_code_of(p), f"fetch offset of group {group!r} {t.name}-{p.partition_index}")
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
                    if error_code_of(p):
                        return error_code_of(p)
            return 0

        resp = await self._call_coordinator(group, ApiKey.OFFSET_COMMIT, body, first_error)
        for t in resp.topics:
            for p in t.partitions:
                code = error_code_of(p)
                if code in _GROUP_FENCED:
                    raise GroupNotEmpty(
                        f"group {group!r} refused the commit ({ErrorCode(code).name}): "
                        "it has active members"
                    )
                raise_for(code, f"commit offset of group {group!r} {t.name}-{p.partition_index}")

    async def delete_group_offsets(
        self, group: str, partitions: Mapping[str, Sequence[int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        """OffsetDelete: (topic, partition) -> its outcome (ErrorCode.NONE when deleted)."""
        body = request_fields(group_id=group, topics=[
            {"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in partitions.items()])
        resp = await self._call_coordinator(group, ApiKey.OFFSET_DELETE, body, error_code_of)
        raise_for(error_code_of(resp), f"delete offsets of group {group!r}")
        return {(t.name, int(p.partition_index)): ErrorCode(error_code_of(p)) for t in resp.topics for p in t.partitions}

    async def committed_leader_epochs(self, group: str) -> dict[tuple[str, int], int]:
        """The leader epoch committed with each offset of ``group`` (OffsetFetch v5+; -1 when
        the committer gave none), for `groups describe --offsets --verbose`."""
        body = request_fields(group_id=group, topics=None,
                              groups=[{"group_id": group, "topics": None, "member_id": None, "member_epoch": -1}])

        def error_of(r: Any) -> int:
            return (error_code_of(r.groups[0]) if r.groups else 0) if hasattr(r, "groups") else error_code_of(r)

        # Topics by name (v9 at most: v10 names them by id).
        resp = await self._call_coordinator(group, ApiKey.OFFSET_FETCH, body, error_of, min_version=5, max_version=9)
        raise_for(error_of(resp), f"fetch offsets of group {group!r}")
        topics = resp.groups[0].topics if hasattr(resp, "groups") else resp.topics
        return {(t.name, int(p.partition_index)): int(p.committed_leader_epoch)
                for t in topics or () for p in t.partitions if int(p.committed_offset) >= 0}


def _decode_assignment(protocol_type: str, data: bytes) -> Mapping[str, tuple[int, ...]] | None:
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not data:
        return {} if protocol_type == CONSUMER_PROTOCOL_TYPE else None
    try:
        from kgroup.assignors import decode_assignment

        return decode_assignment(data).as_dict()
    except Exception:  # not ConsumerProtocol bytes after all, or assignors unavailable
        return None

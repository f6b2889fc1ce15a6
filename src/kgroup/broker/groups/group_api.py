"""The group APIs on the wire: kio requests of any version -> core messages -> kio responses.

Each handler reads the fields its request version has (`get` for ones older versions lack),
routes to the shard that owns the group (by Kafka's hash of the group id), awaits the core's
reply and builds the response for the same version. A GroupError raised by the core becomes
that API's error response here, at the wire edge, and nowhere else.

In a cluster this node has a shard only for the group-metadata partitions it owns
(broker/cluster/ownership.py): a group of another partition is answered NOT_COORDINATOR (and
COORDINATOR_LOAD_IN_PROGRESS while this node is taking its partition over), and
FindCoordinator names the node that owns the group's partition (COORDINATOR_NOT_AVAILABLE
while it moves). ListGroups lists the groups this node coordinates, as in Kafka.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import replace
from typing import Any, Callable

from kgroup.acl_bindings import ResourceType
from kgroup.wire.kio_build import build, duration, get, hint, item, kio_error, ms
from kgroup.broker.security.authorized_operations import if_asked
from kgroup.broker.groups.offset_topics import shard_topics, unknown_partitions
from kgroup.broker.groups.shard import Shard
from kgroup.broker.groups.topic_ids import request_names, topic_key, topic_names
from kgroup.core import messages as m
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.wire import RequestHeader, response_class

# FindCoordinator key types: a group id, or a transactional id (which hashes to a shard the
# same way: the transaction coordinator lives beside the group coordinator).
GROUP_KEY, TRANSACTION_KEY = 0, 1


def group_operations(request: Any, error: int) -> int:
    """A described group's authorized operations: asked for and described without an
    error, every group operation (security/authorized_operations.py); else "not requested"."""
    return if_asked(get(request, "include_authorized_operations", False) and int(error) == 0, ResourceType.GROUP)


def commit_answer_topics(cls: type, topics: list[tuple[Any, str | None]], errors: dict[tuple[str, int], ErrorCode],
                         known: Any) -> tuple:
    """The ``topics`` of OffsetCommit response ``cls``, as Kafka builds them: by topic (name,
    or id from v10; a topic named twice is one entry); a topic in ``known`` (it exists) that
    names no partition is not in it (Kafka passes the group only the partitions it knows), one
    that does not exist is answered empty. ``topics``: the request's entries with their names
    (None: an id no topic has, each partition UNKNOWN_TOPIC_ID)."""
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    key = topic_key(int(cls.__version__))
    by_key: dict[Any, tuple[str | None, list]] = {}
    for t, name in topics:
        by_key.setdefault(getattr(t, key), (name, []))[1].extend(
            _commit_partition(part_cls, p.partition_index,
                              int(ErrorCode.UNKNOWN_TOPIC_ID if name is None else errors[(name, p.partition_index)]))
            for p in t.partitions)
    return tuple(build(topic_cls, **{key: k}, partitions=tuple(parts))
                 for k, (name, parts) in by_key.items() if parts or name not in known)


@functools.lru_cache(maxsize=1 << 16)
def _commit_partition(part_cls: type, index: int, error: int) -> Any:
    """One partition's entry of an OffsetCommit answer. kio's entities are frozen, so the
    answers share them: building a thousand per commit was a large part of its CPU."""
    return build(part_cls, partition_index=index, error_code=error)


class _NoHandlers:
    """Any core handler of a shard that is not here (the call never runs it)."""

    def __getattr__(self, name: str) -> None:
        return None


class _NotHere:
    """Stands for a shard this node does not serve: every call gets `error`."""

    coordinator = _NoHandlers()
    loaded = closed = False

    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    async def call(self, handler: Any, request: Any, *args: Any) -> Any:
        raise GroupError(self.error)


NOT_COORDINATOR = _NotHere(ErrorCode.NOT_COORDINATOR)
LOADING = _NotHere(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


# The default texts of the errors FindCoordinator v1-3 answers with (Kafka's exceptions').
_FIND_COORDINATOR_TEXT = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
}


class GroupApi:
    def __init__(self, shards: list[Shard | None], shard_for: Callable[[str], int], cluster: Any,
                 on_group_deleted: Callable[[str], None] | None = None) -> None:
        self.shards = shards
        self.shard_for = shard_for
        self.cluster = cluster
        # Called with a group id after DeleteGroups deleted it (share partitions forget it).
        self.on_group_deleted = on_group_deleted

    def shard_of(self, key: str) -> Shard | _NotHere:
        """The shard that coordinates a group id or a transactional id, or a stand-in that
        answers NOT_COORDINATOR (another node's) / COORDINATOR_LOAD_IN_PROGRESS (being
        taken over here) to every call."""
        p = self.shard_for(key)
        shard = self.shards[p]
        if shard is None:
            return LOADING if self.cluster.loading(p) else NOT_COORDINATOR
        return shard

    async def describe_each(self, group_ids: Any, handler: str,
                            failed: Callable[[str, GroupError], Any], *args: Any) -> list[tuple[Shard | _NotHere, Any]]:
        """Each group's description as its shard's coordinator ``handler`` gives it (or,
        where the shard refuses — another node's, loading —, ``failed(group id, error)``),
        with the shard, in request order: what every describe API of groups starts from.
        ``args`` go to the handler after the group ids (DescribeGroups: its version's rule)."""
        described = []
        for group_id in group_ids:
            shard = self.shard_of(group_id)
            try:
                (d,) = await shard.call(getattr(shard.coordinator, handler), (group_id,), *args)
            except GroupError as exc:
                d = failed(group_id, exc)
            described.append((shard, d))
        return described

    # ---- FindCoordinator ------------------------------------------------------------------

    async def find_coordinator(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        key_type = get(req, "key_type", 0)
        if header.api_version >= 4:
            keys = req.coordinator_keys
        else:
            keys = (req.key,)
        answers = []
        for key in keys:
            if key_type not in (GROUP_KEY, TRANSACTION_KEY):
                answers.append(dict(key=key, node_id=-1, host="", port=-1,
                                    error_code=ErrorCode.INVALID_REQUEST,
                                    error_message=f"unknown coordinator key type {key_type}"))
            else:
                answers.append(self._coordinator_of(key))
        if header.api_version >= 4:
            # Kafka 4.4 leaves a v4+ entry's message at "" (its default), errors included, but
            # for an unknown key type's INVALID_REQUEST, which says why.
            entity = item(cls, "coordinators")
            return build(cls, coordinators=tuple(build(entity, **{
                **a, "error_message": a["error_message"] if a["error_code"] == ErrorCode.INVALID_REQUEST else ""})
                for a in answers))
        (a,) = answers
        # v1-3: Kafka's message is the error's own text ("NONE" when there is none).
        a["error_message"] = a["error_message"] or _FIND_COORDINATOR_TEXT.get(a["error_code"], "NONE")
        return build(cls, **{k: v for k, v in a.items() if k != "key"})

    def _coordinator_of(self, group_id: str) -> dict:
        p = self.shard_for(group_id)
        shard = self.shards[p]
        node = self.cluster.leader(p)
        if (shard is not None and not shard.loaded) or (shard is None and self.cluster.loading(p)):
            error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        elif node is None:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        else:
            host, port = self.cluster.address(node)
            return dict(key=group_id, node_id=node, host=host, port=port, error_code=ErrorCode.NONE,
                        error_message=None)
        return dict(key=group_id, node_id=-1, host="", port=-1, error_code=error, error_message=None)

    # ---- JoinGroup ------------------------------------------------------------------------

    async def join_group(self, header: RequestHeader, req: Any, client_host: str = "") -> Any:
        v = header.api_version
        core_req = m.JoinGroupRequest(
            group_id=req.group_id,
            member_id=req.member_id,
            protocol_type=req.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
            session_timeout_ms=ms(req.session_timeout),
            rebalance_timeout_ms=ms(get(req, "rebalance_timeout", -1)),
            group_instance_id=get(req, "group_instance_id"),
            client_id=header.client_id or "",
            client_host=client_host,
            api_version=v,
            reason=get(req, "reason"),
        )
        shard = self.shard_of(core_req.group_id)
        try:
            resp = await shard.call(shard.coordinator.join_group, core_req)
        except GroupError as exc:
            resp = m.JoinGroupResponse(exc.code, member_id=req.member_id)
        cls = response_class(header.api_key, v)
        member_cls = item(cls, "members")
        return build(
            cls,
            error_code=resp.error,
            generation_id=resp.generation_id,
            protocol_type=resp.protocol_type,
            protocol_name=resp.protocol_name if resp.protocol_name is not None or v >= 7 else "",
            leader=resp.leader,
            skip_assignment=resp.skip_assignment,
            member_id=resp.member_id,
            members=tuple(build(member_cls, member_id=x.member_id, group_instance_id=x.group_instance_id,
                                metadata=x.metadata) for x in resp.members),
        )

    # ---- SyncGroup ------------------------------------------------------------------------

    async def sync_group(self, header: RequestHeader, req: Any) -> Any:
        if header.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            # From v5 both are mandatory: Kafka refuses a null one before any group check.
            return build(response_class(header.api_key, header.api_version),
                         error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        core_req = m.SyncGroupRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            group_instance_id=get(req, "group_instance_id"),
            protocol_type=get(req, "protocol_type"),
            protocol_name=get(req, "protocol_name"),
            assignments=tuple((a.member_id, bytes(a.assignment)) for a in req.assignments),
        )
        shard = self.shard_of(core_req.group_id)
        try:
            resp = await shard.call(shard.coordinator.sync_group, core_req)
        except GroupError as exc:
            resp = m.SyncGroupResponse(exc.code)
        return build(response_class(header.api_key, header.api_version), error_code=resp.error,
                     protocol_type=resp.protocol_type, protocol_name=resp.protocol_name,
                     assignment=resp.assignment)

    # ---- Heartbeat ------------------------------------------------------------------------

    async def heartbeat(self, header: RequestHeader, req: Any) -> Any:
        core_req = m.HeartbeatRequest(req.group_id, req.generation_id, req.member_id,
                                      get(req, "group_instance_id"))
        shard = self.shard_of(core_req.group_id)
        try:
            resp = await shard.call(shard.coordinator.heartbeat, core_req)
            error = resp.error
        except GroupError as exc:
            error = exc.code
        return _heartbeat_answer(header.api_key, header.api_version, int(error))

    # ---- LeaveGroup -----------------------------------------------------------------------

    async def leave_group(self, header: RequestHeader, req: Any) -> Any:
        v = header.api_version
        if v >= 3:
            leaving = tuple(m.LeavingMember(x.member_id, x.group_instance_id, get(x, "reason"))
                            for x in req.members)
        else:
            leaving = (m.LeavingMember(req.member_id),)
        shard = self.shard_of(req.group_id)
        cls = response_class(header.api_key, v)
        try:
            resp = await shard.call(shard.coordinator.leave_group, m.LeaveGroupRequest(req.group_id, leaving))
        except GroupError as exc:
            return build(cls, error_code=exc.code)
        if v < 3:
            # One member: its own outcome is the request's.
            return build(cls, error_code=resp.members[0].error if resp.members else resp.error)
        member_cls = item(cls, "members")
        return build(cls, error_code=resp.error, members=tuple(
            build(member_cls, member_id=x.member_id, group_instance_id=x.group_instance_id, error_code=x.error)
            for x in resp.members))

    # ---- OffsetCommit ---------------------------------------------------------------------

    async def offset_commit(self, header: RequestHeader, req: Any) -> Any:
        v = header.api_version
        shard = self.shard_of(req.group_id)
        # v10 names topics by id: each becomes its topic's name (groups/topic_ids.py).
        named = request_names(req.topics, v, shard_topics(shard))
        partitions = tuple(
            m.OffsetCommitPartition(
                topic=name, partition=p.partition_index, offset=p.committed_offset,
                leader_epoch=get(p, "committed_leader_epoch", -1), metadata=p.committed_metadata,
            )
            for t, name in named if name is not None for p in t.partitions
        )
        retention = get(req, "retention_time", -1)
        core_req = m.OffsetCommitRequest(
            group_id=req.group_id,
            generation_id=req.generation_id_or_member_epoch,
            member_id=req.member_id,
            partitions=partitions,
            group_instance_id=get(req, "group_instance_id"),
            retention_time_ms=ms(retention) if retention is not None else -1,
            api_version=v,
        )
        # Partitions that do not exist (or whose topic id no topic has) are answered here and
        # never reach the group (groups/offset_topics.py); with none left the group is not
        # asked at all.
        errors = unknown_partitions(shard, ((p.topic, p.partition) for p in partitions))
        if errors:
            core_req = replace(core_req, partitions=tuple(p for p in partitions
                                                          if (p.topic, p.partition) not in errors))
        unknown_ids = any(name is None and t.partitions for t, name in named)
        if core_req.partitions or not (errors or unknown_ids):
            try:
                resp = await shard.call(shard.coordinator.commit_offsets, core_req)
                errors.update({(e.topic, e.partition): e.error for e in resp.partitions})
            except GroupError as exc:
                errors.update({(p.topic, p.partition): exc.code for p in core_req.partitions})
        cls = response_class(header.api_key, v)
        return build(cls, topics=commit_answer_topics(cls, named, errors, shard_topics(shard) or {}))

    # ---- OffsetFetch ----------------------------------------------------------------------

    async def offset_fetch(self, header: RequestHeader, req: Any) -> Any:
        v = header.api_version
        cls = response_class(header.api_key, v)
        # v7+ RequireStable (KIP-447): partitions a transaction is committing answer
        # UNSTABLE_OFFSET_COMMIT, and the client asks again.
        stable = bool(get(req, "require_stable", False))
        if v >= 8:
            group_cls = item(cls, "groups")
            groups = []
            for g in req.groups:
                error, topics = await self._fetch_one(g.group_id, g.topics, item(group_cls, "topics"),
                                                      get(g, "member_id"), get(g, "member_epoch", -1), stable,
                                                      group_level=True)
                groups.append(build(group_cls, group_id=g.group_id, topics=topics, error_code=error))
            return build(cls, groups=tuple(groups))
        error, topics = await self._fetch_one(req.group_id, req.topics, item(cls, "topics"), require_stable=stable)
        return build(cls, topics=topics, error_code=error)

    async def _fetch_one(self, group_id: str, topics: Any, topic_cls: type, member_id: str | None = None,
                         member_epoch: int = -1, require_stable: bool = False,
                         group_level: bool = False) -> tuple[ErrorCode, tuple]:
        """One group's offsets; a group's error (v8+: `group_level`) lists no partitions, as
        Kafka 4.4 answers (tests/streams/test_streams_differential.py). From v10 topics are
        ids (groups/topic_ids.py): an id no topic has answers UNKNOWN_TOPIC_ID per partition."""
        shard = self.shard_of(group_id)
        v = int(topic_cls.__version__)
        key = topic_key(v)
        named = None if topics is None else request_names(topics, v, shard_topics(shard))
        listed = None if named is None else tuple(
            (name, p) for t, name in named if name is not None for p in t.partition_indexes)
        part_cls = item(topic_cls, "partitions")

        def answer(t: Any, partitions: Any) -> Any:
            return build(topic_cls, **{key: getattr(t, key)}, partitions=tuple(partitions))

        def failed(p: int, code: ErrorCode) -> Any:
            return build(part_cls, partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                         metadata="", error_code=code)
        try:
            resp = await shard.call(shard.coordinator.fetch_offsets,
                                    m.OffsetFetchRequest(group_id, listed, require_stable, member_id=member_id or None,
                                                         member_epoch=member_epoch))
        except GroupError as exc:
            if named is None or group_level:
                return exc.code, ()
            return exc.code, tuple(answer(t, (failed(p, exc.code) for p in t.partition_indexes)) for t, _ in named)
        by_topic: dict[str, list] = {}
        for f in resp.partitions:
            by_topic.setdefault(f.topic, []).append(build(
                part_cls, partition_index=f.partition, committed_offset=f.offset,
                committed_leader_epoch=f.leader_epoch, metadata=f.metadata, error_code=f.error))
        if named is not None:
            # Kafka answers each topic asked for, in the request's order, even one naming no partition.
            found = {(t, int(p.partition_index)): p for t, ps in by_topic.items() for p in ps}
            return resp.error, tuple(
                answer(t, (failed(p, ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes) if name is None
                       else (found[(name, p)] for p in t.partition_indexes if (name, p) in found))
                for t, name in named)
        if key == "name":
            return resp.error, tuple(build(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
        # Every topic by id: a name no topic has now (offsets kept from before a deletion was
        # seen) has no id to answer with and is left out.
        names = topic_names(shard_topics(shard))
        return resp.error, tuple(build(topic_cls, topic_id=names.id_of(t), partitions=tuple(ps))
                                 for t, ps in by_topic.items() if names.id_of(t) is not None)

    # ---- OffsetDelete ---------------------------------------------------------------------

    async def offset_delete(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        listed = tuple((t.name, p.partition_index) for t in req.topics for p in t.partitions)
        shard = self.shard_of(req.group_id)
        unknown = unknown_partitions(shard, listed)
        try:
            resp = await shard.call(shard.coordinator.delete_offsets, m.OffsetDeleteRequest(
                req.group_id, tuple(tp for tp in listed if tp not in unknown)))
        except GroupError as exc:
            return build(cls, error_code=exc.code)
        errors = {**unknown, **{(e.topic, e.partition): e.error for e in resp.partitions}}
        topic_cls = item(cls, "topics")
        part_cls = item(topic_cls, "partitions")
        return build(cls, error_code=resp.error, topics=tuple(
            build(topic_cls, name=t.name, partitions=tuple(
                build(part_cls, partition_index=p.partition_index,
                      error_code=errors[(t.name, p.partition_index)]) for p in t.partitions))
            for t in req.topics))

    # ---- DescribeGroups / ListGroups / DeleteGroups ---------------------------------------

    async def describe_groups(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        group_cls = item(cls, "groups")
        member_cls = item(group_cls, "members")
        described = []
        # v6 (KIP-1043): a group that is missing or of another kind is GROUP_ID_NOT_FOUND, not Dead.
        missing_as_error = header.api_version >= 6
        for _, d in await self.describe_each(req.groups, "describe_groups",
                                             lambda group_id, exc: m.DescribedGroup(group_id, exc.code, "", "", ""),
                                             missing_as_error):
            described.append(build(
                group_cls, error_code=d.error, error_message=d.error_message, group_id=d.group_id, group_state=d.state,
                protocol_type=d.protocol_type, protocol_data=d.protocol,
                authorized_operations=group_operations(req, d.error),
                members=tuple(build(member_cls, member_id=x.member_id, group_instance_id=x.group_instance_id,
                                    client_id=x.client_id, client_host=x.client_host,
                                    member_metadata=x.metadata, member_assignment=x.assignment)
                              for x in d.members)))
        return build(cls, groups=tuple(described))

    async def list_groups(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        group_cls = item(cls, "groups")
        core_req = m.ListGroupsRequest(tuple(get(req, "states_filter", ()) or ()),
                                       tuple(get(req, "types_filter", ()) or ()))
        listed, error = await self.from_every_shard("list_groups", core_req)
        return build(cls, error_code=error, groups=tuple(
            build(group_cls, group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                  group_type=g.group_type) for g in sorted(listed, key=lambda g: g.group_id)))

    async def from_every_shard(self, handler: str, request: Any) -> tuple[list, ErrorCode]:
        """What every loaded shard's `handler` answers (each answers a list), and
        COORDINATOR_LOAD_IN_PROGRESS if some shard is still loading (ListGroups and
        ListTransactions ask them all)."""
        found: list = []
        error = ErrorCode.NONE
        for p, shard in enumerate(self.shards):
            if shard is None:
                if self.cluster.loading(p):
                    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                continue
            if not shard.loaded:
                error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                continue
            try:
                found.extend(await shard.call(getattr(shard.coordinator, handler), request))
            except GroupError:
                continue  # handed over or lost meanwhile: what it holds is listed elsewhere
        return found, error

    async def delete_groups(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "results")
        results = []
        for group_id in req.groups_names:
            shard = self.shard_of(group_id)
            try:
                (r,) = await shard.call(shard.coordinator.delete_groups, (group_id,))
                error = r.error
                if error is ErrorCode.NONE and self.on_group_deleted is not None:
                    self.on_group_deleted(group_id)
            except GroupError as exc:
                error = exc.code
            results.append(build(result_cls, group_id=group_id, error_code=error))
        return build(cls, results=tuple(results))


# ---- consumer protocol (KIP-848) ----------------------------------------------------------


def _uuid_partitions(partitions) -> tuple:
    """Core assignments (topic id strings) -> (UUID, partitions) pairs for kio."""
    return tuple((uuid.UUID(t), ps) for t, ps in partitions)


class ConsumerGroupApi:
    """ConsumerGroupHeartbeat and ConsumerGroupDescribe over the same shards."""

    def __init__(self, groups: GroupApi) -> None:
        self.groups = groups

    async def heartbeat(self, header: RequestHeader, req: Any, client_host: str = "") -> Any:
        owned = None
        if req.topic_partitions is not None:
            owned = tuple((str(tp.topic_id), tuple(sorted(tp.partitions))) for tp in req.topic_partitions
                          if tp.topic_id is not None)
        core_req = m.ConsumerGroupHeartbeatRequest(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
            instance_id=req.instance_id, rack_id=req.rack_id,
            rebalance_timeout_ms=ms(req.rebalance_timeout),
            subscribed_topic_names=None if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names),
            subscribed_topic_regex=get(req, "subscribed_topic_regex"),
            server_assignor=req.server_assignor, owned=owned,
            client_id=header.client_id or "", client_host=client_host, api_version=header.api_version,
        )
        shard = self.groups.shard_of(core_req.group_id)
        cls = response_class(header.api_key, header.api_version)
        try:
            resp = await shard.call(shard.coordinator.consumer_group_heartbeat, core_req)
        except GroupError as exc:
            # Kafka's error answer leaves the epoch at its default, 0.
            return build(cls, error_code=exc.code, error_message=exc.message or None, member_id=None,
                         member_epoch=0, heartbeat_interval=0, assignment=None)
        assignment = None
        if resp.assignment is not None:
            asg_cls = field_class(cls, "assignment")
            tp_cls = item(asg_cls, "topic_partitions")
            assignment = build(asg_cls, topic_partitions=tuple(
                build(tp_cls, topic_id=t, partitions=ps) for t, ps in _uuid_partitions(resp.assignment)))
        return consumer_heartbeat_answer(cls, resp.error, resp.error_message, resp.member_id, resp.member_epoch,
                                         resp.heartbeat_interval_ms, assignment)

    async def describe(self, header: RequestHeader, req: Any) -> Any:
        def topic_names(shard: Any) -> dict[str, str]:
            topics = shard.coordinator.shard.topics if isinstance(shard, Shard) else {}
            return {topic_id: name for name, (topic_id, _) in topics.items()}

        def member(member_cls: type, x: Any, assignment: Callable[[Any], Any]) -> Any:
            return build(
                member_cls, member_id=x.member_id, instance_id=x.instance_id, rack_id=x.rack_id,
                member_epoch=x.member_epoch, client_id=x.client_id, client_host=x.client_host,
                subscribed_topic_names=x.subscribed_topic_names,
                subscribed_topic_regex=x.subscribed_topic_regex or "",   # Kafka: "" when none
                assignment=assignment(x.assignment), target_assignment=assignment(x.target_assignment),
                member_type=x.member_type)

        return await describe_modern_groups(
            self.groups, header, req, "consumer_group_describe",
            lambda group_id, exc: m.DescribedConsumerGroup(group_id, exc.code), topic_names, member)


async def describe_modern_groups(groups: GroupApi, header: RequestHeader, req: Any, handler: str,
                                 failed: Callable[[str, GroupError], Any],
                                 topic_names: Callable[[Any], dict[str, str]],
                                 member: Callable[[type, Any, Callable[[Any], Any]], Any]) -> Any:
    """A ConsumerGroupDescribe or ShareGroupDescribe answer: each group as its shard's
    coordinator ``handler`` describes it (``failed``: see ``GroupApi.describe_each``), its
    group-level fields from ``described_group`` and each member as ``member(member class,
    described member, assignment)`` builds it, where ``assignment(partitions)`` names the
    topics by ``topic_names(shard)`` (topic id -> name)."""
    cls = response_class(header.api_key, header.api_version)
    group_cls = item(cls, "groups")
    member_cls = item(group_cls, "members")
    assignment = described_assignment(member_cls)
    described = []
    for shard, d in await groups.describe_each(req.group_ids, handler, failed):
        names = topic_names(shard)

        def named(partitions: Any, names: dict[str, str] = names) -> Any:
            return assignment(partitions, names)
        # A share group's description carries no message of its own.
        described.append(build(group_cls, **described_group(req, d, getattr(d, "message", None)),
                               members=tuple(member(member_cls, x, named) for x in d.members)))
    return build(cls, throttle_time=0, groups=tuple(described))


def described_group(req: Any, d: Any, message: str | None = None) -> dict[str, Any]:
    """The group-level fields of a ConsumerGroupDescribe or ShareGroupDescribe answer from
    the core's description ``d``; an unknown group gets Kafka's words (which the kafka-*-groups.sh
    tools print) unless the core gave a ``message``."""
    missing = d.error == ErrorCode.GROUP_ID_NOT_FOUND
    return dict(error_code=d.error, error_message=message or (f"Group {d.group_id} not found." if missing else None),
                group_id=d.group_id, group_state=d.state, group_epoch=d.epoch,
                assignment_epoch=d.assignment_epoch, assignor_name=d.assignor,
                authorized_operations=group_operations(req, d.error))


def described_assignment(member_cls: type) -> Callable[[Any, dict[str, str]], Any]:
    """How a describe answer of a consumer or share group builds a member's assignment from
    (topic id, partitions) pairs: each topic named too (clients print the assignment by
    name; ``names``: topic id -> name)."""
    asg_cls = field_class(member_cls, "assignment")
    tp_cls = item(asg_cls, "topic_partitions")

    def assignment(partitions: Any, names: dict[str, str]) -> Any:
        return build(asg_cls, topic_partitions=tuple(
            build(tp_cls, topic_id=uuid.UUID(t), topic_name=names.get(t, ""), partitions=ps)
            for t, ps in partitions))
    return assignment


# A zero throttle time, made once: every heartbeat answer carries it.
NO_THROTTLE = duration(0)


def consumer_heartbeat_answer(cls: type, error: int, message: str | None, member_id: str | None, epoch: int,
                              interval_ms: int, assignment: Any) -> Any:
    """A ConsumerGroupHeartbeat answer (v0 and v1 have these fields), made directly: `build`
    by name was ~10% of a steady heartbeat's CPU. test_consumer_heartbeat_answer checks it equals
    `build`'s."""
    return cls(throttle_time=NO_THROTTLE, error_code=kio_error(int(error)), error_message=message,
               member_id=member_id, member_epoch=epoch, heartbeat_interval=duration(interval_ms),
               assignment=assignment)


@functools.cache
def _heartbeat_answer(api_key: int, version: int, error: int) -> Any:
    """A Heartbeat answer holds only its error (and a zero throttle time): one shared
    instance per version and error instead of one built per heartbeat (kio's entities are
    frozen; a throttle makes a new one with `replace`)."""
    return build(response_class(api_key, version), error_code=error)


@functools.cache
def field_class(cls: type, name: str) -> type:
    """The entity class of a single (non-tuple, maybe optional) entity field."""
    import typing

    annotated = hint(cls, name)
    for candidate in (annotated, *typing.get_args(annotated)):
        if isinstance(candidate, type) and hasattr(candidate, "__dataclass_fields__"):
            return candidate
    raise TypeError(f"{cls.__name__}.{name} is not an entity field")

"""The share-group coordinator APIs on the wire (KIP-932): ShareGroupHeartbeat,
ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets (share/apis.py: the versions served).

Each reads its kio request, routes to the shard that coordinates the group, and builds the
response; a GroupError from the core becomes the API's error response here. What the group
coordinator decides that the share partitions must act on goes through `ShareFetchService`
(a member that leaves releases its records at once; altered or deleted state is loaded
again): a local call today, a request to the partition's node in a cluster.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kgroup.broker.groups.group_api import GroupApi, describe_modern_groups, field_class
from kgroup.broker.cluster.peers import PeerUnavailable
from kgroup.broker.data.context import NOT_LEADER
from kgroup.broker.groups.offset_topics import unknown_in
from kgroup.broker.share.share_fetch import ShareFetchService
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.storage.errors import TopicError
from kgroup.core.share_messages import (
    SHARE_LEAVE_EPOCH,
    AlterShareOffsetsRequest,
    DeleteShareOffsetsRequest,
    DescribedShareGroup,
    DescribeShareOffsetsRequest,
    ShareGroupHeartbeatRequest,
    ShareOffset,
    ShareOffsetsResponse,
)
from kgroup.wire import RequestHeader, request_class, response_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item


# ListOffsets as a node asks a partition's leader for its end offset (lag on another node).
LIST_OFFSETS_VERSION = 6
_UNKNOWN_TEXT = "This server does not host this topic-partition."
_UNEXPECTED_TEXT = "The server experienced an unexpected error when processing the request."


def state_read_refuses(topics: Any, ids: dict[str, str]) -> bool:
    """Whether Kafka 4.4 fails a DescribeShareGroupOffsets group (UNKNOWN_SERVER_ERROR): a
    topic that exists named with no partition or with a negative one (its share-state
    summary read refuses them)."""
    return any(t.topic_name in ids and (not t.partitions or min(t.partitions) < 0) for t in topics)


def alter_answer_topics(cls: type, topics: Any, unknown: dict[tuple[str, int], ErrorCode], ids: dict[str, str],
                        error: ErrorCode) -> tuple:
    """The ``responses`` of AlterShareGroupOffsets response ``cls``, as Kafka answers by
    partition: a topic naming none is not answered, a topic named twice is answered once
    with the partitions of both; an unknown partition's error carries the error's text."""
    topic_cls = item(cls, "responses")
    part_cls = item(topic_cls, "partitions")
    by_name: dict[str, list] = {}
    for t in topics:
        by_name.setdefault(t.topic_name, []).extend(
            build(part_cls, partition_index=p.partition_index,
                  error_code=unknown.get((t.topic_name, p.partition_index), error),
                  error_message=_UNKNOWN_TEXT if (t.topic_name, p.partition_index) in unknown else None)
            for p in t.partitions)
    return tuple(build(topic_cls, topic_name=name, topic_id=uuid.UUID(ids[name]) if name in ids else None,
                       partitions=tuple(parts))
                 for name, parts in by_name.items() if parts)

class ShareGroupApi:
    def __init__(self, groups: GroupApi, fetches: ShareFetchService) -> None:
        self.groups = groups
        self.fetches = fetches

    def _topics(self, shard) -> dict[str, tuple[str, int]]:
        """The broker's topics (name -> (id, partitions)), as the coordinator sees them; read
        from the data dir, so a group coordinated by another node gets its error, not a crash."""
        return {name: (str(meta.topic_id), meta.partitions) for name, meta in self.fetches.data.topics().items()}

    # ---- ShareGroupHeartbeat ------------------------------------------------------------------

    async def heartbeat(self, header: RequestHeader, req: Any, client_host: str = "") -> Any:
        core_req = ShareGroupHeartbeatRequest(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch, rack_id=req.rack_id,
            subscribed_topic_names=None if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names),
            client_id=header.client_id or "", client_host=client_host)
        shard = self.groups.shard_of(core_req.group_id)
        cls = response_class(header.api_key, header.api_version)
        try:
            resp = await shard.call(shard.coordinator.share_group_heartbeat, core_req)
        except GroupError as exc:
            # Kafka's error answer leaves the epoch at its default, 0.
            return build(cls, throttle_time=0, error_code=exc.code, error_message=exc.message or None,
                         member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None)
        if core_req.member_epoch == SHARE_LEAVE_EPOCH:
            self.fetches.member_left(core_req.group_id, core_req.member_id)
        assignment = None
        if resp.assignment is not None:
            asg_cls = field_class(cls, "assignment")
            tp_cls = item(asg_cls, "topic_partitions")
            assignment = build(asg_cls, topic_partitions=tuple(
                build(tp_cls, topic_id=uuid.UUID(t), partitions=ps) for t, ps in resp.assignment))
        return build(cls, throttle_time=0, error_code=resp.error, error_message=resp.error_message,
                     member_id=resp.member_id, member_epoch=resp.member_epoch,
                     heartbeat_interval=resp.heartbeat_interval_ms, assignment=assignment)

    # ---- ShareGroupDescribe -------------------------------------------------------------------

    async def describe(self, header: RequestHeader, req: Any) -> Any:
        def topic_names(shard: Any) -> dict[str, str]:
            return {tid: name for name, (tid, _) in self._topics(shard).items()}

        def member(member_cls: type, x: Any, assignment: Callable[[Any], Any]) -> Any:
            return build(member_cls, member_id=x.member_id, rack_id=x.rack_id, member_epoch=x.member_epoch,
                         client_id=x.client_id, client_host=x.client_host,
                         subscribed_topic_names=x.subscribed_topic_names, assignment=assignment(x.assignment))

        return await describe_modern_groups(
            self.groups, header, req, "share_group_describe",
            lambda group_id, exc: DescribedShareGroup(group_id, exc.code), topic_names, member)

    # ---- share-group offsets ------------------------------------------------------------------

    async def describe_offsets(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        group_cls = item(cls, "groups")
        topic_cls = item(group_cls, "topics")
        part_cls = item(topic_cls, "partitions")
        out = []
        for g in req.groups:
            shard = self.groups.shard_of(g.group_id)
            topics = self._topics(shard)
            ids = {name: tid for name, (tid, _) in topics.items()}
            names = {tid: name for name, tid in ids.items()}
            wanted = None
            if g.topics is not None:
                if state_read_refuses(g.topics, ids):
                    out.append(build(group_cls, group_id=g.group_id, topics=(),
                                     error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=_UNEXPECTED_TEXT))
                    continue
                wanted = tuple((ids[t.topic_name], p) for t in g.topics if t.topic_name in ids for p in t.partitions)
            try:
                resp: ShareOffsetsResponse = await shard.call(shard.coordinator.describe_share_offsets,
                                                              DescribeShareOffsetsRequest(g.group_id, wanted))
            except GroupError as exc:
                out.append(build(group_cls, group_id=g.group_id, topics=(), error_code=exc.code,
                                 error_message=exc.message or None))
                continue
            by_topic: dict[str, list] = {}
            for o in resp.offsets:
                if o.topic_id not in names:
                    continue            # a topic that does not exist: answered below, as Kafka does
                # The partition's leader epoch, always 0 in kgroup (metadata_api.py), as Kafka names it.
                by_topic.setdefault(o.topic_id, []).append(build(
                    # Leader epochs are always 0 here (metadata_api.py): a partition with share
                    # state was written at epoch 0, as Kafka reports it; none without state.
                    part_cls, partition_index=o.partition, start_offset=o.start_offset,
                    leader_epoch=0 if o.initialized else -1,
                    lag=await self._lag(names[o.topic_id], o),
                    error_code=ErrorCode.NONE))
            found = [build(topic_cls, topic_name=names[t], topic_id=uuid.UUID(t), partitions=tuple(ps))
                     for t, ps in by_topic.items()]
            # Kafka answers a topic that does not exist with no offset and no error.
            found += [build(topic_cls, topic_name=t.topic_name, topic_id=None, partitions=tuple(
                build(part_cls, partition_index=p, start_offset=-1, leader_epoch=0, lag=-1, error_code=ErrorCode.NONE)
                for p in t.partitions)) for t in g.topics or () if t.topic_name not in ids]
            out.append(build(group_cls, group_id=g.group_id, error_code=ErrorCode.NONE, error_message=None,
                             topics=tuple(found)))
        return build(cls, throttle_time=0, groups=tuple(out))

    async def _lag(self, topic: str, offset: ShareOffset) -> int:
        """KIP-1226's lag of a share partition: the log's end minus the start offset minus the
        offsets past it already acknowledged or archived, all from the persisted state (so a
        partition whose state is not loaded here is answered alike); -1 without state."""
        if offset.start_offset < 0:
            return -1
        try:
            end = self.fetches.data.partition_log(topic, offset.partition).log_end_offset
        except NOT_LEADER:
            # Led by another node (a cluster): its end offset, asked there as Kafka's group
            # coordinator asks the leaders (ListOffsets, latest).
            end = await self._remote_end(topic, offset.partition)
            if end is None:
                return -1
        except TopicError:
            return -1
        return end - offset.start_offset - offset.delivery_complete

    async def _remote_end(self, topic: str, partition: int) -> int | None:
        """The end offset of a partition another node leads; None if it cannot be asked."""
        remote, cluster = self.fetches.store.remote, self.fetches.cluster
        meta = self.fetches.data.topics().get(topic)
        if remote is None or cluster is None or meta is None or partition >= len(meta.slots):
            return None
        node = cluster.leader(meta.slots[partition])
        if node is None:
            return None
        cls = request_class(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION)
        topic_cls = item(cls, "topics")
        request = build(cls, replica_id=-1, isolation_level=0, topics=(build(topic_cls, name=topic, partitions=(
            build(item(topic_cls, "partitions"), partition_index=partition, current_leader_epoch=-1,
                  timestamp=-1),)),))
        try:
            resp = await remote.peers.request(node, ApiKey.LIST_OFFSETS, request)
        except PeerUnavailable:
            return None
        for t in resp.topics:
            for p in t.partitions:
                if int(p.partition_index) == partition and int(p.error_code) == 0:
                    return int(p.offset)
        return None

    async def _reset(self, handler_of, group_id: str, request: Any) -> tuple[ErrorCode, str | None, Any]:
        """Run an offsets reset on the group's coordinator; share partitions then reload.
        (error, message, the coordinator's answer or None)."""
        shard = self.groups.shard_of(group_id)
        try:
            resp = await shard.call(handler_of(shard.coordinator), request)
        except GroupError as exc:
            return exc.code, exc.message or None, None
        self.fetches.state_reset(group_id)
        return ErrorCode.NONE, None, resp

    def _topic_ids(self, group_id: str) -> dict[str, str]:
        return {name: tid for name, (tid, _) in self._topics(self.groups.shard_of(group_id)).items()}

    async def alter_offsets(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        topics = self._topics(self.groups.shard_of(req.group_id))
        ids = {name: tid for name, (tid, _) in topics.items()}
        # Partitions that do not exist are answered here and go no further; with no topic it
        # has named the group is not asked (so not created), as Kafka does (groups/offset_topics.py).
        unknown = unknown_in(topics, ((t.topic_name, p.partition_index) for t in req.topics for p in t.partitions))
        offsets = tuple((ids[t.topic_name], p.partition_index, p.start_offset)
                        for t in req.topics for p in t.partitions if (t.topic_name, p.partition_index) not in unknown)
        if not req.group_id:
            return build(cls, throttle_time=0, error_code=ErrorCode.INVALID_GROUP_ID,
                         error_message="The group id is invalid.", responses=())
        if any(t.topic_name in ids and p.partition_index < 0 for t in req.topics for p in t.partitions):
            # Kafka makes the group, then fails the whole request on a negative partition of a
            # topic it has (its share-state write refuses it).
            error, message, _ = await self._reset(lambda c: c.alter_share_offsets, req.group_id,
                                                  AlterShareOffsetsRequest(req.group_id, ()))
            return build(cls, throttle_time=0, error_code=ErrorCode.UNKNOWN_SERVER_ERROR if error is ErrorCode.NONE
                         else error, error_message=_UNEXPECTED_TEXT if error is ErrorCode.NONE else message,
                         responses=())
        error, message = ErrorCode.NONE, None
        if offsets or any(t.topic_name in ids and t.partitions for t in req.topics):
            # (Kafka makes the group once a topic it has is named, whatever its partitions.)
            error, message, _ = await self._reset(lambda c: c.alter_share_offsets, req.group_id,
                                                  AlterShareOffsetsRequest(req.group_id, offsets))
        return build(cls, throttle_time=0, error_code=error, error_message=message,
                     responses=alter_answer_topics(cls, req.topics, unknown, ids, error))

    async def delete_offsets(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        topic_cls = item(cls, "responses")
        ids = self._topic_ids(req.group_id)
        wanted = tuple(ids[t.topic_name] for t in req.topics if t.topic_name in ids)
        error, message, resp = await self._reset(lambda c: c.delete_share_offsets, req.group_id,
                                                 DeleteShareOffsetsRequest(req.group_id, wanted))
        if error is not ErrorCode.NONE:
            # The request failed as a whole (no such group, members in it): no topic answers.
            return build(cls, throttle_time=0, error_code=error, error_message=message, responses=())
        # A topic the group holds no share state for is unknown to it, as Kafka answers.
        held = {o.topic_id for o in resp.offsets}
        return build(cls, throttle_time=0, error_code=error, error_message=message, responses=tuple(
            build(topic_cls, topic_name=t.topic_name,
                  topic_id=uuid.UUID(ids[t.topic_name]) if ids.get(t.topic_name) in held else None,
                  error_code=ErrorCode.NONE if ids.get(t.topic_name) in held else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                  error_message=None if ids.get(t.topic_name) in held else _UNKNOWN_TEXT)
            for t in req.topics))

"""The share coordinator's persister APIs (KIP-932), served by the node that keeps a share
group's state: Initialize/Read/Write/Delete ShareGroupState and ReadShareGroupStateSummary.

How this works: kgroup keeps a share group's share-partition states in the group's
metadata partition (share_state.py), so the node owning that partition is the group's share
coordinator. A partition leader on another node reads and writes its share partitions'
state with these requests (remote_share_state.py sends them); each partition is answered
from the owning shard, NOT_COORDINATOR where this node does not own it (the sender looks
the owner up again and retries) and COORDINATOR_LOAD_IN_PROGRESS while it is taken over.
A write is answered once it is durable, as Kafka's share coordinator answers after its
records are committed. Kafka answers a partition without state on Read with state epoch
and start offset -1 (its "uninitialized" partition); so does kgroup. Only brokers send
these (CLUSTER_ACTION on the cluster, share/guards.py).
"""

from __future__ import annotations

import uuid
from typing import Any, Awaitable, Callable

from kgroup.broker.groups.group_api import GroupApi
from kgroup.broker.groups.shard import Shard
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import ShareStateBatch, ShareStateValue
from kgroup.core.share_messages import ShareStateKey, WriteShareStateRequest
from kgroup.core.share_protocol import delivery_complete
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, has, item

E = ErrorCode


class ShareStateApi:
    """The persister requests, each partition answered from the shard owning its group."""

    def __init__(self, groups: GroupApi) -> None:
        self.groups = groups

    def _shard(self, group_id: str) -> Shard:
        shard = self.groups.shard_of(group_id)
        if not isinstance(shard, Shard):
            raise GroupError(shard.error)
        return shard

    async def _each(self, header: RequestHeader, req: Any, answer: Callable[[Shard, str, Any], Awaitable[dict]]) -> Any:
        """Answer every partition of the request with `answer(shard, topic id, partition)`'s
        fields, or its error. The writes are submitted in request order before any waits."""
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "results")
        part_cls = item(result_cls, "partitions")
        group_id = req.group_id or ""
        pending: list[tuple[Any, int, Any]] = []
        # Kafka 4.4 answers a request without a group id with no results at all.
        for t in req.topics if group_id else ():
            for p in t.partitions:
                try:
                    if t.topic_id is None:
                        raise GroupError(E.INVALID_REQUEST, "The topic id is missing.")
                    pending.append((t.topic_id, int(p.partition), answer(self._shard(group_id), str(t.topic_id), p)))
                except GroupError as exc:
                    pending.append((t.topic_id, int(p.partition), exc))
        by_topic: dict[uuid.UUID, list] = {}
        for topic_id, partition, what in pending:
            if isinstance(what, GroupError):
                fields: dict = {"error_code": what.code, "error_message": what.message or what.code.name}
            else:
                try:
                    fields = {"error_code": E.NONE, "error_message": None, **await what}
                except GroupError as exc:
                    fields = {"error_code": exc.code, "error_message": exc.message or exc.code.name}
            by_topic.setdefault(topic_id, []).append(_partition(part_cls, partition, fields))
        return build(cls, results=tuple(build(result_cls, topic_id=t, partitions=tuple(ps))
                                        for t, ps in by_topic.items()))

    async def initialize_share_group_state(self, header: RequestHeader, req: Any) -> Any:
        def answer(shard: Shard, topic_id: str, p: Any) -> Awaitable[dict]:
            value = ShareStateValue(int(p.state_epoch), int(p.start_offset))
            reply = shard.submit(shard.coordinator.write_share_state,
                                 WriteShareStateRequest(req.group_id, topic_id, int(p.partition), value, initialize=True))
            return _written(shard, reply)
        return await self._each(header, req, answer)

    async def write_share_group_state(self, header: RequestHeader, req: Any) -> Any:
        def answer(shard: Shard, topic_id: str, p: Any) -> Awaitable[dict]:
            value = ShareStateValue(int(p.state_epoch), int(p.start_offset), tuple(
                ShareStateBatch(int(b.first_offset), int(b.last_offset), int(b.delivery_state), int(b.delivery_count))
                for b in p.state_batches))
            reply = shard.submit(shard.coordinator.write_share_state,
                                 WriteShareStateRequest(req.group_id, topic_id, int(p.partition), value,
                                                        leader_epoch=int(p.leader_epoch)))
            return _written(shard, reply)
        return await self._each(header, req, answer)

    async def delete_share_group_state(self, header: RequestHeader, req: Any) -> Any:
        def answer(shard: Shard, topic_id: str, p: Any) -> Awaitable[dict]:
            reply = shard.submit(shard.coordinator.delete_share_state,
                                 ShareStateKey(req.group_id, topic_id, int(p.partition)))
            return _written(shard, reply)
        return await self._each(header, req, answer)

    async def read_share_group_state(self, header: RequestHeader, req: Any) -> Any:
        def answer(shard: Shard, topic_id: str, p: Any) -> Awaitable[dict]:
            return _read(shard, ShareStateKey(req.group_id, topic_id, int(p.partition)), summary=False)
        return await self._each(header, req, answer)

    async def read_share_group_state_summary(self, header: RequestHeader, req: Any) -> Any:
        def answer(shard: Shard, topic_id: str, p: Any) -> Awaitable[dict]:
            return _read(shard, ShareStateKey(req.group_id, topic_id, int(p.partition)), summary=True)
        return await self._each(header, req, answer)


async def _written(shard: Shard, reply: Any) -> dict:
    await shard.wait(reply)
    return {}


async def _read(shard: Shard, key: ShareStateKey, summary: bool) -> dict:
    value: ShareStateValue | None = await shard.call(shard.coordinator.read_share_state, key)
    if value is None:
        return {"state_epoch": -1, "start_offset": -1, "state_batches": (), "leader_epoch": -1,
                "delivery_complete_count": -1}
    return {"state_epoch": value.state_epoch, "start_offset": value.start_offset, "leader_epoch": 0,
            "delivery_complete_count": delivery_complete(value),
            "state_batches": () if summary else value.batches}


def _partition(part_cls: type, partition: int, fields: dict) -> Any:
    """One partition of an answer, with the fields its version has."""
    kwargs: dict = {"partition": partition}
    for name in ("error_code", "error_message", "state_epoch", "start_offset", "leader_epoch",
                 "delivery_complete_count"):
        if has(part_cls, name):
            kwargs[name] = fields.get(name, -1 if name != "error_message" else None)
    if has(part_cls, "state_batches"):
        batch_cls = item(part_cls, "state_batches")
        kwargs["state_batches"] = tuple(build(batch_cls, first_offset=b.first_offset, last_offset=b.last_offset,
                                              delivery_state=b.state, delivery_count=b.delivery_count)
                                        for b in fields.get("state_batches", ()))
    return build(part_cls, **kwargs)


"""A share partition's state kept by another node: the partition leader's side of Kafka's
share-state persister (KIP-932), over cluster/peers.py.

How this works: when the node that owns a share group's metadata partition (its share
coordinator, share_state_api.py) is not this one, share_state.py sends the partition's
state there: ReadShareGroupState v0 when the share partition is loaded,
InitializeShareGroupState v0 when it has no state yet, WriteShareGroupState v1 for every
change. The owner is read from the shared ownership (no FindCoordinator round trip); an
answer NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE, or a peer
that cannot be reached, makes the sender look the owner up again and retry with a short
backoff for up to RETRY_FOR_S, across a takeover of the coordinator (and, if the group's
partition came to this node meanwhile, the write goes to the local shard). Writes of one
share partition go one after another, in the order they were made, so a retried older
state never lands after a newer one. FENCED_STATE_EPOCH (the state was reset meanwhile)
is not retried: the leader reloads the partition, as it does locally. Reads and writes carry
the topic partition's leader epoch as this leader loaded it (share_fetch.py); the
coordinator refuses a write older than the newest it keeps (FENCED_LEADER_EPOCH, final too):
another node has led the partition since.

The group's configs (lock duration, delivery limit, ...) are the group coordinator's: its
dynamic ones (set with IncrementalAlterConfigs, source GROUP_CONFIG) are asked of the owner
with DescribeConfigs when a share partition loads here and again at most once a second
while it runs (share_state.py), over the broker's settings for the group (its
`[group.overrides]` and defaults), so a change reaches another node's leader within about a
second. Membership is the coordinator's too: on another node a share session opens for
the member id its ShareFetch names, without asking the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Awaitable, Callable

from kgroup.broker.cluster.peers import PeerUnavailable, Peers
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.group_configs import ConfigSource
from kgroup.core.records import ShareStateBatch, ShareStateValue
from kgroup.core.share_protocol import delivery_complete
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item

log = logging.getLogger("kgroup.broker.share")
E = ErrorCode

RETRY_FOR_S = 20.0
_RETRIABLE = {E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE}
READ_VERSION, INITIALIZE_VERSION, WRITE_VERSION = 0, 0, 1
# DescribeConfigs of the group's configs (KIP-848's GROUP resource, type 32, from v4 on).
DESCRIBE_CONFIGS_VERSION, GROUP_RESOURCE = 4, 32


class MovedHere(Exception):
    """The group's metadata partition is this node's now: use the local shard."""


class RemoteShareState:
    """Read and write share-partition state at the group's share coordinator on another node."""

    def __init__(self, peers: Peers, owner_of: Callable[[str], int | None]) -> None:
        self.peers = peers
        # The node owning a group's metadata partition now (None while it moves).
        self.owner_of = owner_of
        self._last_write: dict[tuple[str, str, int], asyncio.Task] = {}

    async def _send(self, group_id: str, api_key: ApiKey, request: Any) -> Any:
        """The one partition result of `request`, retried across takeovers; GroupError
        with its code if it fails for good; MovedHere if the owner is this node."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RETRY_FOR_S
        backoff = 0.05
        while True:
            node = self.owner_of(group_id)
            if node == self.peers.node_id:
                raise MovedHere()
            code, message = E.COORDINATOR_NOT_AVAILABLE, "the share coordinator moves"
            if node is not None:
                try:
                    resp = await self.peers.request(node, api_key, request)
                    (result,) = resp.results
                    (part,) = result.partitions
                    code = ErrorCode(int(part.error_code))
                    if code is E.NONE:
                        return part
                    message = part.error_message
                except PeerUnavailable as exc:
                    message = str(exc)
            if code not in _RETRIABLE or loop.time() + backoff > deadline:
                raise GroupError(code, message)
            log.info("share state of group %s at node %s: %s; retrying", group_id, node, code.name)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 0.5)

    async def group_configs(self, group_id: str) -> tuple[tuple[str, str], ...] | None:
        """The group's dynamic configs at its coordinator ((name, value) pairs); None if it
        cannot be asked now (it moves, is unreachable or answers an error): keep what is known."""
        node = self.owner_of(group_id)
        if node is None or node == self.peers.node_id:
            return None
        cls = request_class(ApiKey.DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_VERSION)
        request = build(cls, include_synonyms=False, include_documentation=False, resources=(
            build(item(cls, "resources"), resource_type=GROUP_RESOURCE, resource_name=group_id,
                  configuration_keys=None),))
        try:
            resp = await self.peers.request(node, ApiKey.DESCRIBE_CONFIGS, request)
        except PeerUnavailable:
            return None
        (result,) = resp.results
        if int(result.error_code) != 0:
            return None
        return tuple((c.name, c.value) for c in result.configs
                     if int(c.config_source) == ConfigSource.GROUP_CONFIG and c.value is not None)

    async def read(self, group_id: str, topic_id: str, partition: int,
                   leader_epoch: int = -1) -> ShareStateValue | None:
        cls = request_class(ApiKey.READ_SHARE_GROUP_STATE, READ_VERSION)
        topic_cls = item(cls, "topics")
        request = build(cls, group_id=group_id, topics=(build(topic_cls, topic_id=uuid.UUID(topic_id), partitions=(
            build(item(topic_cls, "partitions"), partition=partition, leader_epoch=leader_epoch),)),))
        part = await self._send(group_id, ApiKey.READ_SHARE_GROUP_STATE, request)
        if int(part.state_epoch) < 0 or int(part.start_offset) < 0:
            return None                         # Kafka's uninitialized partition
        return ShareStateValue(int(part.state_epoch), int(part.start_offset), tuple(
            ShareStateBatch(int(b.first_offset), int(b.last_offset), int(b.delivery_state), int(b.delivery_count))
            for b in part.state_batches))

    async def initialize(self, group_id: str, topic_id: str, partition: int, value: ShareStateValue) -> None:
        cls = request_class(ApiKey.INITIALIZE_SHARE_GROUP_STATE, INITIALIZE_VERSION)
        topic_cls = item(cls, "topics")
        request = build(cls, group_id=group_id, topics=(build(topic_cls, topic_id=uuid.UUID(topic_id), partitions=(
            build(item(topic_cls, "partitions"), partition=partition, state_epoch=value.state_epoch,
                  start_offset=value.start_offset),)),))
        await self._send(group_id, ApiKey.INITIALIZE_SHARE_GROUP_STATE, request)

    def write(self, group_id: str, topic_id: str, partition: int, value: ShareStateValue, leader_epoch: int,
              local: Callable[[], Awaitable[Any]]) -> asyncio.Task:
        """Send the state after the partition's previous write, with the leader epoch this
        leader loaded the partition at (a later leader's write fences it); the task to await
        for it (`local`: the write at this node's shard, if the group's partition came here)."""
        key = (group_id, topic_id, partition)
        previous = self._last_write.get(key)
        task = asyncio.get_running_loop().create_task(
            self._write_after(previous, group_id, topic_id, partition, value, leader_epoch, local))
        self._last_write[key] = task

        def done(t: asyncio.Task) -> None:
            if self._last_write.get(key) is t:
                del self._last_write[key]
            if not t.cancelled():
                t.exception()               # retrieved: the awaiting caller logs it

        task.add_done_callback(done)
        return task

    async def _write_after(self, previous: asyncio.Task | None, group_id: str, topic_id: str, partition: int,
                           value: ShareStateValue, leader_epoch: int, local: Callable[[], Awaitable[Any]]) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        cls = request_class(ApiKey.WRITE_SHARE_GROUP_STATE, WRITE_VERSION)
        topic_cls = item(cls, "topics")
        part_cls = item(topic_cls, "partitions")
        batch_cls = item(part_cls, "state_batches")
        request = build(cls, group_id=group_id, topics=(build(topic_cls, topic_id=uuid.UUID(topic_id), partitions=(
            build(part_cls, partition=partition, state_epoch=value.state_epoch, leader_epoch=leader_epoch,
                  start_offset=value.start_offset, delivery_complete_count=delivery_complete(value),
                  state_batches=tuple(build(batch_cls, first_offset=b.first_offset, last_offset=b.last_offset,
                                            delivery_state=b.state, delivery_count=b.delivery_count)
                                      for b in value.batches)),)),))
        try:
            await self._send(group_id, ApiKey.WRITE_SHARE_GROUP_STATE, request)
        except MovedHere:
            await local()

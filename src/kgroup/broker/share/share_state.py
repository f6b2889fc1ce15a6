"""Where share-partition state is kept: the one seam between the share partitions (served
where their topic partition is) and the group coordinator that persists their state.

How this works, and why: as in Kafka, the in-flight window of a share partition (which
records are acquired, by whom, until when) lives in memory beside its topic partition, in
broker/share/share_fetch.py, because every ShareFetch and ShareAcknowledge for that partition
goes to the node that serves it. What must survive a crash (the start offset and the runs
of acknowledged, archived and available offsets with their delivery counts) is written
through this seam as a `ShareStateRecord` into the group-metadata log partition of the
*group* (Kafka's share-group state topic plays this part; it hashes (group, topic,
partition), we hash the group id). Keeping a group's share-partition states with the group
means that the group coordinator answers DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets and DeleteGroups from its own shard, without a fan-out, and the
state moves with the group's coordinator like everything else in that log (replayed on
load, carried in snapshots). The cost: one busy group's writes land on one metadata
partition, as its offset commits do.

The seam is a local call into the group's shard (`Shard.submit`, which appends in call
order, then `wait` for durability) when this node owns the group's metadata partition. In a
cluster it may be owned by another node: then the seam sends Kafka's persister requests
there (remote_share_state.py: Read/Initialize/WriteShareGroupState over cluster/peers.py,
served by share_state_api.py), retried across takeovers, so a share partition is served by
its topic partition's leader wherever the group is coordinated. A node never appends to a
metadata partition it does not own (the shard's own fence check holds for the rest); while
this node is taking the partition over, calls raise COORDINATOR_LOAD_IN_PROGRESS. A write
carries the state epoch it was read at, and the coordinator refuses a stale one
(FENCED_STATE_EPOCH), which is also how a reset by AlterShareGroupOffsets reaches a running
share partition.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, Callable

from kgroup.broker.groups.shard import Shard
from kgroup.broker.share.remote_share_state import RemoteShareState, MovedHere
from kgroup.core.group_configs import GroupConfig
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import ShareStateValue
from kgroup.core.share_messages import ShareStateKey, WriteShareStateRequest
from kgroup.core.share_configs import ShareConfigs
from kgroup.core.share_partition import ShareLimits

# How often a share partition led here asks its group's coordinator on another node for the
# group's dynamic configs (remote_share_state.py).
CONFIGS_REFRESH_S = 1.0


class ShareStateStore:
    """Read and write share-partition state in the owning group's metadata shard, here or
    (with `remote`) on the node that owns it."""

    def __init__(self, shard_of: Callable[[str], Any], remote: RemoteShareState | None = None,
                 config: GroupConfig | None = None) -> None:
        # The group API's lookup (`GroupApi.shard_of`): the one place that knows which shard
        # coordinates a group here, and what stands in for one served elsewhere.
        self.shard_of = shard_of
        self.remote = remote
        # A group coordinated elsewhere runs its share partitions here with the broker's
        # settings for it (remote_share_state.py says why).
        # Its dynamic configs are the coordinator's, copied into `remote_configs` when a share
        # partition loads and refreshed at most every CONFIGS_REFRESH_S while it runs.
        self.remote_configs: dict[str, tuple[tuple[str, str], ...]] = {}
        self.configured = ShareConfigs(SimpleNamespace(config=config or GroupConfig(),
                                                       stored=SimpleNamespace(group_configs=self.remote_configs)))
        self._configs_asked: dict[str, float] = {}
        self._configs_tasks: set[asyncio.Task] = set()

    def _shard(self, group_id: str) -> Shard | None:
        """The group's shard, served here; None if another node owns it and its state is
        reached there; GroupError if it cannot be reached (or is still loading here)."""
        shard = self.shard_of(group_id)
        if not isinstance(shard, Shard):
            if shard.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            if self.remote is not None:
                return None
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"the state of share group {group_id} is kept by another node")
        if shard.closed:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"the state of share group {group_id} is kept by another node")
        if not shard.loaded:
            raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return shard

    async def read(self, group_id: str, topic_id: str, partition: int,
                   leader_epoch: int = -1) -> ShareStateValue | None:
        """The persisted state (None: the share partition has none yet); `leader_epoch`: the
        topic partition's, as this leader loads it (sent to another node's coordinator)."""
        shard = self._shard(group_id)
        if shard is None:
            try:
                await self._fetch_configs(group_id)
                return await self.remote.read(group_id, topic_id, partition, leader_epoch)
            except MovedHere:
                raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) from None
        return await shard.call(shard.coordinator.read_share_state, ShareStateKey(group_id, topic_id, partition))

    async def initialize(self, group_id: str, topic_id: str, partition: int, value: ShareStateValue) -> None:
        """The first state of a share partition that has none."""
        if self._shard(group_id) is None:
            try:
                await self.remote.initialize(group_id, topic_id, partition, value)
            except MovedHere:
                raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) from None
            return
        await self.write(group_id, topic_id, partition, value)

    def write(self, group_id: str, topic_id: str, partition: int, value: ShareStateValue,
              leader_epoch: int = -1) -> Any:
        """Append the state now (in call order) and return what to await for its durability.
        Raises GroupError (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH: `leader_epoch`, the one
        this leader loaded the partition at, is older than a later leader's;
        COORDINATOR_LOAD_IN_PROGRESS) at once, here; at another node's coordinator, from the
        awaitable."""
        shard = self._shard(group_id)
        if shard is None:
            return self.remote.write(group_id, topic_id, partition, value, leader_epoch,
                                     lambda: self.write(group_id, topic_id, partition, value, leader_epoch))
        reply = shard.submit(shard.coordinator.write_share_state,
                             WriteShareStateRequest(group_id, topic_id, partition, value, leader_epoch=leader_epoch))
        return shard.wait(reply)

    def membership(self, group_id: str, member_id: str) -> ErrorCode:
        """NONE if `member_id` is a member of share group `group_id`, else why not
        (GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID). Read where the group is coordinated; a
        group coordinated on another node is not asked (remote_share_state.py)."""
        shard = self._shard(group_id)
        return ErrorCode.NONE if shard is None else shard.coordinator.share.membership(group_id, member_id)

    # ---- the group's configs (read where the group is coordinated) --------------------------

    def _configs(self, group_id: str) -> ShareConfigs:
        shard = self._shard(group_id)
        if shard is not None:
            return shard.coordinator.share.configs
        self._refresh_configs(group_id)
        return self.configured

    async def _fetch_configs(self, group_id: str) -> None:
        """Copy the group's dynamic configs from its coordinator (kept as they were if it
        cannot be asked now)."""
        self._configs_asked[group_id] = time.monotonic()
        found = await self.remote.group_configs(group_id)
        if found is not None:
            self.remote_configs[group_id] = found

    def _refresh_configs(self, group_id: str) -> None:
        """Ask again in the background once CONFIGS_REFRESH_S has passed since the last time:
        the value read now is the one known, a change applies from the next read."""
        if time.monotonic() - self._configs_asked.get(group_id, 0.0) < CONFIGS_REFRESH_S:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._configs_asked[group_id] = time.monotonic()
        task = loop.create_task(self._fetch_configs(group_id))
        self._configs_tasks.add(task)
        task.add_done_callback(self._configs_tasks.discard)

    def limits(self, group_id: str) -> ShareLimits:
        return self._configs(group_id).limits(group_id)

    def auto_offset_reset(self, group_id: str) -> str:
        return self._configs(group_id).auto_offset_reset(group_id)

    def dead_letter_queue(self, group_id: str) -> tuple[str | None, bool]:
        """The group's dead-letter topic (None: none) and whether values are copied (KIP-1191)."""
        configs = self._configs(group_id)
        return configs.dead_letter_topic(group_id), configs.dead_letter_copy(group_id)

    def renew_acknowledge_enabled(self, group_id: str) -> bool:
        return self._configs(group_id).renew_acknowledge_enabled(group_id)

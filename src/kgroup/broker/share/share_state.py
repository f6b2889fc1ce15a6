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
order, then `wait` for durability). In a cluster the group's metadata partition may be owned
by another node, or be moving: then every call raises GroupError — COORDINATOR_NOT_AVAILABLE
(another node owns it; clients retry) or COORDINATOR_LOAD_IN_PROGRESS (this node is taking
it over) — and nothing is written, so a node never appends to a metadata partition it does
not own (the shard's own fence check holds for the rest). Served across nodes, the calls
would become Kafka's ReadShareGroupState/WriteShareGroupState requests to the owner; that is not done yet, so in a cluster a share group is served on the partitions led
by its coordinator's node. A write carries the state epoch it was read at, and the
coordinator refuses a stale one (FENCED_STATE_EPOCH), which is also how a reset by
AlterShareGroupOffsets reaches a running share partition.
"""

from __future__ import annotations

from typing import Any, Callable

from kgroup.broker.groups.shard import Shard
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import ShareStateValue
from kgroup.core.share_messages import ShareStateKey, WriteShareStateRequest
from kgroup.core.share_partition import ShareLimits


class ShareStateStore:
    """Read and write share-partition state in the owning group's metadata shard."""

    def __init__(self, shard_of: Callable[[str], Any]) -> None:
        # The group API's lookup (`GroupApi.shard_of`): the one place that knows which shard
        # coordinates a group here, and what stands in for one served elsewhere.
        self.shard_of = shard_of

    def _shard(self, group_id: str) -> Shard:
        """The group's shard, served here; GroupError if another node owns it (or it is
        still loading here)."""
        shard = self.shard_of(group_id)
        if not isinstance(shard, Shard):
            if shard.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            # The partition leader is not the coordinator's node: its clients retry elsewhere.
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"the state of share group {group_id} is kept by another node")
        if shard.closed:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"the state of share group {group_id} is kept by another node")
        if not shard.loaded:
            raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return shard

    async def read(self, group_id: str, topic_id: str, partition: int) -> ShareStateValue | None:
        """The persisted state (None: the share partition has none yet)."""
        shard = self._shard(group_id)
        return await shard.call(shard.coordinator.read_share_state, ShareStateKey(group_id, topic_id, partition))

    def write(self, group_id: str, topic_id: str, partition: int, value: ShareStateValue) -> Any:
        """Append the state now (in call order) and return what to await for its durability.
        Raises GroupError (FENCED_STATE_EPOCH, COORDINATOR_LOAD_IN_PROGRESS) at once."""
        shard = self._shard(group_id)
        reply = shard.submit(shard.coordinator.write_share_state,
                             WriteShareStateRequest(group_id, topic_id, partition, value))
        return shard.wait(reply)

    def membership(self, group_id: str, member_id: str) -> ErrorCode:
        """NONE if `member_id` is a member of share group `group_id`, else why not
        (GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID). Read where the group is coordinated
        (GroupError if that is not here)."""
        return self._shard(group_id).coordinator.share.membership(group_id, member_id)

    # ---- the group's configs (read where the group is coordinated) --------------------------

    def limits(self, group_id: str) -> ShareLimits:
        return self._shard(group_id).coordinator.share.configs.limits(group_id)

    def auto_offset_reset(self, group_id: str) -> str:
        return self._shard(group_id).coordinator.share.configs.auto_offset_reset(group_id)

    def dead_letter_queue(self, group_id: str) -> tuple[str | None, bool]:
        """The group's dead-letter topic (None: none) and whether values are copied (KIP-1191)."""
        configs = self._shard(group_id).coordinator.share.configs
        return configs.dead_letter_topic(group_id), configs.dead_letter_copy(group_id)

    def renew_acknowledge_enabled(self, group_id: str) -> bool:
        return self._shard(group_id).coordinator.share.configs.renew_acknowledge_enabled(group_id)

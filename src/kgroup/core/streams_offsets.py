"""Offsets of streams groups (KIP-1071): who may commit and fetch, by member epoch.

Kafka 4.4 fences a streams member's commits by *assignment epochs*: each active task a member
holds carries the epoch at which it was assigned, and a commit sent with an older member
epoch is still accepted for the partitions of tasks assigned at or before it (the member was
already running them). So a member whose epoch moved on while a commit was in flight does
not lose it, and a member can never commit for a task it was not given. OffsetFetch with a
member must name the member's current epoch. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.streams_group import StreamsGroup


def check_commit(group: StreamsGroup, member_id: str, instance_id: str | None, member_epoch: int,
                 api_version: int, partitions: Iterable[tuple[str, int]], transactional: bool) -> None:
    """An offset commit of a streams group member (Kafka 4.4's StreamsGroup.validateOffsetCommit):
    the member must exist, its epoch not be ahead, and each committed partition be a
    source of a task it holds (or is revoking) since an epoch no later than the one sent."""
    if member_epoch < 0 and not group.members:
        return                                     # an admin commit to an empty group
    if transactional and member_epoch < 0 and not member_id and instance_id is None:
        return
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                      f"{group.group_id}.")
    if not transactional and api_version < 9:
        raise GroupError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by "
                                                        "members using the streams group protocol")
    if member_epoch > member.epoch:
        raise GroupError(ErrorCode.STALE_MEMBER_EPOCH, f"Received member epoch {member_epoch} is newer than "
                                                       f"current member epoch {member.epoch}.")
    if member_epoch == member.epoch:
        return
    topology = group.topology
    by_topic = {}
    for s in (topology.subtopologies if topology else ()):
        for topic in (*s.source_topics, *(t.name for t in s.repartition_source_topics)):
            by_topic[topic] = s.subtopology_id
    epochs = {(s, p): e for s, p, e in (*member.current.active, *member.current.pending_active)}
    for topic, partition in partitions:
        subtopology = by_topic.get(topic)
        if subtopology is None:
            raise GroupError(ErrorCode.STALE_MEMBER_EPOCH, f"Topic {topic} is not part of the topology.")
        assigned_at = epochs.get((subtopology, partition))
        if assigned_at is None:
            raise GroupError(ErrorCode.STALE_MEMBER_EPOCH, f"Task {subtopology}-{partition} is not assigned or "
                                                           f"pending revocation for member.")
        if member_epoch < assigned_at:
            raise GroupError(ErrorCode.STALE_MEMBER_EPOCH,
                             f"Received member epoch {member_epoch} is older than assignment epoch {assigned_at} "
                             f"for task {subtopology}-{partition}.")

def check_fetch(group: StreamsGroup, member_id: str | None, member_epoch: int) -> None:
    """OffsetFetch with a member: it must exist at that epoch (Kafka's validateOffsetFetch)."""
    if not member_id and member_epoch < 0:
        return
    member = group.members.get(member_id or "")
    if member is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                      f"{group.group_id}.")
    if member_epoch != member.epoch:
        raise GroupError(ErrorCode.STALE_MEMBER_EPOCH, f"The received member epoch {member_epoch} does not "
                                                       f"match the expected member epoch {member.epoch}.")

"""Read-only views of the coordinator's groups, for the log, the web console and /metrics.

The one place outside the request path that reads a shard's group objects: what
DescribeGroups, ConsumerGroupDescribe and ShareGroupDescribe would answer (state,
generation or group epoch, members with client id, host and assignment) and each group's
positions (committed offsets; a share group's share-partition start offsets), as plain
frozen values. Every kind of the registry (kgroup/group_types.py) is read the same way,
through the core's kind bindings (core/kinds.py): a classic group's members from its
runtime state, a modern group's (consumer, share) from its members' metadata and current
assignments. Nothing here changes a group or runs a handler; it runs on the event loop
between requests, so what it reads is consistent.

A classic member's assignment is ConsumerProtocol bytes, valid once its group is Stable;
before that (mid-rebalance) the caller's last known assignment is used (`known`). Decoded
assignments are cached by their bytes object, so a group viewed again costs no decoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from kgroup.assignors.consumer_protocol import ConsumerProtocolError, decode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.kinds import find_group, live_groups
from kgroup.group_types import Positions

# The classic protocol type whose assignments are ConsumerProtocol bytes.
CONSUMER_PROTOCOL_TYPE = "consumer"
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int | None                      # modern groups only
    partitions: tuple[TopicPartition, ...] | None  # None: not decodable (not ConsumerProtocol)


@dataclass(frozen=True, slots=True)
class GroupView:
    group_id: str
    kind: str                                     # its kind's name (group_types.py)
    protocol_type: str
    protocol: str                                 # the chosen assignor (classic: when Stable)
    state: str
    generation: int                               # classic generation or group epoch
    members: tuple[MemberView, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupSummaryView:
    group_id: str
    kind: str
    protocol_type: str
    state: str
    generation: int
    members: int


Known = Callable[[str, str], "tuple[TopicPartition, ...] | None"]


def _protocol_type(group: Any) -> str:
    """What ListGroups says of a group: its kind's protocol type, or its members' own."""
    return group.TYPE.protocol_type or group.protocol_type


class GroupViews:
    """Views over the coordinators of every shard."""

    def __init__(self, coordinators: Callable[[], Iterable[GroupCoordinatorShard]]) -> None:
        self._coordinators = coordinators
        self._decoded: dict[bytes, tuple[TopicPartition, ...] | None] = {}

    def coordinators(self) -> Iterator[GroupCoordinatorShard]:
        return iter(self._coordinators())

    # ---- lists ---------------------------------------------------------------------------

    def summaries(self) -> list[GroupSummaryView]:
        """Every live group, of every kind, sorted by id."""
        out = []
        for c in self.coordinators():
            for group in live_groups(c.shard):
                state, generation = group.status()
                out.append(GroupSummaryView(group.group_id, group.TYPE.name, _protocol_type(group), state,
                                            generation, len(group.members)))
        out.sort(key=lambda s: s.group_id)
        return out

    def committed(self) -> Iterator[tuple[str, dict[TopicPartition, int]]]:
        """(group id, (topic, partition) -> position) of every group with positions: committed
        offsets, or a share group's share-partition start offsets."""
        for c in self.coordinators():
            stored = c.shard.stored
            for group_id, offsets in stored.offsets.items():
                yield group_id, {tp: v.offset for tp, v in offsets.items()}
            for group_id in stored.share_states:
                yield group_id, _share_positions(c, group_id)

    # ---- one group -----------------------------------------------------------------------

    def _find(self, group_id: str) -> tuple[GroupCoordinatorShard, Any] | None:
        for c in self.coordinators():
            group = find_group(c.shard, group_id)
            if group is not None:
                return c, group
        return None

    def group(self, group_id: str, known: Known | None = None) -> GroupView | None:
        """The group as the coordinator holds it now; None if there is no such group."""
        found = self._find(group_id)
        if found is None:
            return None
        return self._view(*found, known)

    def committed_of(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's positions (see `committed`)."""
        for c in self.coordinators():
            group = find_group(c.shard, group_id)
            if group is not None and group.TYPE.positions is Positions.SHARE_STATE:
                return _share_positions(c, group_id)
            offsets = c.shard.stored.offsets.get(group_id)
            if offsets is not None:
                return {tp: v.offset for tp, v in offsets.items()}
            if group_id in c.shard.stored.share_states:
                return _share_positions(c, group_id)
        return {}

    def dead_letter_topic(self, group_id: str) -> str | None:
        """A share group's dead-letter topic (KIP-1191's errors.deadletterqueue.topic.name)."""
        for c in self.coordinators():
            group = find_group(c.shard, group_id)
            if group is not None and group.TYPE.positions is Positions.SHARE_STATE:
                return c.share.configs.dead_letter_topic(group_id)
        return None

    def all_in(self, c: GroupCoordinatorShard) -> list[GroupView]:
        """Every live group of one coordinator (classic assignments as of its last Stable)."""
        return [self._view(c, group, None) for group in live_groups(c.shard)]

    def _view(self, c: GroupCoordinatorShard, group: Any, known: Known | None) -> GroupView:
        if isinstance(group, ClassicGroup):
            return self._classic(group, known)
        return _modern(c, group)

    def _classic(self, group: ClassicGroup, known: Known | None) -> GroupView:
        stable = group.state is ClassicGroupState.STABLE
        decodable = group.protocol_type == CONSUMER_PROTOCOL_TYPE
        members = []
        for m in group.members.values():
            if stable:
                partitions = self._decode(m.assignment) if decodable else None
            else:
                partitions = known(group.group_id, m.member_id) if known is not None else ()
            members.append(MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host, None,
                                      partitions))
        return GroupView(group.group_id, group.TYPE.name, group.protocol_type,
                         (group.protocol or "") if stable else "", group.state.value, group.generation,
                         tuple(members))

    def _decode(self, raw: bytes) -> tuple[TopicPartition, ...] | None:
        if not raw:
            return ()
        try:
            return self._decoded[raw]
        except KeyError:
            pass
        try:
            a = decode_assignment(raw)
            out: tuple[TopicPartition, ...] | None = tuple(sorted((str(t), int(p)) for t, ps in a.partitions
                                                                  for p in ps))
        except ConsumerProtocolError:
            out = None
        if len(self._decoded) > 100_000:
            self._decoded.clear()
        self._decoded[raw] = out
        return out


def _topic_names(c: GroupCoordinatorShard, subscribed: Any = ()) -> dict[str, str]:
    names = {tid: name for name, (tid, _) in c.shard.topics.items()}
    names.update((tid, name) for name, tid, _ in subscribed)
    return names


def _modern(c: GroupCoordinatorShard, group: Any) -> GroupView:
    """A modern group (consumer, share, streams): members with their epochs and current assignments;
    the assignor as its Describe API names it."""
    names = _topic_names(c, group.subscribed)
    members = tuple(
        MemberView(m.member_id, getattr(m.meta, "instance_id", None), m.meta.client_id, m.meta.client_host,
                   m.current.member_epoch,
                   tuple(sorted((names.get(t, t), p) for t, p in group.partitions_of(m))))
        for m in group.members.values())
    state, epoch = group.status()
    return GroupView(group.group_id, group.TYPE.name, _protocol_type(group), group.assignor_name(c.shard.config),
                     state, epoch, members)


def _share_positions(c: GroupCoordinatorShard, group_id: str) -> dict[TopicPartition, int]:
    """A share group's share-partition start offsets, by topic name."""
    names = _topic_names(c)
    states = c.shard.stored.share_states.get(group_id, {})
    return {(names.get(tid, tid), p): v.start_offset for (tid, p), v in states.items()}


def client_of(c: GroupCoordinatorShard, group_id: str, member_id: str) -> tuple[str, str] | None:
    """(client id, host) of a member of a group of coordinator `c`, if it is one now."""
    group = find_group(c.shard, group_id)
    member = group.members.get(member_id) if group is not None else None
    if member is None:
        return None
    if isinstance(group, ClassicGroup):
        return member.client_id, member.client_host
    return member.meta.client_id, member.meta.client_host

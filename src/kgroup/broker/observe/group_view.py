"""Read-only views of the coordinator's groups, for the log, the web console and /metrics.

The one place outside the request path that reads a shard's group objects: what
DescribeGroups and ConsumerGroupDescribe would answer (state, generation or epoch, members
with client id, host and assignment) and the committed offsets, as plain frozen values.
Nothing here changes a group or runs a handler; it runs on the event loop between requests,
so what it reads is consistent.

A classic member's assignment is ConsumerProtocol bytes, valid once its group is Stable;
before that (mid-rebalance) the caller's last known assignment is used (`known`). Decoded
assignments are cached by their bytes object, so a group viewed again costs no decoding.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from kgroup.assignors.consumer_protocol import ConsumerProtocolError, decode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.consumer_group import ConsumerGroup
from kgroup.core.coordinator import GroupCoordinatorShard

CLASSIC = "classic"
CONSUMER = "consumer"
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int | None                      # consumer protocol only
    partitions: tuple[TopicPartition, ...] | None  # None: not decodable (not ConsumerProtocol)


@dataclass(frozen=True, slots=True)
class GroupView:
    group_id: str
    kind: str                                     # "classic" or "consumer"
    protocol_type: str
    protocol: str                                 # the chosen assignor (classic: when Stable)
    state: str
    generation: int                               # classic generation or consumer group epoch
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


class GroupViews:
    """Views over the coordinators of every shard."""

    def __init__(self, coordinators: Callable[[], Iterable[GroupCoordinatorShard]]) -> None:
        self._coordinators = coordinators
        self._decoded: dict[bytes, tuple[TopicPartition, ...] | None] = {}

    def coordinators(self) -> Iterator[GroupCoordinatorShard]:
        return iter(self._coordinators())

    # ---- lists ---------------------------------------------------------------------------

    def summaries(self) -> list[GroupSummaryView]:
        """Every live group, sorted by id."""
        out = []
        for c in self.coordinators():
            for group_id, g in c.shard.groups.items():
                if g.state is not ClassicGroupState.DEAD and group_id not in c.shard.consumer_groups:
                    out.append(GroupSummaryView(group_id, CLASSIC, g.protocol_type, g.state.value,
                                                g.generation, len(g.members)))
            for group_id, cg in c.shard.consumer_groups.items():
                out.append(GroupSummaryView(group_id, CONSUMER, CONSUMER, cg.state().value, cg.epoch,
                                            len(cg.members)))
        out.sort(key=lambda s: s.group_id)
        return out

    def committed(self) -> Iterator[tuple[str, dict[TopicPartition, int]]]:
        """(group id, (topic, partition) -> committed offset) of every group with commits."""
        for c in self.coordinators():
            for group_id, offsets in c.shard.stored.offsets.items():
                yield group_id, {tp: v.offset for tp, v in offsets.items()}

    # ---- one group -----------------------------------------------------------------------

    def _find(self, group_id: str) -> tuple[GroupCoordinatorShard, ClassicGroup | ConsumerGroup] | None:
        for c in self.coordinators():
            group = _group_in(c, group_id)
            if group is not None:
                return c, group
        return None

    def group(self, group_id: str, known: Known | None = None) -> GroupView | None:
        """The group as the coordinator holds it now; None if there is no such group."""
        found = self._find(group_id)
        if found is None:
            return None
        c, group = found
        if isinstance(group, ConsumerGroup):
            return self._consumer(c, group)
        if group.state is ClassicGroupState.DEAD:
            return None
        return self._classic(group, known)

    def committed_of(self, group_id: str) -> dict[TopicPartition, int]:
        for c in self.coordinators():
            offsets = c.shard.stored.offsets.get(group_id)
            if offsets is not None:
                return {tp: v.offset for tp, v in offsets.items()}
        return {}

    def all_in(self, c: GroupCoordinatorShard) -> list[GroupView]:
        """Every live group of one coordinator (classic assignments as of its last Stable)."""
        ids = [g for g in c.shard.groups if g not in c.shard.consumer_groups] + list(c.shard.consumer_groups)
        out = []
        for group_id in ids:
            group = _group_in(c, group_id)
            if isinstance(group, ConsumerGroup):
                out.append(self._consumer(c, group))
            elif group is not None and group.state is not ClassicGroupState.DEAD:
                out.append(self._classic(group, None))
        return out

    def _classic(self, group: ClassicGroup, known: Known | None) -> GroupView:
        stable = group.state is ClassicGroupState.STABLE
        decodable = group.protocol_type == CONSUMER
        members = []
        for m in group.members.values():
            if stable:
                partitions = self._decode(m.assignment) if decodable else None
            else:
                partitions = known(group.group_id, m.member_id) if known is not None else ()
            members.append(MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host, None,
                                      partitions))
        return GroupView(group.group_id, CLASSIC, group.protocol_type, (group.protocol or "") if stable else "",
                         group.state.value, group.generation, tuple(members))

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

    @staticmethod
    def _consumer(c: GroupCoordinatorShard, group: ConsumerGroup) -> GroupView:
        names = {tid: name for name, (tid, _) in c.shard.topics.items()}
        names.update((tid, name) for name, tid, _ in group.subscribed)
        members = tuple(
            MemberView(m.member_id, m.meta.instance_id, m.meta.client_id, m.meta.client_host,
                       m.current.member_epoch,
                       tuple(sorted((names.get(t, t), p) for t, ps in m.current.assigned for p in ps)))
            for m in group.members.values())
        # As ConsumerGroupDescribe names it: the assignor most members ask for.
        votes = Counter(m.meta.server_assignor for m in group.members.values() if m.meta.server_assignor)
        assignor = votes.most_common(1)[0][0] if votes else c.shard.config.consumer_assignors[0]
        return GroupView(group.group_id, CONSUMER, CONSUMER, assignor, group.state().value, group.epoch, members)


def _group_in(c: GroupCoordinatorShard, group_id: str) -> ClassicGroup | ConsumerGroup | None:
    group = c.shard.consumer_groups.get(group_id)
    return group if group is not None else c.shard.groups.get(group_id)


def client_of(c: GroupCoordinatorShard, group_id: str, member_id: str) -> tuple[str, str] | None:
    """(client id, host) of a member of a group of coordinator `c`, if it is one now."""
    group = _group_in(c, group_id)
    member = group.members.get(member_id) if group is not None else None
    if member is None:
        return None
    if isinstance(group, ConsumerGroup):
        return member.meta.client_id, member.meta.client_host
    return member.client_id, member.client_host

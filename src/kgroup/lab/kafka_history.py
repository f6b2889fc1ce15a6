"""A Kafka cluster's group history, from its ``__consumer_offsets`` records, as lab events.

How this works: the records (``kafka_records``), each with its timestamp — the coordinator's
clock when it wrote it — are folded per group into the group's state: its protocol, its
generation (a classic group) or group epoch (a consumer group), its target assignment epoch,
and its members with instance id, member epoch and assignment. One coordinator operation
writes its records together, with one timestamp, so the records of one group with the same
timestamp in a row are applied as one *step*; after each step the state is compared with the
state before it and the differences become events in the format of kgroup's own
``__kgroup_events`` (README, "Group events"), which ``kgroup lab replay`` reads:

- members gone: ``member_left`` (the log does not say whether a member left, expired or was
  fenced: Kafka writes the same records for each), a static member's new member id:
  ``member_joined`` with ``replaced``; members new: ``member_joined``;
- a classic group's new generation: ``rebalance_completed``; a consumer group's new group
  epoch: ``rebalance_started``, and ``rebalance_completed`` once every member's epoch has
  reached the target assignment's epoch;
- a member's partitions changed: ``assignment_changed``;
- the group changed protocol (a classic group converted to a consumer group by a
  consumer-protocol member, or back): ``group_state`` with the reason.

Each step also leaves a ``Snapshot``: what DescribeGroups or ConsumerGroupDescribe would
have answered right after it, which is how the import is checked against Kafka itself.
Topic ids (consumer-group assignments) become names through ``topic_names`` (from Metadata);
an id it lacks stays as it is. Pure: records in, events and snapshots out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kgroup.assignors.consumer_protocol import CONSUMER_PROTOCOL_TYPE, ConsumerProtocolError, decode_assignment

from .kafka_records import (KafkaClassicGroup, ConsumerCurrent, ConsumerGroupEpoch, ConsumerMember,
                            ConsumerTarget, ConsumerTargetEpoch, GroupRecord, TopicPartitions)

FORMAT_VERSION = 1
CLASSIC = "classic"
CONSUMER = "consumer"

Partitions = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    instance_id: str | None = None
    member_epoch: int | None = None          # consumer protocol only
    partitions: Partitions | None = ()       # None: a classic assignment that is not ConsumerProtocol
    classic: bool = True                     # speaks the classic protocol


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A group right after one step of its history."""

    time_ms: int
    group: str
    protocol: str
    generation: int                          # classic generation, or consumer group epoch
    target_epoch: int                        # consumer groups: the target assignment's epoch
    members: tuple[Member, ...]              # sorted by member id

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.protocol == CLASSIC or all(m.member_epoch == self.target_epoch for m in self.members):
            return "Stable"
        return "Reconciling"


@dataclass
class _Group:
    group: str
    protocol: str = CLASSIC
    generation: int = 0
    target_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    completed: int = -1                      # the consumer target epoch last reported complete
    exists: bool = False


@dataclass
class History:
    """Every group's events and snapshots, in the order of the log."""

    events: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    skipped: int = 0                         # records of other kinds (offsets, share, streams)

    def of(self, group: str) -> list[Snapshot]:
        return [s for s in self.snapshots if s.group == group]


def history(records: Iterable[tuple[int, GroupRecord | None]],
            topic_names: Mapping[str, str] | None = None) -> History:
    """Fold ``(timestamp ms, record)`` pairs, in log order, into events and snapshots
    (None records — kinds not read — are counted and skipped)."""
    names = dict(topic_names or {})
    groups: dict[str, _Group] = {}
    out = History()
    step: list[GroupRecord] = []
    step_key: tuple[str, int] | None = None

    def flush() -> None:
        if step_key is None:
            return
        g = groups.setdefault(step_key[0], _Group(step_key[0]))
        before = replace(g, members=dict(g.members))
        for record in step:
            _apply(g, record, names)
        _events(before, g, step_key[1], out.events)
        out.snapshots.append(Snapshot(step_key[1], g.group, g.protocol, g.generation, g.target_epoch,
                                      tuple(m for _, m in sorted(g.members.items()))))
        step.clear()

    for time_ms, record in records:
        if record is None:
            out.skipped += 1
            continue
        key = (record.group, int(time_ms))
        if key != step_key:
            flush()
            step_key = key
        step.append(record)
    flush()
    return out


def _partitions(tps: TopicPartitions, names: Mapping[str, str]) -> Partitions:
    return tuple(sorted((names.get(t, t), p) for t, ps in tps for p in ps))


def _apply(g: _Group, record: GroupRecord, names: Mapping[str, str]) -> None:
    if isinstance(record, KafkaClassicGroup):
        if record.removed:
            # Removed, or converted to a consumer group (whose records follow in the step).
            if g.protocol == CLASSIC:
                g.members.clear()
                g.exists = False
            return
        g.protocol, g.generation, g.exists = CLASSIC, record.generation, True
        members = {}
        for m in record.members:
            members[m.member_id] = Member(m.member_id, m.group_instance_id, None,
                                          _classic_partitions(record.protocol_type, m.assignment))
        g.members = members
        return
    if isinstance(record, ConsumerGroupEpoch):
        if record.removed:
            if g.protocol == CONSUMER:
                g.exists = False
            return
        if g.protocol != CONSUMER:
            # A classic group converted: its members carry over under the same ids, as
            # consumer-protocol records about them follow.
            g.protocol = CONSUMER
            g.members = {}
        g.generation, g.exists = record.epoch, True
        return
    if isinstance(record, ConsumerTargetEpoch):
        if not record.removed:
            g.target_epoch = record.epoch
        return
    if isinstance(record, ConsumerTarget):
        return                                   # the target: not what members own
    if g.protocol != CONSUMER:
        if getattr(record, "removed", False):
            return                               # a consumer group converted back to classic
        # Member records of a consumer group whose epoch record comes later in the step.
        g.protocol, g.members = CONSUMER, {}
    if isinstance(record, ConsumerMember):
        if record.removed:
            g.members.pop(record.member_id, None)
            return
        old = g.members.get(record.member_id, Member(record.member_id))
        g.members[record.member_id] = replace(old, instance_id=record.instance_id, classic=record.classic)
        return
    assert isinstance(record, ConsumerCurrent)
    if record.removed:
        return                                   # the member's metadata tombstone removes it
    old = g.members.get(record.member_id, Member(record.member_id, classic=False))
    g.members[record.member_id] = replace(old, member_epoch=record.member_epoch,
                                          partitions=_partitions(record.partitions, names))


def _classic_partitions(protocol_type: str | None, assignment: bytes) -> Partitions | None:
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    try:
        got = decode_assignment(assignment)
    except ConsumerProtocolError:
        return None
    return tuple(sorted((str(t), int(p)) for t, ps in got.partitions for p in ps))


def _events(before: _Group, after: _Group, time_ms: int, out: list[dict[str, Any]]) -> None:
    consumer = after.protocol == CONSUMER
    state = Snapshot(time_ms, after.group, after.protocol, after.generation, after.target_epoch,
                     tuple(after.members.values())).state

    def event(kind: str, m: Member | None = None, **extra: Any) -> None:
        out.append({"v": FORMAT_VERSION, "time_ms": time_ms, "group": after.group,
                    "protocol": after.protocol, "kind": kind,
                    "member": m.member_id if m is not None else None,
                    "instance": m.instance_id if m is not None else None,
                    "generation": after.generation,
                    "member_epoch": m.member_epoch if m is not None and consumer else None,
                    "state": state, "partitions": None, "reason": None, **extra})

    if before.protocol != after.protocol and before.exists:
        event("group_state", reason=f"converted from the {before.protocol} protocol to the {after.protocol} protocol")
    gone = [m for mid, m in before.members.items() if mid not in after.members]
    new = [m for mid, m in after.members.items() if mid not in before.members]
    instances = {m.instance_id: m for m in new if m.instance_id}
    replaced = {}
    for m in gone:
        if m.instance_id and m.instance_id in instances:
            replaced[instances[m.instance_id].member_id] = m.member_id
        else:
            event("member_left", m, reason="gone (the log does not say whether it left, expired or was fenced)")
    for m in new:
        extra = {"replaced": replaced[m.member_id]} if m.member_id in replaced else {}
        event("member_joined", m, **extra)
    if consumer:
        if after.generation > before.generation and after.members:
            event("rebalance_started")
    elif after.generation != before.generation:
        event("rebalance_completed")
    for mid, m in after.members.items():
        old = before.members.get(mid)
        if m.partitions and (old is None or old.partitions != m.partitions):
            out_parts = [list(tp) for tp in m.partitions]
            event("assignment_changed", m, partitions=out_parts)
        elif old is not None and old.partitions and not m.partitions and m.partitions is not None:
            event("assignment_changed", m, partitions=[])
    if consumer and after.members and state == "Stable" and after.target_epoch > after.completed:
        after.completed = after.target_epoch
        event("rebalance_completed")

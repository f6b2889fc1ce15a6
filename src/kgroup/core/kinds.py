"""The coordinator's side of the registry of group kinds (kgroup/group_types.py): which of a
shard's groups are of which kind, and the module set that serves each.

How this works: each kind in `GROUP_TYPES` is bound here to its group class and the map of
the shard that holds its groups (`KINDS`); a group id names a group of one kind at a time,
so the maps never share an id. Everything in the core that goes over "every group" (the
group events of a coordinator that loads or hands over a shard, the broker's views and load
log) goes through `live_groups` or `find_group`, so a kind added here is seen everywhere.
Every group class answers the same few questions: its `TYPE`, `status()` (state and
generation or group epoch) and whether it is `live` (a classic group that was deleted is
Dead until it is dropped).

A kind's module set (docs/group-kinds.md): its group aggregate and member state
(classic_group.py; consumer_group.py, share_group.py and streams_group.py on
modern_group.py), its handler set (classic_protocol.py; consumer_protocol.py,
share_protocol.py and streams_protocol.py on modern_protocol.py), its records (records.py,
with their keys in record_codec.py; a streams group's in streams_records.py, keys in
streams_codec.py), and its routes and timers in coordinator.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from kgroup.core.classic_group import ClassicGroup
from kgroup.core.consumer_group import ConsumerGroup
from kgroup.core.share_group import ShareGroup
from kgroup.core.state import ShardState
from kgroup.core.streams_group import StreamsGroup
from kgroup.group_types import CLASSIC, CONSUMER, GROUP_TYPES, SHARE, STREAMS, GroupType


@dataclass(frozen=True, slots=True)
class KindBinding:
    type: GroupType
    group_class: type
    groups: Callable[[ShardState], dict[str, Any]]     # the shard's groups of this kind


KINDS: dict[GroupType, KindBinding] = {
    CLASSIC: KindBinding(CLASSIC, ClassicGroup, lambda shard: shard.groups),
    CONSUMER: KindBinding(CONSUMER, ConsumerGroup, lambda shard: shard.consumer_groups),
    SHARE: KindBinding(SHARE, ShareGroup, lambda shard: shard.share_groups),
    STREAMS: KindBinding(STREAMS, StreamsGroup, lambda shard: shard.streams_groups),
}
assert tuple(KINDS) == GROUP_TYPES, "every kind of the registry is bound here, in its order"


def group_maps(shard: ShardState) -> Iterator[tuple[GroupType, dict[str, Any]]]:
    """(kind, the shard's groups of that kind) for every kind, in the registry's order."""
    for kind, binding in KINDS.items():
        yield kind, binding.groups(shard)


def find_group(shard: ShardState, group_id: str) -> Any | None:
    """The live group `group_id` names in this shard, of whatever kind; None if none."""
    maps = shard.group_maps
    if not maps:
        maps = shard.group_maps = tuple(binding.groups(shard) for binding in KINDS.values())
    for groups in maps:
        group = groups.get(group_id)
        if group is not None:
            return group if group.live else None
    return None


def live_groups(shard: ShardState) -> Iterator[Any]:
    """Every live group of the shard: kind by kind in the registry's order, by id within one."""
    for _, groups in group_maps(shard):
        for group_id in sorted(groups):
            group = groups[group_id]
            if group.live:
                yield group


def count_groups(shard: ShardState) -> int:
    """How many live groups the shard holds, of every kind."""
    return sum(1 for _ in live_groups(shard))

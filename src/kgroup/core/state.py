"""What one coordinator shard holds, shared by the handler modules.

`stored` is the durable state: it changes only through `replay` (coordinator.py), live or
while loading the log. Everything else is runtime state that handlers change directly:
classic groups mid-rebalance, parked replies, timers. After a restart the runtime state is
rebuilt from `stored` (`GroupCoordinatorShard.load_complete`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kgroup.core.classic_group import ClassicGroup
from kgroup.core.consumer_group import ConsumerGroup
from kgroup.core.config import GroupConfig
from kgroup.core.records import ClassicGroupValue, OffsetCommitValue, ShareStateValue, TxnValue
from kgroup.core.share_group import ShareGroup
from kgroup.core.streams_group import StreamsGroup
from kgroup.core.timers import Timers

# (topic, partition) -> committed offset
GroupOffsets = dict[tuple[str, int], OffsetCommitValue]


@dataclass(slots=True)
class StoredState:
    """The durable state of a shard: exactly what replaying its log produces."""

    classic_groups: dict[str, ClassicGroupValue] = field(default_factory=dict)
    offsets: dict[str, GroupOffsets] = field(default_factory=dict)
    # Transactional ids this shard coordinates (the ids that hash here).
    transactions: dict[str, TxnValue] = field(default_factory=dict)
    # Offsets of transactions not yet ended, by producer id then group (txn_offsets.py),
    # and which producers hold some for each group.
    pending_offsets: dict[int, dict[str, GroupOffsets]] = field(default_factory=dict)
    open_txn_groups: dict[str, set[int]] = field(default_factory=dict)
    # group id -> its dynamic configs ((name, value), ...) (group_configs.py)
    group_configs: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # group id -> (topic id, partition) -> the share partition's durable state (KIP-932)
    share_states: dict[str, dict[tuple[str, int], ShareStateValue]] = field(default_factory=dict)

    def has_pending_offset(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of this partition (KIP-447)."""
        producers = self.open_txn_groups.get(group_id)
        if not producers:
            return False
        return any((topic, partition) in self.pending_offsets[pid].get(group_id, ()) for pid in producers)


def drop_entry(table: dict[str, dict[Any, Any]], group_id: str, key: Any) -> None:
    """A tombstone's replay: remove one entry of a group's part of ``table`` (offsets,
    share-partition states), and the group's part once it is empty, as a replay from
    scratch would never have made it."""
    entries = table.get(group_id)
    if entries is not None:
        entries.pop(key, None)
        if not entries:
            del table[group_id]


def counter_member_ids() -> Callable[[str], str]:
    """A deterministic member-id source for tests and simulations: `<client id>-<n>`."""
    counter = 0

    def new_id(prefix: str) -> str:
        nonlocal counter
        counter += 1
        return f"{prefix or 'member'}-{counter}"

    return new_id


@dataclass(slots=True)
class ShardState:
    config: GroupConfig
    # Returns a fresh member id for a client id (or an instance id for static members).
    # Injected so the core never draws randomness of its own.
    new_member_id: Callable[[str], str]
    timers: Timers = field(default_factory=Timers)
    stored: StoredState = field(default_factory=StoredState)
    groups: dict[str, ClassicGroup] = field(default_factory=dict)
    # Consumer-protocol groups are durable as a whole: built and changed by replay only.
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    # Share groups (KIP-932) are durable as a whole too.
    share_groups: dict[str, ShareGroup] = field(default_factory=dict)
    # Streams groups (KIP-1071) too.
    streams_groups: dict[str, StreamsGroup] = field(default_factory=dict)
    # The broker's topics: name -> (topic id, partition count). Pure input, set by the
    # broker through GroupCoordinatorShard.update_topics.
    topics: dict[str, tuple[str, int]] = field(default_factory=dict)
    # The version of `topics`, moved by every update (at least to the update's time, so a
    # version from before a restart is older than any after), and the version at which
    # topics were last created (-1: no update yet). A group whose regexes were resolved
    # against a version older than that resolves them again (Kafka 4.4 compares metadata
    # image offsets the same way).
    topics_version: int = 0
    new_topics_version: int = -1
    # The maps above of every kind, in the registry's order (kinds.py fills it on first use;
    # the maps are never replaced).
    group_maps: tuple[dict[str, Any], ...] = ()

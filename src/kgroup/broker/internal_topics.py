"""Topics the broker writes itself, as Kafka's internal topics (`__consumer_offsets`).

Internal by name, as Kafka's `Topic.isInternal`: Metadata marks them `is_internal` (so
clients leave them out of pattern subscriptions), Produce from a client is refused with
INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic ..."), as Kafka's ReplicaManager
refuses client appends to `__consumer_offsets`, and Metadata never auto-creates them.
"""

from __future__ import annotations

# The group event stream (broker/event_stream.py), one partition.
GROUP_EVENTS_TOPIC = "__kgroup_events"
INTERNAL_TOPICS = frozenset({GROUP_EVENTS_TOPIC})


def is_internal(name: str | None) -> bool:
    return name in INTERNAL_TOPICS

"""Topics the broker writes itself, as Kafka's internal topics (`__consumer_offsets`).

Internal by name, as Kafka's `Topic.isInternal`: Metadata marks them `is_internal` (so
clients leave them out of pattern subscriptions), Produce and DeleteRecords from a client
are refused with INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic ..."), as Kafka's
ReplicaManager refuses them for `__consumer_offsets`, Metadata never auto-creates them, and
clients can neither create, delete nor grow them. `__consumer_offsets` is reserved too:
kgroup keeps the group-metadata log in its data dir, never as a topic, and a topic of that
name would only confuse tools that read it.
"""

from __future__ import annotations

# The group event stream (broker/observe/event_stream.py), one partition.
GROUP_EVENTS_TOPIC = "__kgroup_events"
# Kafka's group-metadata topic: reserved, never created (the log lives in the data dir).
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({GROUP_EVENTS_TOPIC, CONSUMER_OFFSETS_TOPIC})


def is_internal(name: str | None) -> bool:
    return name in INTERNAL_TOPICS


def internal_topic_problem(name: str, action: str) -> str:
    """Why a client's change to internal topic ``name`` is refused (``action``: "deleted")."""
    if name == GROUP_EVENTS_TOPIC:
        return (f"{name} is an internal topic written by the broker and cannot be {action} by a client "
                "(to stop it, run the broker with group_events = false)")
    return f"{name} is an internal topic of the broker and cannot be {action} by a client"

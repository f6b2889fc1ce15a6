"""What a decoded request names: groups, members, topics and partitions, for any API.

How this works: kio requests of every API spell these the same few ways, so one walk over
the request's fields finds them without a table per API: group ids in `group_id`,
`groups` / `group_ids` / `groups_names` (bare strings) and FindCoordinator's `key` /
`coordinator_keys` when the key type is a group (0); member ids and static instance ids in
`member_id`, `group_instance_id`, `instance_id` (also inside `members`); topics as the
entries of `topics`, `topic_data`, `topic_partitions`, `v3_and_below_topics` (a `name`, `topic` or `topic_id`, or a
bare name as DeleteTopics' `topic_names`), each with its partitions in `partitions`,
`partition_data` or `partition_indexes` (entries with `partition_index`, `partition` or
`index`, or bare numbers). A new API with the usual field names is covered as it is.

Used to match the control API's faults against requests; not on the path of a request
when no fault is armed.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

_GROUP_FIELDS = ("group_id",)
_GROUP_LISTS = ("groups", "group_ids", "groups_names")
_MEMBER_FIELDS = ("member_id", "group_instance_id", "instance_id")
_TOPIC_LISTS = ("topics", "topic_data", "topic_partitions", "topic_names", "v3_and_below_topics")
_PARTITION_LISTS = ("partitions", "partition_data", "partition_indexes")
_PARTITION_FIELDS = ("partition_index", "partition", "index")
_GROUP_KEY_TYPE = 0


@dataclass(frozen=True, slots=True)
class Subjects:
    """What one request names. `partitions` pairs a topic (its name, or its id as a
    string when the request names topics by id only) with a partition number."""

    groups: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()
    partitions: frozenset[tuple[str, int]] = frozenset()


def subjects_of(request: Any) -> Subjects:
    """The groups, members (ids and instance ids), topics and partitions `request` names."""
    groups: set[str] = set()
    members: set[str] = set()
    topics: set[str] = set()
    partitions: set[tuple[str, int]] = set()

    def walk(entity: Any) -> None:
        for f in dataclasses.fields(entity):
            value = getattr(entity, f.name)
            if value is None:
                continue
            name = f.name
            if name in _GROUP_FIELDS and isinstance(value, str):
                groups.add(value)
            elif name in _MEMBER_FIELDS and isinstance(value, str):
                if value:
                    members.add(value)
            elif name in _GROUP_LISTS and isinstance(value, tuple):
                for item in value:
                    if isinstance(item, str):
                        groups.add(item)
                    elif dataclasses.is_dataclass(item):
                        walk(item)
            elif name in _TOPIC_LISTS and isinstance(value, tuple):
                for item in value:
                    topic(item)
            elif isinstance(value, tuple):
                for item in value:
                    if dataclasses.is_dataclass(item):
                        walk(item)

    def topic(item: Any) -> None:
        if isinstance(item, str):
            topics.add(item)
            return
        if not dataclasses.is_dataclass(item):
            return
        name = getattr(item, "name", None) or getattr(item, "topic", None)
        if not name:
            topic_id = getattr(item, "topic_id", None)
            name = str(topic_id) if isinstance(topic_id, uuid.UUID) else None
        if name:
            topics.add(name)
        for field in _PARTITION_LISTS:
            for p in getattr(item, field, None) or ():
                number = p if isinstance(p, int) else next(
                    (getattr(p, f) for f in _PARTITION_FIELDS if isinstance(getattr(p, f, None), int)), None)
                if number is not None and name:
                    partitions.add((name, int(number)))
        walk(item)

    walk(request)
    key_type = getattr(request, "key_type", _GROUP_KEY_TYPE)
    if key_type == _GROUP_KEY_TYPE:
        key = getattr(request, "key", None)
        if isinstance(key, str):
            groups.add(key)
        groups.update(k for k in getattr(request, "coordinator_keys", None) or () if isinstance(k, str))
    return Subjects(frozenset(groups), frozenset(members), frozenset(topics), frozenset(partitions))

"""Topics named by id in offset requests: OffsetCommit and OffsetFetch v10 (KIP-848).

From v10 a topic in these requests and their answers is its topic id, not its name. The
group coordinator keeps offsets by name (as Kafka's does), so the handlers translate at the
wire edge with the broker's topics (the shard's image, `ShardState.topics`: name -> (topic
id, partitions)): a request's id becomes the name of the topic that has it now, an answer's
name the id of the topic that has it now. Asked of Kafka 4.4 itself:

- OffsetCommit v10: every partition of an id no topic has (the zero id too) is answered
  UNKNOWN_TOPIC_ID, and nothing is stored for it; a known id with a partition past its count
  is UNKNOWN_TOPIC_OR_PARTITION, as by name.
- OffsetFetch v10: a listed id no topic has answers each of its partitions with offset -1,
  no metadata and UNKNOWN_TOPIC_ID; asking for every topic (a null list) answers the topics
  the group has offsets for, by their ids.
- A deleted topic's offsets are deleted with it (core/offsets.py, `topics_deleted`), so the
  old id answers UNKNOWN_TOPIC_ID and a topic created again under the same name has no
  offsets, by id or by name.

A shard this node does not serve (another node's, or one being loaded) knows no topics:
each id stands for itself there, and every partition gets the shard's NOT_COORDINATOR (or
COORDINATOR_LOAD_IN_PROGRESS), so the client looks for the coordinator first.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

# Version 10 of OffsetCommit and OffsetFetch names topics by id.
FIRST_BY_ID = 10


class OffsetTopicIds:
    """The broker's topics both ways: id -> name for requests, name -> id for answers."""

    __slots__ = ("image", "_names", "_ids")

    def __init__(self, image: Mapping[str, tuple[str, int]] | None) -> None:
        # None: a shard this node does not serve (it knows no topics).
        self.image = image
        self._ids = {} if image is None else {name: uuid.UUID(tid) for name, (tid, _) in image.items()}
        self._names = {tid: name for name, tid in self._ids.items()}

    def name_of(self, topic_id: uuid.UUID | None) -> str | None:
        """The name of the topic with this id (None: no topic has it; kio reads the zero id
        as None). Without an image, the id itself, written out: the shard refuses it anyway."""
        if self.image is None:
            return str(topic_id or uuid.UUID(int=0))
        return None if topic_id is None else self._names.get(topic_id)

    def id_of(self, name: str) -> uuid.UUID | None:
        """The id of the topic with this name (None: no topic has it now)."""
        return self._ids.get(name)


# The maps of the images in use, by the image's identity (each shard has its own image, and
# the coordinator replaces it whenever a topic changes); a stale entry never matches, since
# it keeps its image alive, and the cache is emptied when it outgrows the shards.
_MAPS: dict[int, OffsetTopicIds] = {}
_MAPS_MAX = 256


def topic_names(image: Mapping[str, tuple[str, int]] | None) -> OffsetTopicIds:
    """`OffsetTopicIds` of a shard's image, built once per image."""
    found = _MAPS.get(id(image))
    if found is None or found.image is not image:
        if len(_MAPS) >= _MAPS_MAX:
            _MAPS.clear()
        found = _MAPS[id(image)] = OffsetTopicIds(image)
    return found


def by_id(version: int) -> bool:
    """Whether this OffsetCommit / OffsetFetch version names topics by id."""
    return version >= FIRST_BY_ID


def request_names(topics: Any, version: int,
                  image: Mapping[str, tuple[str, int]] | None) -> list[tuple[Any, str | None]]:
    """Each topic entry of a request with its name: the entry's own before v10, from v10 the
    name of the topic that has its id in `image` (None: no topic has that id)."""
    if not by_id(version):
        return [(t, t.name) for t in topics]
    names = topic_names(image)
    return [(t, names.name_of(t.topic_id)) for t in topics]


def topic_key(version: int) -> str:
    """The field that names a topic in this version's answers."""
    return "topic_id" if by_id(version) else "name"

"""A streams group's topology (KIP-1071): what the application runs, checked against the
topics that exist, with the internal topics it needs.

A Kafka Streams application sends its topology when a member joins: subtopologies, each with
its source topics, the repartition topics it writes (sinks) and reads (repartition sources),
its state changelog topics and its copartition groups (topics joined with each other, which
must have equal partition counts). The first topology a group sees is its topology until the
group is deleted (Kafka 4.4 has no topology updates).

How this works (Kafka's InternalTopicManager, in `configure`):

1. Every source topic that is not a repartition topic must exist, else the status is
   MISSING_SOURCE_TOPICS ("Source topics a, b are missing.") and nothing is assigned.
2. Repartition topics without a partition count take the most partitions of the source
   topics (and repartition sources) of the subtopology that writes them, repeated to a fixed
   point; a repartition source nobody writes, or a loop, is an invalid topology.
3. Copartition groups: external topics must agree (else INCORRECTLY_PARTITIONED_TOPICS);
   repartition topics in the group take their count, or the most of the group's repartition
   topics when it has only those; a repartition topic with a fixed count that differs is
   incorrectly partitioned too.
4. A changelog topic has as many partitions as the most of its subtopology's source and
   repartition source topics.
5. Internal topics (repartition and changelog) that exist must have that count (else
   INCORRECTLY_PARTITIONED_TOPICS: "Existing topic t has different number of partitions:
   expected 4, found 2"); the missing ones are to be created by the broker, and the status
   is MISSING_INTERNAL_TOPICS until they exist.
6. Otherwise the topology is *ready*: each subtopology has as many tasks as the most
   partitions of its source and repartition source topics.

Broken topologies raise `InvalidTopology` (STREAMS_INVALID_TOPOLOGY); the statuses are
answers, not errors: the member stays in the group and is told why it has no tasks. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

# Kafka's internal topics: a topology may not read or write them (KafkaApis refuses).
KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class TopologyStatus(IntEnum):
    """The statuses of a StreamsGroupHeartbeat answer (StreamsGroupHeartbeatResponse.Status)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


class InvalidTopology(Exception):
    """The topology cannot run (STREAMS_INVALID_TOPOLOGY, with Kafka's message)."""


@dataclass(frozen=True, slots=True)
class StreamsTopicInfo:
    """An internal topic as the topology declares it: partitions 0 = decided by the
    coordinator, replication factor 0 = the broker's default, topic configs as given."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics and repartition source topics."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[StreamsTopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[StreamsTopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @property
    def stateful(self) -> bool:
        return bool(self.state_changelog_topics)

    def copartitioned(self) -> list[set[str]]:
        """Its copartition groups as sets of topic names."""
        out = []
        for group in self.copartition_groups:
            names = {self.source_topics[i] for i in group.source_topics if 0 <= i < len(self.source_topics)}
            names |= {self.repartition_source_topics[i].name for i in group.repartition_source_topics
                      if 0 <= i < len(self.repartition_source_topics)}
            out.append(names)
        return out


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    """A streams group's topology (the StreamsGroupTopology record's value)."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def by_id(self) -> dict[str, Subtopology]:
        return {s.subtopology_id: s for s in self.subtopologies}

    def required_topics(self) -> frozenset[str]:
        """Every topic whose metadata the configuration depends on."""
        names: set[str] = set()
        for s in self.subtopologies:
            names.update(s.source_topics)
            names.update(t.name for t in s.repartition_source_topics)
            names.update(t.name for t in s.state_changelog_topics)
        return frozenset(names)

    def all_topics(self) -> frozenset[str]:
        """Every topic the topology names (what a member must be allowed to DESCRIBE)."""
        return self.required_topics() | {t for s in self.subtopologies for t in s.repartition_sink_topics}


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """An internal topic with the partition count the coordinator decided."""

    name: str
    partitions: int
    replication_factor: int = 0             # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    subtopology_id: str
    tasks: int
    stateful: bool
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[InternalTopic, ...]
    state_changelog_topics: tuple[InternalTopic, ...]


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """The topology against the topics that exist: its subtopologies with their tasks (None if
    source topics are missing or the partitions are wrong), the internal topics to create,
    and the status that keeps it from being ready (None: ready)."""

    epoch: int
    subtopologies: tuple[ConfiguredSubtopology, ...] | None
    to_create: tuple[InternalTopic, ...] = ()
    status: tuple[TopologyStatus, str] | None = None

    @property
    def ready(self) -> bool:
        return self.status is None and self.subtopologies is not None

    def tasks(self) -> dict[str, int]:
        """Subtopology id -> its number of tasks (empty unless configured)."""
        return {s.subtopology_id: s.tasks for s in self.subtopologies or ()}


class _Misconfigured(Exception):
    def __init__(self, status: TopologyStatus, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def summarize(topics: Iterable[str]) -> str:
    """Up to three names, then how many more (Kafka's summarizeTopics)."""
    names = list(topics)
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def check_topic_names(topology: StreamsTopology) -> None:
    """What Kafka refuses before it reads anything else of the heartbeat, whatever the member
    epoch (its request handler checks the topology's topic names before the coordinator
    checks the group id): Kafka's internal topics and illegal names (STREAMS_INVALID_TOPOLOGY)."""
    names = sorted(topology.all_topics())
    internal = [n for n in names if n in KAFKA_INTERNAL_TOPICS]
    if internal:
        raise InvalidTopology(f"Use of Kafka internal topics {','.join(internal)} in a Kafka Streams topology is "
                              f"prohibited.")
    bad = [n for n in names if not legal_topic_name(n)]
    if bad:
        raise InvalidTopology(f"Topic names {','.join(bad)} are not valid topic names.")


def check_request_topology(topology: StreamsTopology) -> None:
    """What the coordinator refuses in a joining member's topology (STREAMS_INVALID_TOPOLOGY),
    after `check_topic_names` and the request's other checks."""
    for s in topology.subtopologies:
        for t in s.state_changelog_topics:
            if t.partitions != 0:
                raise InvalidTopology(f"Changelog topic {t.name} must have an undefined partition count, "
                                      f"but it is set to {t.partitions}.")
    # Kafka 4.4 does not check these indexes and fails the heartbeat with UNKNOWN_SERVER_ERROR
    # (an index out of bounds); a clear refusal says what is wrong.
    for s in topology.subtopologies:
        for g in s.copartition_groups:
            for kind, indexes, size in (("source topic", g.source_topics, len(s.source_topics)),
                                        ("repartition source topic", g.repartition_source_topics,
                                         len(s.repartition_source_topics))):
                wrong = [i for i in indexes if not 0 <= i < size]
                if wrong:
                    raise InvalidTopology(f"Copartition group of subtopology {s.subtopology_id} refers to {kind} "
                                          f"index {wrong[0]}, but the subtopology has {size} {kind}s.")


def legal_topic_name(name: str) -> bool:
    return 0 < len(name) <= 249 and name not in (".", "..") and set(name) <= _LEGAL


def configure(topology: StreamsTopology, partitions_of: Callable[[str], int | None]) -> ConfiguredTopology:
    """The topology against the topics that exist (`partitions_of(name)`: its partition
    count, None if it does not exist); see the module comment."""
    subs = sorted(topology.subtopologies, key=lambda s: s.subtopology_id)
    try:
        _missing_sources(subs, partitions_of)                                              # 1
        decided: dict[str, int] = {}

        def count(name: str) -> int | None:
            existing = partitions_of(name)
            return existing if existing is not None else decided.get(name)

        decided.update(_repartition_counts(subs, count))                                   # 2
        _copartition(subs, count, decided)                                                 # 3
        decided.update(_changelog_counts(subs, count))                                     # 4
        configured = tuple(_configured(s, count, decided) for s in subs)
        to_create = _missing_internal(configured, partitions_of)                           # 5
    except _Misconfigured as e:
        return ConfiguredTopology(topology.epoch, None, (), (e.status, e.detail))
    if to_create:
        names = [t.name for t in to_create]
        return ConfiguredTopology(topology.epoch, configured, to_create,
                                  (TopologyStatus.MISSING_INTERNAL_TOPICS,
                                   f"Internal topics are missing: {summarize(names)}"))
    return ConfiguredTopology(topology.epoch, configured)                                  # 6


def _missing_sources(subs: list[Subtopology], partitions_of: Callable[[str], int | None]) -> None:
    # Source topics are the external ones (repartition sources are listed apart).
    missing = sorted({t for s in subs for t in s.source_topics if partitions_of(t) is None})
    if missing:
        raise _Misconfigured(TopologyStatus.MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing.")


def _repartition_counts(subs: list[Subtopology], count: Callable[[str], int | None]) -> dict[str, int]:
    counts = {t.name: t.partitions for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    while True:
        needed = progress = False
        for s in subs:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                candidates = [counts[t.name] for t in s.repartition_source_topics if t.name in counts]
                candidates += [n for n in (count(t) for t in s.source_topics) if n is not None]
                if candidates:
                    counts[sink] = max(candidates)
                    progress = True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            raise InvalidTopology("Failed to compute number of partitions for all repartition topics. "
                                  "There may be loops in the topology that cannot be resolved.")
    for s in subs:
        if any(t.name not in counts for t in s.repartition_source_topics):
            raise InvalidTopology("Failed to compute number of partitions for all repartition topics, because "
                                  "a repartition source topic is never used as a sink topic.")
    return counts


def _copartition(subs: list[Subtopology], count: Callable[[str], int | None], decided: dict[str, int]) -> None:
    fixed = {t.name for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    flexible = {t.name for s in subs for t in s.repartition_source_topics if t.partitions == 0}
    for s in subs:
        for group in s.copartitioned():
            if not group:
                continue
            partitions = {}
            for topic in sorted(group):
                n = count(topic)
                if n is None:
                    raise RuntimeError(f"Number of partitions is not set for topic: {topic}")
                partitions[topic] = n
            repartition = {t: n for t, n in partitions.items() if t in fixed or t in flexible}
            external = {t: n for t, n in partitions.items() if t not in repartition}
            if not external:
                fixed_here = sorted(t for t in repartition if t in fixed)
                if fixed_here:
                    use = repartition[fixed_here[0]]
                    if any(repartition[t] != use for t in fixed_here):
                        raise _Misconfigured(TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                             f"Following topics do not have the same number of partitions: "
                                             f"[{_java_map(repartition)}]")
                else:
                    use = max(repartition.values())
            else:
                use = next(iter(external.values()))
                if any(n != use for n in external.values()):
                    raise _Misconfigured(TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                         f"Following topics do not have the same number of partitions: "
                                         f"[{_java_map(external)}]")
            for topic, n in sorted(repartition.items()):
                decided[topic] = use
                if topic in fixed and n != use:
                    raise _Misconfigured(TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                         f"Number of partitions [{n}] of repartition topic [{topic}] doesn't match "
                                         f"number of partitions [{use}] of the source topic.")


def _java_map(values: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(values.items())) + "}"


def _changelog_counts(subs: list[Subtopology], count: Callable[[str], int | None]) -> dict[str, int]:
    out = {}
    for s in subs:
        inputs = [*s.source_topics, *(t.name for t in s.repartition_source_topics)]
        counts = []
        for topic in inputs:
            n = count(topic)
            if n is None:
                raise RuntimeError(f"No partition count for source topic {topic}")
            counts.append(n)
        if not counts:
            raise InvalidTopology(f"No source topics found for subtopology {s.subtopology_id}")
        for t in s.state_changelog_topics:
            out[t.name] = max(counts)
    return out


def _configured(s: Subtopology, count: Callable[[str], int | None], decided: Mapping[str, int]) -> ConfiguredSubtopology:
    def internal(t: StreamsTopicInfo) -> InternalTopic:
        partitions = t.partitions or decided.get(t.name)
        if not partitions:
            partitions = count(t.name) or 0
        return InternalTopic(t.name, partitions, t.replication_factor, t.configs)

    inputs = [count(t) for t in s.source_topics] + [count(t.name) for t in s.repartition_source_topics]
    tasks = max((n for n in inputs if n is not None), default=0)
    return ConfiguredSubtopology(
        s.subtopology_id, tasks, s.stateful, tuple(s.source_topics), tuple(s.repartition_sink_topics),
        tuple(internal(t) for t in s.repartition_source_topics),
        tuple(internal(t) for t in s.state_changelog_topics))


def _missing_internal(configured: tuple[ConfiguredSubtopology, ...],
                      partitions_of: Callable[[str], int | None]) -> tuple[InternalTopic, ...]:
    wanted: dict[str, InternalTopic] = {}
    for s in configured:
        for t in (*s.repartition_source_topics, *s.state_changelog_topics):
            wanted[t.name] = t
    missing = []
    for name in sorted(wanted):
        existing = partitions_of(name)
        if existing is None:
            missing.append(wanted[name])
        elif existing != wanted[name].partitions:
            raise _Misconfigured(TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                 f"Existing topic {name} has different number of partitions: expected "
                                 f"{wanted[name].partitions}, found {existing}")
    return tuple(missing)


def topology_from(value: Any) -> StreamsTopology:
    """A StreamsTopology from a StreamsGroupHeartbeat request's Topology (kio's, or any object
    with its field names)."""
    def info(t: Any) -> StreamsTopicInfo:
        return StreamsTopicInfo(t.name, int(t.partitions), int(t.replication_factor),
                         tuple((kv.key, kv.value) for kv in t.topic_configs))

    def subtopology(s: Any) -> Subtopology:
        return Subtopology(
            s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
            tuple(info(t) for t in s.state_changelog_topics), tuple(s.repartition_sink_topics),
            tuple(info(t) for t in s.repartition_source_topics),
            tuple(CopartitionGroup(tuple(g.source_topics), tuple(g.source_topic_regex),
                                   tuple(g.repartition_source_topics)) for g in s.copartition_groups))

    return StreamsTopology(int(value.epoch), tuple(subtopology(s) for s in value.subtopologies))

"""The requests and answers of streams groups (KIP-1071) as the core sees them: the broker
turns StreamsGroupHeartbeat / StreamsGroupDescribe / StreamsGroupTopologyDescriptionUpdate
into these and back (broker/streams/streams_group_api.py)."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.core.errors import ErrorCode
from kgroup.core.streams_records import TaskIds
from kgroup.core.streams_topology import InternalTopic, StreamsTopology

# (subtopology, partition, offset sum) reported by a member.
TaskOffsetList = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = -1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: StreamsTopology | None = None
    # What the member holds; None: unchanged since its last heartbeat.
    active_tasks: TaskIds | None = None
    standby_tasks: TaskIds | None = None
    warmup_tasks: TaskIds | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    task_offsets: TaskOffsetList | None = None
    task_end_offsets: TaskOffsetList | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True, slots=True)
class EndpointPartitions:
    """IQ: one member's endpoint and the source partitions of its tasks."""

    host: str
    port: int
    active: tuple[tuple[str, tuple[int, ...]], ...]
    standby: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupHeartbeatResponse:
    error_code: ErrorCode
    error_message: str | None
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    task_offset_interval_ms: int = 0
    acceptable_recovery_lag: int = -1
    status: tuple[tuple[int, str], ...] = ()
    # The member's tasks; None: unchanged since its last heartbeat.
    active_tasks: TaskIds | None = None
    standby_tasks: TaskIds | None = None
    warmup_tasks: TaskIds | None = None
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: tuple[EndpointPartitions, ...] | None = None
    # For the broker, not the member: internal topics to create (Kafka's creatable topics).
    to_create: tuple[InternalTopic, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedTopicInfo:
    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class DescribedSubtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    state_changelog_topics: tuple[DescribedTopicInfo, ...]
    repartition_source_topics: tuple[DescribedTopicInfo, ...]


@dataclass(frozen=True, slots=True)
class DescribedStreamsMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topology_epoch: int
    process_id: str
    user_endpoint: tuple[str, int] | None
    client_tags: tuple[tuple[str, str], ...]
    task_offsets: TaskOffsetList
    task_end_offsets: TaskOffsetList
    active: TaskIds
    standby: TaskIds
    warmup: TaskIds
    target_active: TaskIds
    target_standby: TaskIds
    target_warmup: TaskIds


@dataclass(frozen=True, slots=True)
class DescribedStreamsGroup:
    group_id: str
    error_code: ErrorCode
    error_message: str | None = None
    state: str = ""
    # A group not described (an error) shows epochs 0, as Kafka's answer leaves them.
    epoch: int = 0
    target_epoch: int = 0
    topology_epoch: int = -1
    # None: not known (an error); () when the topology is not configured.
    subtopologies: tuple[DescribedSubtopology, ...] | None = None
    members: tuple[DescribedStreamsMember, ...] = ()
    assignor_name: str | None = None


@dataclass(frozen=True, slots=True)
class TopologyDescriptionUpdate:
    """StreamsGroupTopologyDescriptionUpdate (KIP-1331): a member pushes its topology's
    description. `description` is kept opaque (the broker keeps no plug-in to store it)."""

    group_id: str
    member_id: str
    topology_epoch: int

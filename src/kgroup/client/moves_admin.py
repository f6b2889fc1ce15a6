"""Partition moves and leader elections, as Kafka's Admin has them
(alterPartitionReassignments, listPartitionReassignments, electLeaders): sent to the
controller (in a kgroup cluster any node answers the same), per-partition results back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgroup.error_codes import ErrorCode
from kgroup.wire.api_keys import ApiKey

from .cluster import ClusterClient, request_fields
from .errors import raise_for

PREFERRED, UNCLEAN = 0, 1
Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionResult:
    error: ErrorCode
    message: str | None


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _by_topic(partitions: Sequence[Partition]) -> dict[str, list[int]]:
    named: dict[str, list[int]] = {}
    for topic, partition in partitions:
        named.setdefault(topic, []).append(partition)
    return named


class MovesAdmin:
    """Reassignments and elections (see the module comment)."""

    cluster: ClusterClient

    async def alter_partition_reassignments(self, targets: Mapping[Partition, Sequence[int] | None], *,
                                            timeout_ms: int = 30000) -> dict[Partition, PartitionResult]:
        """Move each partition to its target replicas (None: cancel its move under way)."""
        topics: dict[str, list[dict]] = {}
        for (topic, partition), replicas in targets.items():
            topics.setdefault(topic, []).append(
                {"partition_index": partition, "replicas": None if replicas is None else list(replicas)})
        resp = await self._to_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, request_fields(
            timeout=timeout_ms, allow_replication_factor_change=True,
            topics=[{"name": t, "partitions": ps} for t, ps in topics.items()]))
        raise_for(ErrorCode(int(resp.error_code)), "alter partition reassignments", resp.error_message)
        return {(t.name, int(p.partition_index)): PartitionResult(ErrorCode(int(p.error_code)), p.error_message)
                for t in resp.responses for p in t.partitions}

    async def list_partition_reassignments(self, partitions: Sequence[Partition] | None = None, *,
                                           timeout_ms: int = 30000) -> dict[Partition, OngoingReassignment]:
        """The moves under way (of `partitions`, or of every partition)."""
        topics = None if partitions is None else [{"name": t, "partition_indexes": ps}
                                                  for t, ps in _by_topic(partitions).items()]
        resp = await self._to_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                         request_fields(timeout=timeout_ms, topics=topics))
        raise_for(ErrorCode(int(resp.error_code)), "list partition reassignments", resp.error_message)
        return {(t.name, int(p.partition_index)): OngoingReassignment(
            tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in resp.topics for p in t.partitions}

    async def elect_leaders(self, election_type: int, partitions: Sequence[Partition] | None = None, *,
                            timeout_ms: int = 30000) -> dict[Partition, PartitionResult]:
        """Elect leaders of `partitions` (None: every partition that needs it)."""
        topic_partitions = None if partitions is None else [{"topic": t, "partitions": ps}
                                                            for t, ps in _by_topic(partitions).items()]
        resp = await self._to_controller(ApiKey.ELECT_LEADERS, request_fields(
            election_type=election_type, topic_partitions=topic_partitions, timeout=timeout_ms))
        raise_for(ErrorCode(int(getattr(resp, "error_code", 0))), "elect leaders", None)
        return {(r.topic, int(p.partition_id)): PartitionResult(ErrorCode(int(p.error_code)), p.error_message)
                for r in resp.replica_election_results for p in r.partition_result}

    async def _to_controller(self, api: ApiKey, body: Any) -> Any:
        conn = await self._controller()   # TopicsAdmin's
        return await self.cluster.request(conn, api, body)

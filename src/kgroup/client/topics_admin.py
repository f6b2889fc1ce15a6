"""The admin client's topic and config calls: Metadata, CreateTopics, DeleteTopics,
CreatePartitions, DescribeConfigs and IncrementalAlterConfigs.

``TopicsAdmin`` is a part of ``AdminClient`` (it works over ``self.cluster``): topic changes
go to the controller; a config request goes where it is answered (the group's coordinator
keeps its configs, a broker answers for itself, the controller for topics).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgroup.wire.api_keys import ApiKey

from .cluster import ClusterMetadata, TopicInfo, request_fields
from .connection import Connection
from .errors import error_code_of, raise_for

if TYPE_CHECKING:
    from .cluster import ClusterClient


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config of a topic, broker or group, as DescribeConfigs answers it."""

    name: str
    value: str | None
    source: str                     # Kafka's ConfigSource name, e.g. DYNAMIC_TOPIC_CONFIG
    read_only: bool = False
    # (name, value, source) from the value in force down to the broker default
    synonyms: tuple[tuple[str, str | None, str], ...] = ()


# Config resource types and IncrementalAlterConfigs operations (Kafka's numbers).
TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32
CONFIG_SET, CONFIG_DELETE = 0, 1
_CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                   3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                   6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


class TopicsAdmin:
    """Topics and configs (see the module comment)."""

    cluster: ClusterClient

    # -- metadata and topics ---------------------------------------------------------

    async def metadata(
        self, topics: Iterable[str] | None = None, *, auto_create: bool = False
    ) -> ClusterMetadata:
        """Brokers and topics (all topics when ``topics`` is None)."""
        return await self.cluster.metadata(topics, auto_create=auto_create)

    async def describe_topic(self, topic: str, *, auto_create: bool = False) -> TopicInfo:
        """One topic's metadata; BrokerError UNKNOWN_TOPIC_OR_PARTITION if it is missing."""
        return await self.cluster.topic(topic, auto_create=auto_create)

    async def _controller(self) -> Connection:
        md = await self.metadata(topics=())
        if md.controller_id >= 0 and self.cluster.broker(md.controller_id) is not None:
            return await self.cluster.node(md.controller_id)
        return await self.connect()

    async def create_topics(
        self,
        topics: Mapping[str, int],
        *,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> dict[str, int]:
        """Create topics (name -> partition count); returns name -> partitions created."""
        conn = await self._controller()
        cfg = [{"name": k, "value": v} for k, v in (configs or {}).items()]
        resp = await self.cluster.request(
            conn,
            ApiKey.CREATE_TOPICS,
            request_fields(
                topics=[
                    {"name": name, "num_partitions": n, "replication_factor": replication_factor,
                     "assignments": (), "configs": cfg}
                    for name, n in topics.items()
                ],
                timeout=timeout_ms,
                validate_only=validate_only,
            ),
        )
        out: dict[str, int] = {}
        for t in resp.topics:
            raise_for(error_code_of(t), f"create topic {t.name!r}", getattr(t, "error_message", None))
            out[t.name] = int(getattr(t, "num_partitions", topics.get(t.name, -1)))
        return out

    async def delete_topics(self, topics: Sequence[str], *, timeout_ms: int = 30000) -> None:
        """Delete topics by name."""
        conn = await self._controller()
        names = list(topics)
        resp = await self.cluster.request(
            conn,
            ApiKey.DELETE_TOPICS,
            request_fields(topic_names=names, topics=[{"name": n} for n in names],
                           timeout=timeout_ms),
        )
        for r in resp.responses:
            raise_for(error_code_of(r), f"delete topic {r.name!r}", getattr(r, "error_message", None))

    async def create_partitions(
        self, topic: str, total: int, *, timeout_ms: int = 30000, validate_only: bool = False
    ) -> None:
        """Grow ``topic`` to ``total`` partitions."""
        conn = await self._controller()
        resp = await self.cluster.request(
            conn,
            ApiKey.CREATE_PARTITIONS,
            request_fields(
                topics=[{"name": topic, "count": total, "assignments": None}],
                timeout=timeout_ms,
                validate_only=validate_only,
            ),
        )
        for r in resp.results:
            raise_for(error_code_of(r), f"create partitions for {r.name!r}", getattr(r, "error_message", None))

    # -- configs ------------------------------------------------------------------------

    async def _config_request(self, resource_type: int, name: str, api_key: int, body: Any,
                              error_of: Any) -> Any:
        """A config request where it is answered: at the group's coordinator (which keeps
        the group's configs), at the broker itself, or at the controller for topics."""
        if resource_type == GROUP_RESOURCE:
            return await self._call_coordinator(name, api_key, body, error_of)
        if resource_type == BROKER_RESOURCE and name.isdigit():
            conn = await self.cluster.node(int(name))
        else:
            conn = await self._controller()
        return await self.cluster.request(conn, api_key, body)

    async def describe_configs(
        self, resource_type: int, name: str, keys: Sequence[str] | None = None, *, synonyms: bool = False
    ) -> list[ConfigEntry]:
        """Configs of one resource (TOPIC_RESOURCE, BROKER_RESOURCE or GROUP_RESOURCE)."""
        body = request_fields(
            resources=[{"resource_type": resource_type, "resource_name": name,
                        "configuration_keys": None if keys is None else list(keys)}],
            include_synonyms=synonyms, include_documentation=False)
        resp = await self._config_request(resource_type, name, ApiKey.DESCRIBE_CONFIGS, body,
                                          lambda r: error_code_of(r.results[0]) if r.results else 0)
        (result,) = resp.results
        raise_for(error_code_of(result), f"describe configs of {name!r}", result.error_message)
        return [ConfigEntry(c.name, c.value, _CONFIG_SOURCES.get(int(getattr(c, "config_source", 0)), "UNKNOWN"),
                            bool(c.read_only),
                            tuple((s.name, s.value, _CONFIG_SOURCES.get(int(s.source), "UNKNOWN"))
                                  for s in getattr(c, "synonyms", ()) or ()))
                for c in result.configs]

    async def alter_configs(
        self, resource_type: int, name: str, changes: Sequence[tuple[str, int, str | None]], *,
        validate_only: bool = False,
    ) -> None:
        """IncrementalAlterConfigs on one resource: (name, CONFIG_SET or CONFIG_DELETE, value)."""
        body = request_fields(
            resources=[{"resource_type": resource_type, "resource_name": name, "configs": [
                {"name": n, "config_operation": op, "value": v} for n, op, v in changes]}],
            validate_only=validate_only)
        resp = await self._config_request(resource_type, name, ApiKey.INCREMENTAL_ALTER_CONFIGS, body,
                                          lambda r: error_code_of(r.responses[0]) if r.responses else 0)
        (result,) = resp.responses
        raise_for(error_code_of(result), f"alter configs of {name!r}", result.error_message)

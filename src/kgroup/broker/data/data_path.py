"""DataPath: the data-path API handlers, one method per API (data/apis.py lists them).

The server decodes a request, calls the method its API's entry names with the header and
the kio request, and encodes what comes back (nothing for a Produce with acks=0). Each
method serves every version its entry lists; the handlers live in modules named for their
API (metadata_api, produce_api, fetch_api, list_offsets_api, topics_api) and share a
`DataContext` (context.py). Nothing here raises for a bad topic, partition or a storage
failure: those are answered as error codes and logged on "kgroup.broker.data".

Hooks for the group coordinator: `on_topics_changed` (given at construction) is called
after a topic is created (also by Metadata auto-creation) or deleted, or gains partitions;
`topic_ids()` maps topic names to ids.

New partitions are taken by their owners (cluster/ownership.py; in a cluster, maybe another
node, at its next poll): CreateTopics, CreatePartitions and an auto-creating Metadata wait
up to `LEADER_WAIT_S` for every new partition to have a leader before they answer, so a
client that produces right after creating a topic finds it led.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kgroup.broker.data import (
    fetch_api,
    leader_epochs_api,
    list_offsets_api,
    metadata_api,
    produce_api,
    topic_partitions_api,
    topics_api,
)
from kgroup.broker.config import BrokerConfig
from kgroup.broker.data.context import ArrivalWatch, ClusterView, DataContext, log
from kgroup.broker.data.producer_id_api import ProducerIds
from kgroup.broker.data.producer_states import ProducerStates
from kgroup.storage.producer_ids import ProducerIdBlocks
from kgroup.broker.durability import Durability
from kgroup.storage import DataDir, StorageError
from kgroup.wire import RequestHeader


# How long a topic change waits for its new partitions' leaders before it answers.
LEADER_WAIT_S = 3.0


class DataPath:
    """Produce, Fetch, ListOffsets, Metadata, CreateTopics, DeleteTopics, CreatePartitions,
    DescribeCluster, InitProducerId of idempotent producers (for TxnApi); the producer
    state of every partition (`ctx.producers`)."""

    def __init__(self, config: BrokerConfig, data: DataDir, durability: Durability,
                 cluster: ClusterView | None = None, on_topics_changed: Callable[[], None] | None = None,
                 verify_txn: Callable[..., Any] | None = None) -> None:
        self.config = config
        self.data = data
        self.durability = durability
        self.watch = ArrivalWatch()
        self.ctx = DataContext(config, data, durability, self.watch, cluster, ProducerStates(self.watch.ring),
                               verify_txn)
        self.on_topics_changed = on_topics_changed
        # Producer ids come from blocks reserved in the data dir; a new file starts past any id
        # a broker that kept no file could have given (it used the time in ms times 1000).
        self.id_blocks = ProducerIdBlocks(data.path, first=(time.time_ns() // 1_000_000 + 1) * 1000)
        self.producer_ids = ProducerIds(self.id_blocks.next)

    # -- hooks ---------------------------------------------------------------------------

    def topic_ids(self) -> dict[str, uuid.UUID]:
        """Topic name -> topic id, for every topic."""
        return {name: meta.topic_id for name, meta in self.data.topics().items()}

    def _changed(self, changed: bool) -> None:
        if changed and self.on_topics_changed is not None:
            try:
                self.on_topics_changed()
            except Exception:
                log.exception("on_topics_changed hook failed")

    async def _leaders_for(self, names: Iterable[str]) -> None:
        """Wait (bounded) until every partition of these topics has a leader."""
        deadline = time.monotonic() + LEADER_WAIT_S
        cluster = self.ctx.cluster
        names = list(names)
        while time.monotonic() < deadline:
            topics = self.data.topics()
            if all(cluster.leader(slot) is not None
                   for name in names if name in topics for slot in topics[name].slots):
                return
            await asyncio.sleep(0.01)

    # -- APIs ----------------------------------------------------------------------------

    async def metadata(self, header: RequestHeader, request: Any) -> Any:
        """Metadata."""
        response, created = metadata_api.metadata(self.ctx, header, request)
        if created:
            # Answered UNKNOWN_TOPIC_OR_PARTITION, as Kafka does (metadata_api); the client's
            # next request finds the topic led.
            self._changed(True)
            await self._leaders_for(created)
        return response

    async def produce(self, header: RequestHeader, request: Any) -> Any | None:
        """Produce; None when acks=0 (the server then sends nothing)."""
        return await produce_api.produce(self.ctx, header, request)

    async def fetch(self, header: RequestHeader, request: Any) -> Any:
        """Fetch, long-polling up to max_wait for min_bytes."""
        return await fetch_api.fetch(self.ctx, header, request)

    async def fetch_answer(self, header: RequestHeader, request: Any) -> fetch_api.FetchAnswer:
        """Fetch encoded directly, large record ranges left in the segment files."""
        return await fetch_api.fetch_answer(self.ctx, header, request)

    async def list_offsets(self, header: RequestHeader, request: Any) -> Any:
        """ListOffsets."""
        return list_offsets_api.list_offsets(self.ctx, header, request)

    async def offset_for_leader_epoch(self, header: RequestHeader, request: Any) -> Any:
        """OffsetForLeaderEpoch."""
        return leader_epochs_api.offset_for_leader_epoch(self.ctx, header, request)

    async def describe_topic_partitions(self, header: RequestHeader, request: Any) -> Any:
        """DescribeTopicPartitions."""
        return topic_partitions_api.describe_topic_partitions(self.ctx, header, request)

    async def init_producer_id(self, header: RequestHeader, request: Any) -> Any:
        """InitProducerId of an idempotent producer (no transactional id)."""
        return self.producer_ids.init_producer_id(header, request)

    async def create_topics(self, header: RequestHeader, request: Any) -> Any:
        """CreateTopics."""
        return await self._grown(topics_api.create_topics(self.ctx, header, request), request)

    async def delete_topics(self, header: RequestHeader, request: Any) -> Any:
        """DeleteTopics."""
        response, changed = topics_api.delete_topics(self.ctx, header, request)
        self._changed(changed)
        return response

    async def create_partitions(self, header: RequestHeader, request: Any) -> Any:
        """CreatePartitions."""
        return await self._grown(topics_api.create_partitions(self.ctx, header, request), request)

    async def _grown(self, answered: tuple[Any, bool], request: Any) -> Any:
        """After topics were created or grown: tell the groups, and answer once every new
        partition has a leader."""
        response, changed = answered
        self._changed(changed)
        if changed:
            await self._leaders_for(t.name for t in request.topics)
        return response

    async def describe_cluster(self, header: RequestHeader, request: Any) -> Any:
        """DescribeCluster."""
        return metadata_api.describe_cluster(self.ctx, header, request)

    # -- upkeep --------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> None:
        """Delete log segments past their topic's retention; forget idle producers
        (producer.id.expiration.ms) and what only the deleted records held."""
        deleted = 0
        for (topic, partition), plog in sorted(self.data.partition_logs().items()):
            try:
                deleted += plog.apply_retention(now_ms)
            except StorageError as exc:
                log.error("retention of %s-%d failed: %s", topic, partition, exc)
        if deleted:
            log.info("retention deleted %d segments", deleted)
        producers = self.ctx.producers
        producers.retain(self.data.partition_logs())
        producers.truncate_heads()
        expired = producers.expire(now_ms, self.config.transactions.producer_id_expiration_ms)
        if expired:
            log.info("forgot %d idle producer ids (producer_id_expiration_ms)", expired)

    def close(self) -> None:
        """Wake every long-polling fetch (they answer with what they have) and snapshot the
        producer state, so the next start reads no log tail for it."""
        self.watch.close()
        self.ctx.producers.snapshot_all()

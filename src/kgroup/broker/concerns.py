"""The broker's concerns: their API tables, and one node's parts, built and wired in one place.

How this works: `TABLES` lists every concern's API table (broker/apis.py says what an entry
holds); `SERVED` is the versions served, per API. `Node` is what one `kgroup serve` process
serves with: it opens the data dir and builds each concern's objects in dependency order,
giving each what it needs in its constructor (nothing is attached afterwards), then
compiles the tables against them (`routes`). The server (server.py) owns the listeners and
the connection loop; everything behind a decoded request is here.

Units (cluster/ownership.py): this node serves a group-metadata partition through a
coordinator shard and a topic partition through its log. `Ownership` calls back when a unit
arrives or leaves (`_unit_opened`, `_unit_releasing`, `_unit_lost`); those hooks are the
node's own methods, and every part they use is built in `__init__` before `start` lets the
ownership loop run.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import ssl
import time
import uuid
from collections.abc import Callable
from typing import Any

from kgroup.broker.admin import apis as admin_apis
from kgroup.broker.admin.client_quotas import ClientQuotas
from kgroup.broker.admin.configs_api import ConfigsApi
from kgroup.broker.admin.features import FeatureLevels
from kgroup.broker.admin.features_api import FeaturesApi, gated
from kgroup.broker.admin.quotas_api import QuotasApi
from kgroup.broker.admin.reassignments_api import ReassignmentsApi
from kgroup.broker.admin.records_api import RecordsApi
from kgroup.broker.apis import EDGE, ApiVersions, compile_apis, served_ranges
from kgroup.broker.cluster.liveness import Liveness
from kgroup.broker.cluster.node_view import NodeView
from kgroup.broker.cluster.ownership import Ownership, UnitHooks
from kgroup.broker.cluster.peers import inter_node_peers
from kgroup.broker.admin.dynamic_configs import DynamicBrokerConfigs
from kgroup.broker.config import BrokerConfig, ConfigError, ListenerConfig
from kgroup.broker.control.faults import Faults
from kgroup.broker.control.group_watch import GroupWatch
from kgroup.broker.data import apis as data_apis
from kgroup.broker.data.data_path import DataPath
from kgroup.broker.durability import Durability
from kgroup.broker.groups import apis as groups_apis
from kgroup.broker.groups.group_api import ConsumerGroupApi, GroupApi
from kgroup.broker.groups.shard import Shard, now_ms
from kgroup.broker.internal_topics import GROUP_EVENTS_TOPIC
from kgroup.broker.observe import apis as observe_apis
from kgroup.broker.observe.client_metrics_configs import ClientMetricsConfigs
from kgroup.broker.observe.client_telemetry import ClientTelemetry
from kgroup.broker.observe.telemetry_api import TelemetryApi
from kgroup.broker.observe.event_stream import GroupEventStream, ensure_topic
from kgroup.broker.observe.group_observer import GroupObserver
from kgroup.broker.observe.request_stats import FSYNC_BUCKETS, Buckets, RequestStats
from kgroup.broker.security import apis as security_apis
from kgroup.broker.security.listeners import server_ssl_context
from kgroup.broker.security.security import Security
from kgroup.broker.security.security_api import SecurityApi
from kgroup.broker.security.token_api import TokenApi
from kgroup.broker.share import apis as share_apis
from kgroup.broker.share.dead_letters import DeadLetterWriter
from kgroup.broker.share.share_fetch import ShareFetchService
from kgroup.broker.share.share_group_api import ShareGroupApi
from kgroup.broker.share.remote_share_state import RemoteShareState
from kgroup.broker.share.share_state import ShareStateStore
from kgroup.broker.share.share_state_api import ShareStateApi
from kgroup.broker.streams import apis as streams_apis
from kgroup.broker.streams.streams_group_api import StreamsGroupApi
from kgroup.broker.txn import apis as txn_apis
from kgroup.broker.txn.describe_producers_api import ProducersApi
from kgroup.broker.txn.remote_txn import RemoteTxn
from kgroup.broker.txn.txn_api import TxnApi
from kgroup.broker.txn.txn_markers import TxnMarkerChannel
from kgroup.broker.txn.write_markers_api import WriteMarkersApi
from kgroup.core.kinds import count_groups
from kgroup.storage import DataDir, FsyncPolicy, LogConfig, StorageError
from kgroup.storage.data_dir import NodeMembership
from kgroup.storage.group_hash import partition_for_group
from kgroup.storage.node_listeners import NodeListeners, publish_listeners

log = logging.getLogger("kgroup.broker")

TABLES = (EDGE, data_apis.APIS, groups_apis.APIS, share_apis.APIS, streams_apis.APIS, txn_apis.APIS,
          admin_apis.APIS, security_apis.APIS, observe_apis.APIS)
SERVED = served_ranges(TABLES)
# Guards written for APIs not served yet (each concern's apis.py says which and why).
PREPARED_GUARDS = {**data_apis.PREPARED_GUARDS, **share_apis.PREPARED_GUARDS, **txn_apis.PREPARED_GUARDS}
# How often what other processes changed in the shared data dir (credentials, ACLs, dynamic
# broker configs) is picked up.
SHARED_POLL_S = 0.5


def _member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class Node:
    """Everything one broker process serves with (see the module comment)."""

    def __init__(self, config: BrokerConfig, on_fatal: Callable[[], None]) -> None:
        cfg = self.config = config
        self.on_fatal = on_fatal           # a unit could not load: the process must stop
        self.observer = GroupObserver(cfg.log)
        self.request_stats = RequestStats()
        self.durability = Durability(FsyncPolicy.parse(cfg.fsync), Buckets(FSYNC_BUCKETS))
        nodes = sorted(cfg.nodes)
        self.data = DataDir(
            cfg.data_dir,
            metadata_partitions=cfg.metadata_partitions,
            log_config=LogConfig(segment_bytes=cfg.log_segment_bytes, retention_bytes=cfg.log_retention_bytes,
                                 retention_ms=cfg.log_retention_ms),
            membership=NodeMembership(tuple(nodes), cfg.node_id, exclusive=not cfg.cluster),
            bound_topics=frozenset({GROUP_EVENTS_TOPIC}),
        )
        self.durability.start()
        # In a cluster: this node's listeners published for the others, and theirs, so that an
        # answer on listener L names every node by its address on L (storage/node_listeners.py).
        self.peer_listeners: NodeListeners | None = None
        if cfg.cluster:
            publish_listeners(self.data.path, cfg.node_id,
                              {lst.name: (lst.protocol, lst.advertised) for lst in cfg.listeners_to_open})
            self.peer_listeners = NodeListeners(self.data.path, nodes)
        # One slot per group-metadata partition: its shard while this node owns it.
        self.shards: list[Shard | None] = [None] * cfg.metadata_partitions
        self.ownership = Ownership(
            self.data, Liveness(self.data.nodes, nodes, cfg.node_id, cfg.node_timeout_ms), nodes, cfg.node_id,
            UnitHooks(opened=self._unit_opened, releasing=self._unit_releasing, lost=self._unit_lost,
                      topics_changed=self._topics_changed, fatal=on_fatal),
            poll_ms=max(20, min(200, cfg.node_timeout_ms // 10)))
        self.faults = Faults(self._topic_id_of, SERVED)
        # The control API's waits on groups; shards report to it only while it is on.
        self.group_watch = GroupWatch() if cfg.control_listen is not None else None
        self._build_concerns()
        self._replayed = 0
        self._started = 0.0
        # The group shards' own load at start-up: from the first one's open to the last one
        # loaded (the data partitions' logs open after them, and count only in `seconds`).
        self._shards_from: float | None = None
        self._shards_to = 0.0
        self._background: list[asyncio.Task] = []

    def _build_concerns(self) -> None:
        cfg, data, durability = self.config, self.data, self.durability
        cluster_view = NodeView(self.ownership, cfg.nodes)
        # Every group request hashes its group id (a Python loop over the string); remember
        # the answer for the groups in use.
        self.shard_for = functools.lru_cache(maxsize=1 << 16)(
            lambda g: partition_for_group(g, cfg.metadata_partitions))
        self.groups = groups = GroupApi(self.shards, self.shard_for, cluster_view,
                                        on_group_deleted=self._group_deleted)
        # Node-to-node requests (transaction markers, transaction verification) to the
        # other nodes of the cluster, at their --cluster addresses or on inter_node_listener.
        self.peers = inter_node_peers(cfg, self.peer_listeners)
        remote_txn = RemoteTxn(groups, cluster_view, self.peers, data)
        # The produce path asks the transaction coordinator (here or on its node) whether a
        # transactional write may pass ...
        self.data_path = dp = DataPath(cfg, data, durability, cluster_view, on_topics_changed=self._topics_changed_here,
                                       verify_txn=remote_txn.verify)
        # ... and, for a transaction.version 2 producer, adds the partitions first (KIP-890 part 2).
        dp.ctx.add_to_txn = remote_txn.before_produce
        remote_txn.producers = dp.ctx.producers
        # Dynamic broker configs (admin/dynamic_configs.py): in force from here on, and on
        # every change. SSL listeners whose certificate one changed: (listener, context).
        self.tls_contexts: dict[str, tuple[ListenerConfig, ssl.SSLContext]] = {}
        self.broker_configs = DynamicBrokerConfigs(cfg, data.path, on_change=self._broker_configs_changed)
        # Transactions: the markers that end them, written for every shard's coordinator.
        self.markers = TxnMarkerChannel(data, dp.ctx.producers, durability, groups.shard_of, self.shard_for,
                                        cluster_view, self.peers, cfg.node_id)
        if cfg.group_events:
            # Created before any shard loads, so the coordinator's first topic image has it.
            ensure_topic(data)
        # The events are derived either way: the group log and the console read them; only
        # writing them to __kgroup_events follows the setting.
        self.events = GroupEventStream(data, durability, dp.watch.ring, write=cfg.group_events,
                                       observer=self.observer)
        # Share-partition state of groups coordinated on another node: sent there (KIP-932's persister).
        remote_share = RemoteShareState(self.peers, lambda g: cluster_view.leader(self.shard_for(g)))
        self.share_fetches = ShareFetchService(data, dp.watch, ShareStateStore(groups.shard_of, remote_share, cfg.group), dp.ctx.cluster,
                                               dp.ctx.producers, DeadLetterWriter(data, cfg, dp.watch.ring,
                                                                                self.broker_configs.value_of))
        self.security = Security(cfg.auth, cfg.data_dir)
        # Feature levels (admin/features.py): in ApiVersions, changed by UpdateFeatures, and
        # turning the consumer, share and streams group APIs on and off.
        self.features = FeatureLevels(cfg.data_dir, cfg.node_id)
        # KIP-714: client-metrics subscriptions (durable) and the clients pushing metrics.
        self.client_metrics = ClientMetricsConfigs(cfg.data_dir)
        self.telemetry = ClientTelemetry(self.client_metrics)
        # Client quotas (admin/client_quotas.py): set over AlterClientQuotas, enforced by the
        # request path.
        self.quotas = ClientQuotas(cfg.data_dir)
        self.routes = gated(compile_apis(TABLES, [
            ApiVersions(SERVED.values(), self.features, cfg.cluster_id, cfg.node_id, self.telemetry.note_software),
            FeaturesApi(self.features), dp, groups, ConsumerGroupApi(groups),
            ShareGroupApi(groups, self.share_fetches), self.share_fetches, ShareStateApi(groups), StreamsGroupApi(groups, dp.create_topics),
            TxnApi(groups, dp.init_producer_id, remote_txn), ProducersApi(dp.ctx),
            WriteMarkersApi(data, dp.ctx.producers, durability, groups),
            ConfigsApi(dp.ctx, groups, self.broker_configs, self.client_metrics, self.peers.ask), RecordsApi(dp.ctx),
            SecurityApi(self.security), TokenApi(self.security), TelemetryApi(self.telemetry),
            ReassignmentsApi(dp.ctx, cluster_view), QuotasApi(self.quotas)]),
            self.features)

    async def start(self) -> None:
        """Let the ownership loop take this node's units; the background upkeep starts."""
        self._started = time.monotonic()
        await self.ownership.start()
        self._background += [
            asyncio.create_task(self._report_loaded(), name="kgroup-loaded"),
            asyncio.create_task(self._watch_shared(self.security.refresh, "credentials or ACLs"), name="kgroup-security"),
            asyncio.create_task(self._watch_shared(self.broker_configs.refresh, "dynamic broker configs"),
                                name="kgroup-broker-configs"),
            asyncio.create_task(self._watch_shared(self.features.refresh, "feature levels"), name="kgroup-features"),
            asyncio.create_task(self._watch_shared(self.client_metrics.refresh, "client-metrics subscriptions"),
                                name="kgroup-client-metrics"),
            asyncio.create_task(self._watch_shared(self.quotas.refresh, "client quotas"), name="kgroup-quotas"),
            asyncio.create_task(self._retention(), name="kgroup-retention")]

    async def leave(self, timeout_s: float) -> None:
        """SIGTERM in a cluster: peers take this node's units while it still answers."""
        await self.ownership.leave(timeout_s=timeout_s)
        await self.ownership.stop()
        for task in self._background:
            task.cancel()

    async def close(self) -> None:
        """After the connections: write what is pending, close every log."""
        await self.markers.close()
        await self.peers.close()
        for shard in self.shards:
            if shard is not None:
                shard.close()
        self.data_path.close()
        await self.durability.close()
        self.data.sync()
        self.data.close()

    def connection_closed(self, connection: int) -> None:
        self.share_fetches.connection_closed(connection)

    # ---- what other parts ask ---------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """This node as the control API's GET /status shows it."""
        return {"node_id": self.config.node_id, "bootstrap": "%s:%d" % self.config.advertised,
                "ready": self.ownership.first_round_finished
                and all(shard.loaded for shard in self.shards if shard is not None),
                "pid": os.getpid()}

    def end_offset(self, topic: str, partition: int) -> int | None:
        try:
            return self.data.partition_log(topic, partition).log_end_offset
        except Exception:                       # deleted topic or partition: no lag to show
            return None

    def coordinators(self) -> list[Any]:
        """The groups this node coordinates now (in a cluster, its shards come and go)."""
        return [s.coordinator for s in self.shards if s is not None]

    def _topic_id_of(self, name: str) -> str | None:
        meta = self.data.topics().get(name)
        return None if meta is None else str(meta.topic_id)

    def _group_deleted(self, group_id: str) -> None:
        self.share_fetches.group_deleted(group_id)

    def _topic_image(self) -> dict[str, tuple[str, int]]:
        return {name: (str(meta.topic_id), meta.partitions) for name, meta in self.data.topics().items()}

    def _topics_changed(self) -> None:
        """Consumer groups subscribed to a topic that changed get a new group epoch."""
        image = self._topic_image()
        for shard in self.shards:
            if shard is not None and shard.loaded and not shard.closed:
                shard.update_topics(image)

    def _topics_changed_here(self) -> None:
        """A topic was created, grown or deleted through this node: update the groups, and
        take the new partitions this node should lead right away."""
        self._topics_changed()
        self.ownership.tick()

    # ---- units (cluster/ownership.py) ---------------------------------------------------------

    def _unit_opened(self, slot: int, epoch: int, previous_node: int | None, started: float) -> str:
        """A unit's logs are open here: a group-metadata partition gets its shard, loaded,
        and each of its groups a coordinator_loaded event."""
        if slot >= len(self.shards):
            return "topic partition"
        # Markers carry the ownership epoch: a coordinator that lost the partition can never
        # write markers in the name of the one that took it over.
        shard = Shard(slot, self.data.metadata_log.partition(slot), self.config.group, self.durability, _member_id,
                      self.config.transactions, self.data_path.id_blocks.next, events=self.events,
                      watch=self.group_watch, on_markers=self.markers.send, coordinator_epoch=epoch,
                      gate=self.ownership.gate, on_fenced=self.ownership.check_fences)
        self.shards[slot] = shard            # answers COORDINATOR_LOAD_IN_PROGRESS until loaded
        image = self._topic_image()
        shard.coordinator.shard.topics = dict(image)
        records = shard.load(self.ownership.keepalive)
        shard.update_topics(image)
        self._replayed += records
        if self._shards_from is None:
            self._shards_from = started
        self._shards_to = time.monotonic()
        self.events.coordinator_loaded(shard, self.config.node_id, previous_node,
                                       int((time.monotonic() - started) * 1000), now_ms())
        return f"records={records} groups={count_groups(shard.coordinator.shard)}"

    async def _unit_releasing(self, slot: int, to: int | None) -> None:
        """Hand-over: let what this unit has in flight finish before its logs close; its
        groups get a coordinator_unloaded event."""
        if slot < len(self.shards):
            shard = self.shards[slot]
            if shard is not None:
                await shard.drain()
                await self.events.coordinator_unloaded(shard, self.config.node_id, to, now_ms())
                self.shards[slot] = None
        for (topic, p), plog in self._unit_logs(slot):
            try:
                await self.durability.durable(plog, plog.log_end_offset)
            except Exception as exc:
                log.warning("handing over %s-%d: its last writes did not become durable: %s", topic, p, exc)
            self._partition_moved(topic, p)

    def _unit_logs(self, slot: int) -> list:
        found = []
        for topic, meta in self.data.topics().items():
            for p, s in enumerate(meta.slots):
                if s == slot:
                    plog = self.data.draining_log(topic, p)
                    if plog is not None:
                        found.append(((topic, p), plog))
        return found

    def _unit_lost(self, slot: int) -> None:
        """Another node owns the unit now: drop its shard at once."""
        if slot < len(self.shards):
            shard = self.shards[slot]
            self.shards[slot] = None
            if shard is not None:
                shard.close()
        for topic, meta in self.data.topics().items():
            for p, s in enumerate(meta.slots):
                if s == slot:
                    self._partition_moved(topic, p)

    def _partition_moved(self, topic: str, p: int) -> None:
        """Wake its long polls; its producer state is rebuilt from the log if the partition
        comes back, its share partitions from their persisted state."""
        self.data_path.watch.ring((topic, p))
        self.data_path.ctx.producers.forget((topic, p))
        self.share_fetches.partition_moved(topic, p)

    # ---- upkeep -----------------------------------------------------------------------------

    async def _report_loaded(self) -> None:
        await self.ownership.first_round_done()
        groups = sum(count_groups(s.coordinator.shard) for s in self.shards if s is not None)
        shards_s = self._shards_to - self._shards_from if self._shards_from is not None else 0.0
        log.info("coordinator loaded: records=%d groups=%d seconds=%.3f shards_seconds=%.3f", self._replayed, groups,
                 time.monotonic() - self._started, shards_s)

    async def _retention(self) -> None:
        interval = self.config.log_retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.ownership.gate()
                self.data_path.apply_retention(now_ms())
            except Exception:
                log.exception("log retention pass failed")

    async def _watch_shared(self, refresh: Callable[[], Any], what: str) -> None:
        """Pick up what another node or an offline tool changed in the shared data dir
        (credentials and ACLs, dynamic broker configs)."""
        while True:
            await asyncio.sleep(SHARED_POLL_S)
            try:
                refresh()
            except StorageError as exc:
                log.error("cannot re-read %s (keeping the ones loaded): %s", what, exc)

    def _broker_configs_changed(self, dynamic: DynamicBrokerConfigs) -> None:
        """Dynamic broker configs changed (here or through another node): in force for the
        next request, the topics' logs and the next TLS connection."""
        self.data_path.config = self.data_path.ctx.config = dynamic.effective
        self.data.set_default_log_config(dynamic.log_config)
        for listener in self.config.listeners_to_open:
            wanted = dynamic.listeners.get(listener.name, listener)
            held = self.tls_contexts.get(listener.name)
            if not listener.ssl or (held is None and wanted == listener) or (held is not None and held[0] == wanted):
                continue
            try:
                self.tls_contexts[listener.name] = (wanted, server_ssl_context(wanted))
                log.info("listener %s: TLS from %s for new connections", listener.name, wanted.ssl_certfile)
            except ConfigError as exc:
                log.error("listener %s keeps its certificate: %s", listener.name, exc)

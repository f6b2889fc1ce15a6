"""`kgroup serve`: the asyncio broker process.

How this works: one asyncio server accepts connections; each connection reads frames
(FrameSplitter, bounded by the maximum request size), decodes them with the wire layer and
answers them one at a time in order, as Kafka does (a parked JoinGroup holds its
connection's later requests until it is answered). Group APIs go to the coordinator shard
that owns the group (one per group-metadata log partition); data APIs go to DataPath.
Anything a client sends that we cannot serve gets an error response or, for bytes we cannot
even frame or decode, a closed connection — never a crash of the broker. SIGTERM/SIGINT
stop accepting, let in-flight requests finish briefly, sync every log and exit 0.

Fetch answers leave their large record ranges in the segment files (fetch_api.py): on a
plain TCP connection they go to the socket with sendfile between the response bytes around
them (`send_answer`); where the kernel cannot send a file (TLS) they are read in.

Watching the coordinator costs nothing per request unless asked for: every group change is
logged from the group events (group_observer.py); with `--http-listen` a second listener
serves the web console and /metrics (console/), and requests are counted by API and error
code; with DEBUG logging each request is logged.

Security: each listener (broker/config.py, broker/listeners.py) is its own server, with TLS
where its protocol says so. A connection is served by one of two paths chosen when it is
accepted: `_handle` (today's path: no SASL, no authorizer, nothing to translate — a PLAINTEXT
or SSL listener of a broker without `[auth] authorizer`) or `_handle_secured`, which first
lets the connection's SASL session decide whether the request may pass
(broker/authentication.py), then applies the API's guard from acl_rules.RULES (refuse, or
serve a narrowed request and finish the response), and names the connection's listener in
Metadata, FindCoordinator and DescribeCluster. Deciding once per connection keeps the unsecured path as fast
as it was.

With `--control-listen`, a second listener serves the control API (control_api.py), and
every decoded request, on either path, is first offered to the armed faults (faults.py) —
one attribute test per request while none is armed.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import signal
import socket
import ssl
import sys
import time
import uuid
from typing import Any

from kgroup.broker.acl_rules import OPEN, RULES
from kgroup.broker.authentication import Peer, illegal_state, sasl_answer, unframed_answer
from kgroup.broker.authorization import Access, Refused
from kgroup.broker.config import FLAG_KEYS, BrokerConfig, ConfigError, ListenerConfig, load_config
from kgroup.broker.configs_api import ConfigsApi
from kgroup.broker.durability import Durability
from kgroup.broker.dynamic_configs import DynamicBrokerConfigs
from kgroup.broker.event_stream import GroupEventStream, ensure_topic
from kgroup.broker.faults import Action, Faults
from kgroup.broker.fetch_api import FetchAnswer
from kgroup.broker.group_api import ConsumerGroupApi, GroupApi
from kgroup.broker.streams_group_api import StreamsGroupApi
from kgroup.broker.group_observer import GroupObserver
from kgroup.broker.group_view import GroupViews
from kgroup.broker.group_watch import GroupWatch
from kgroup.broker.internal_topics import GROUP_EVENTS_TOPIC
from kgroup.broker.liveness import Liveness
from kgroup.broker.log_format import configure_logging
from kgroup.broker.node_view import NodeView
from kgroup.broker.ownership import Ownership, UnitHooks
from kgroup.broker.request_stats import RequestStats
from kgroup.broker.listeners import ANONYMOUS, advertise_on, server_ssl_context, tls_principal
from kgroup.broker.security import Security
from kgroup.broker.security_api import SecurityApi
from kgroup.broker.shard import Shard, now_ms
from kgroup.broker.share_fetch import ShareFetchService
from kgroup.broker.share_group_api import ShareGroupApi
from kgroup.broker.share_state import ShareStateStore
from kgroup.broker.txn_api import TxnApi
from kgroup.broker.txn_markers import TxnMarkerChannel
from kgroup.storage import DataDir, FsyncPolicy, LogConfig, StorageError
from kgroup.storage.control_files import publish_control_address, withdraw_control_address
from kgroup.storage.data_dir import Membership
from kgroup.storage.group_hash import partition_for_group
from kgroup.wire.versions import SUPPORTED_APIS
from kgroup.wire import (
    FrameSplitter,
    FramingError,
    MalformedRequest,
    RequestHeader,
    UnsupportedVersion,
    api_versions_response,
    decode_request,
    encode_api_versions_fallback,
    encode_response,
    not_kafka,
)
from kgroup.wire.error_responses import error_response
from kgroup.wire.sasl import Gate

log = logging.getLogger("kgroup.broker")
request_log = logging.getLogger("kgroup.broker.requests")

API_VERSIONS = 18
PRODUCE = 0
READ_CHUNK = 256 * 1024
# How often credentials and ACLs changed by other processes are picked up.
SECURITY_POLL_S = 0.5
# A client that connects to a TLS listener and does not finish the handshake is dropped.
TLS_HANDSHAKE_TIMEOUT_S = 10.0
# Nothing is held back any more: the consumer protocol (68, 69) is served.
DISABLED_APIS: frozenset[int] = frozenset()
# SIGTERM: how long a cluster node spends handing its partitions over before it exits.
HAND_OVER_TIMEOUT_S = 10.0
# Handlers that also take the client's host (they record it with the member), and those
# that take the connection's id (share sessions end with their connection).
WITH_CLIENT_HOST = frozenset({11, 68, 76, 88})
WITH_CONNECTION = frozenset({78, 79})


def _member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.data: DataDir | None = None
        self.durability: Durability | None = None
        self.shards: list[Shard] = []
        self.server: asyncio.AbstractServer | None = None
        self.servers: list[asyncio.AbstractServer] = []
        self.connections: set[asyncio.Task] = set()
        self.handlers: dict[int, Any] = {}
        self._stopping = asyncio.Event()
        self.exit_status = 0
        self.interrupted = False
        self._background: list[asyncio.Task] = []
        self.observer = GroupObserver(config.log)
        self.request_stats = RequestStats()
        self.console: Any = None
        # SSL listeners whose certificate a dynamic broker config changed: (listener, context).
        self.tls_contexts: dict[str, tuple[ListenerConfig, ssl.SSLContext]] = {}
        # Per request: count it (console on) and/or log it (DEBUG); decided once at start,
        # so a broker doing neither pays two attribute tests per request.
        self._count_requests = False
        self._debug_requests = False
        self.faults = Faults(self._topic_id_of)
        self.control: Any = None
        self.group_watch: GroupWatch | None = None   # the control API's waits, when it is on

    # ---- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        cfg = self.config
        # Bind first: a wrong --listen is reported before the data dir is touched; connections
        # wait in the backlog until everything below is ready.
        for listener in cfg.listeners_to_open:
            # TLS is started by the connection itself (not start_server's ssl=), so a failed
            # handshake is logged with its reason instead of vanishing.
            tls = server_ssl_context(listener) if listener.ssl else None
            try:
                server = await asyncio.start_server(
                    functools.partial(self._serve_connection, listener=listener, tls=tls),
                    listener.host, listener.port, reuse_address=True, start_serving=False)
            except OSError as exc:
                raise ListenError(listen_problem(listener.host, listener.port, exc)) from None
            self.servers.append(server)
        self.server = self.servers[0]
        self.durability = Durability(FsyncPolicy.parse(cfg.fsync))
        nodes = sorted(cfg.nodes)
        self.data = DataDir(
            cfg.data_dir,
            metadata_partitions=cfg.metadata_partitions,
            log_config=LogConfig(segment_bytes=cfg.log_segment_bytes, retention_bytes=cfg.log_retention_bytes,
                                 retention_ms=cfg.log_retention_ms),
            membership=Membership(tuple(nodes), cfg.node_id, exclusive=not cfg.cluster),
            bound_topics=frozenset({GROUP_EVENTS_TOPIC}),
        )
        self.durability.start()
        # One slot per group-metadata partition: its shard while this node owns it.
        self.shards: list[Shard | None] = [None] * cfg.metadata_partitions
        liveness = Liveness(self.data.nodes, nodes, cfg.node_id, cfg.node_timeout_ms)
        hooks = UnitHooks(opened=self._unit_opened, releasing=self._unit_releasing, lost=self._unit_lost,
                          topics_changed=self._topics_changed, fatal=self._unit_failed)
        self.ownership = Ownership(self.data, liveness, nodes, cfg.node_id, hooks,
                                   poll_ms=max(20, min(200, cfg.node_timeout_ms // 10)))
        self.cluster_view = NodeView(self.ownership, cfg.nodes)
        # Every group request hashes its group id (a Python loop over the string); remember
        # the answer for the groups in use.
        shard_for = functools.lru_cache(maxsize=1 << 16)(
            lambda g: partition_for_group(g, cfg.metadata_partitions))
        groups = GroupApi(self.shards, shard_for, self.cluster_view)
        from kgroup.broker.data_path import DataPath  # noqa: PLC0415 (data path is optional at import)
        self.data_path = DataPath(cfg, self.data, self.durability, self.cluster_view)
        dp = self.data_path
        dp.on_topics_changed = self._topics_changed_here
        # Dynamic broker configs (dynamic_configs.py): in force from here on, and on every change.
        self.broker_configs = DynamicBrokerConfigs(cfg, self.data.path, on_change=self._broker_configs_changed)
        # Transactions: the coordinator's APIs, the produce path's verification, and the
        # channel that writes markers for every shard (each shard gets it as it loads).
        txn = TxnApi(groups, dp.init_producer_id)
        dp.ctx.verify_txn = txn.verify
        self.markers = TxnMarkerChannel(self.data, dp.ctx.producers, self.durability, groups.shard_of)
        if cfg.group_events:
            # Created before any shard loads, so the coordinator's first topic image has it.
            ensure_topic(self.data)
        # The events are derived either way: the group log and the console read them; only
        # writing them to __kgroup_events follows the setting. (Shards get it as they load.)
        self.events = GroupEventStream(self.data, self.durability, dp.watch.ring, write=cfg.group_events,
                                       observer=self.observer)
        consumer = ConsumerGroupApi(groups)
        self.share_fetches = ShareFetchService(self.data, dp.watch, ShareStateStore(groups.shard_of),
                                               dp.ctx.cluster, dp.ctx.producers)
        share = ShareGroupApi(groups, self.share_fetches)
        streams = StreamsGroupApi(groups, dp.create_topics)
        groups.on_group_deleted.append(self.share_fetches.group_deleted)
        self.security = Security(cfg.auth, cfg.data_dir)
        secure = SecurityApi(self.security)
        self.handlers = {
            0: dp.produce, 1: dp.fetch_answer, 2: dp.list_offsets, 3: dp.metadata,
            8: groups.offset_commit, 9: groups.offset_fetch, 10: groups.find_coordinator,
            11: groups.join_group, 12: groups.heartbeat, 13: groups.leave_group, 14: groups.sync_group,
            15: groups.describe_groups, 16: groups.list_groups,
            19: dp.create_topics, 20: dp.delete_topics, 22: txn.init_producer_id,
            24: txn.add_partitions_to_txn, 25: txn.add_offsets_to_txn, 26: txn.end_txn,
            28: txn.txn_offset_commit, 37: dp.create_partitions,
            42: groups.delete_groups, 47: groups.offset_delete, 61: dp.describe_producers,
            65: txn.describe_transactions, 66: txn.list_transactions,
            68: consumer.heartbeat, 69: consumer.describe,
            17: secure.sasl_outside_sasl, 36: secure.sasl_outside_sasl,
            29: secure.describe_acls, 30: secure.create_acls, 31: secure.delete_acls,
            50: secure.describe_user_scram_credentials, 51: secure.alter_user_scram_credentials,
            76: share.heartbeat, 77: share.describe,
            78: self.share_fetches.share_fetch, 79: self.share_fetches.share_acknowledge,
            90: share.describe_offsets, 91: share.alter_offsets, 92: share.delete_offsets,
            88: streams.heartbeat, 89: streams.describe, 93: streams.topology_description_update,
        }
        # Where a handler answers encoded already (Fetch, for sendfile), the one that answers a
        # kio object, for an authorization guard's finish step to edit (`_secured_response`).
        self.editable_handlers = {1: dp.fetch}
        self._connection_ids = 0
        configs = ConfigsApi(dp.ctx, groups, self.broker_configs)
        self.handlers.update({
            21: dp.delete_records, 32: configs.describe_configs, 33: configs.alter_configs,
            35: dp.describe_log_dirs, 44: configs.incremental_alter_configs, 60: dp.describe_cluster,
        })
        for listener, server in zip(cfg.listeners_to_open, self.servers):
            await server.start_serving()
            host, port = server.sockets[0].getsockname()[:2]
            extra = f" mechanisms={','.join(listener.sasl_mechanisms)}" if listener.sasl else ""
            log.info("listening on %s:%d (%s %s%s) advertised=%s:%d", host, port, listener.name,
                     listener.protocol, extra, *listener.advertised)
        self.bound = self.server.sockets[0].getsockname()[:2]
        where = f" node={cfg.node_id} cluster={','.join(map(str, nodes))}" if cfg.cluster else ""
        log.info("data_dir=%s fsync=%s authorizer=%s%s", cfg.data_dir, cfg.fsync,
                 "on" if self.security.authorizer is not None else "off", where)
        if cfg.http_listen_host is not None:
            from kgroup.broker.console.app import Console  # noqa: PLC0415 (prometheus_client only when on)
            # The groups this node coordinates now (in a cluster, its shards come and go).
            self.console = Console(GroupViews(lambda: [s.coordinator for s in self.shards if s is not None]),
                                   self.observer,
                                   self.request_stats, self.durability.fsync_seconds, self._end_offset)
            try:
                http_host, http_port = await self.console.start(cfg.http_listen_host, cfg.http_listen_port)
            except OSError as exc:
                for server in self.servers:
                    server.close()
                raise ListenError(f"cannot listen for HTTP on {cfg.http_listen_host}:{cfg.http_listen_port}: "
                                  f"{exc.strerror} — is something else listening there? Pick another "
                                  "--http-listen address.") from None
            self.http_bound = (http_host, http_port)
            self._count_requests = True
            log.info("web console and metrics on http://%s:%d/ (read-only)", http_host, http_port)
        if cfg.control_listen is not None:
            await self._start_control(groups, shard_for, *cfg.control_listen)
        self._debug_requests = request_log.isEnabledFor(logging.DEBUG)
        self._started = time.monotonic()
        self._replayed = 0
        await self.ownership.start()
        self._background.append(asyncio.create_task(self._report_loaded(), name="kgroup-loaded"))
        self._background.append(asyncio.create_task(
            self._watch_shared(self.security.refresh, "credentials or ACLs"), name="kgroup-security"))
        self._background.append(asyncio.create_task(
            self._watch_shared(self.broker_configs.refresh, "dynamic broker configs"), name="kgroup-broker-configs"))
        self._background.append(asyncio.create_task(self._retention(), name="kgroup-retention"))

    def _end_offset(self, topic: str, partition: int) -> int | None:
        try:
            return self.data.partition_log(topic, partition).log_end_offset
        except Exception:                       # deleted topic or partition: no lag to show
            return None

    async def _start_control(self, groups: GroupApi, shard_for: Any, host: str, port: int) -> None:
        from kgroup.broker.control_api import ControlApi  # noqa: PLC0415 (only with --control-listen)
        from kgroup.broker.control_cluster import ControlCluster  # noqa: PLC0415

        # Shards load later (and come and go in a cluster): each gets the watch as it loads.
        self.group_watch = watch = GroupWatch()
        cluster = ControlCluster(self.ownership, self.data, shard_for, self.config.nodes)
        self.control = ControlApi(self.faults, groups, watch, self.config.node_id, self._status, cluster)
        try:
            self.control_bound = await self.control.start(host, port)
        except OSError as exc:
            for server in self.servers:
                server.close()
            raise ListenError(f"cannot listen on {host}:{port} for the control API: {exc.strerror}"
                              " — pick another --control-listen address.") from None
        if self.config.cluster:
            # Where the other nodes forward what lives here (control_cluster.py).
            publish_control_address(self.data.path, self.config.node_id, "%s:%d" % self.control_bound)
        log.info("control API listening on %s:%d", *self.control_bound)

    def _status(self) -> dict[str, Any]:
        """This node as the control API's GET /status shows it."""
        return {"node_id": self.config.node_id, "bootstrap": "%s:%d" % self.config.advertised,
                "ready": self.ownership.first_round_finished
                and all(shard.loaded for shard in self.shards if shard is not None),
                "pid": os.getpid()}

    def _topic_id_of(self, name: str) -> str | None:
        meta = self.data.topics().get(name) if self.data is not None else None
        return None if meta is None else str(meta.topic_id)

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

    # ---- units (broker/ownership.py) -------------------------------------------------------

    def _unit_opened(self, slot: int, epoch: int, previous_node: int | None, started: float) -> str:
        """A unit's logs are open here: a group-metadata partition gets its shard, loaded,
        and each of its groups a coordinator_loaded event."""
        if slot >= len(self.shards):
            return "topic partition"
        shard = Shard(slot, self.data.metadata_log.partition(slot), self.config.group, self.durability, _member_id,
                      self.config.transactions, self.data_path.id_blocks.next)
        shard.events = self.events
        shard.watch = self.group_watch
        shard.on_markers = self.markers.send
        # Markers carry the ownership epoch: a coordinator that lost the partition can never
        # write markers in the name of the one that took it over.
        shard.coordinator_epoch = epoch
        shard.gate = self.ownership.gate
        shard.on_fenced = self.ownership.check_fences
        self.shards[slot] = shard            # answers COORDINATOR_LOAD_IN_PROGRESS until loaded
        image = self._topic_image()
        shard.coordinator.shard.topics = dict(image)
        records = shard.load(self.ownership.keepalive)
        shard.update_topics(image)
        self._replayed += records
        if self.events is not None:
            self.events.coordinator_loaded(shard, self.config.node_id, previous_node,
                                           int((time.monotonic() - started) * 1000), now_ms())
        return f"records={records} groups={len(shard.coordinator.groups) + len(shard.coordinator.consumer_groups)}"

    async def _unit_releasing(self, slot: int, to: int | None) -> None:
        """Hand-over: let what this unit has in flight finish before its logs close; its
        groups get a coordinator_unloaded event."""
        if slot < len(self.shards):
            shard = self.shards[slot]
            if shard is not None:
                await shard.drain()
                if self.events is not None:
                    await self.events.coordinator_unloaded(shard, self.config.node_id, to, now_ms())
                self.shards[slot] = None
        for (topic, p), plog in self._unit_logs(slot):
            try:
                await self.durability.durable(plog, plog.log_end_offset)
            except Exception as exc:
                log.warning("handing over %s-%d: its last writes did not become durable: %s", topic, p, exc)
            self.data_path.watch.ring((topic, p))
            self.data_path.ctx.producers.forget((topic, p))
            self.share_fetches.partition_moved(topic, p)

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
                    self.data_path.watch.ring((topic, p))
                    # Its producer state is rebuilt from the log if the partition comes back;
                    # its share partitions from their persisted state.
                    self.data_path.ctx.producers.forget((topic, p))
                    self.share_fetches.partition_moved(topic, p)

    def _unit_failed(self) -> None:
        # A partition that cannot load would never be served: stop loudly.
        self.exit_status = 1
        self.request_stop()

    async def _report_loaded(self) -> None:
        await self.ownership.first_round_done()
        groups = sum(len(s.coordinator.groups) + len(s.coordinator.consumer_groups)
                     for s in self.shards if s is not None)
        log.info("coordinator loaded: records=%d groups=%d seconds=%.3f", self._replayed, groups,
                 time.monotonic() - self._started)

    async def _retention(self) -> None:
        interval = self.config.log_retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.ownership.gate()
                self.data_path.apply_retention(now_ms())
            except Exception:
                log.exception("log retention pass failed")

    async def _watch_shared(self, refresh: Any, what: str) -> None:
        """Pick up what another node or an offline tool changed in the shared data dir
        (credentials and ACLs, dynamic broker configs)."""
        while True:
            await asyncio.sleep(SECURITY_POLL_S)
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

    def request_stop(self) -> None:
        self._stopping.set()

    def interrupt(self) -> None:
        """Ctrl-C: stop as on SIGTERM, then exit 130 as a shell reports SIGINT."""
        self.interrupted = True
        self.request_stop()

    async def run_until_stopped(self) -> None:
        await self._stopping.wait()
        await self.stop()

    async def stop(self) -> None:
        if hasattr(self, "ownership"):
            # Peers take this node's partitions while it still answers (NOT_COORDINATOR).
            await self.ownership.leave(timeout_s=HAND_OVER_TIMEOUT_S)
            await self.ownership.stop()
        log.info("stopping: finishing in-flight requests")
        for server in self.servers:
            server.close()
        if self.console is not None:
            await self.console.close()
        if self.control is not None:
            if self.config.cluster:
                withdraw_control_address(self.data.path, self.config.node_id)
            await self.control.close()
        for task in self._background:
            task.cancel()
        if self.connections:
            # Requests already being served get a moment; parked joins are cut off.
            _, pending = await asyncio.wait(self.connections, timeout=1.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if hasattr(self, "markers"):
            await self.markers.close()
        for shard in self.shards:
            if shard is not None:
                shard.close()
        if hasattr(self, "data_path"):
            self.data_path.close()
        if self.durability is not None:
            await self.durability.close()
        if self.data is not None:
            self.data.sync()
            self.data.close()
        log.info("stopped cleanly")

    # ---- connections ----------------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                                listener: ListenerConfig | None = None, tls: ssl.SSLContext | None = None) -> None:
        task = asyncio.current_task()
        self.connections.add(task)
        peer = writer.get_extra_info("peername")
        if tls is not None and listener.name in self.tls_contexts:
            tls = self.tls_contexts[listener.name][1]     # a dynamic broker config changed it
        if tls is not None and not await self._start_tls(writer, tls, peer, listener):
            self.connections.discard(task)
            return
        splitter = FrameSplitter(self.config.max_request_bytes)
        transport = writer.transport
        # Decided once per connection: the secured path only where it has work to do.
        context: Any = f"/{peer[0]}" if peer else ""
        handle = self._handle
        own = self.ownership
        if listener is not None and (listener.sasl or self.security.authorizer is not None
                                     or listener.advertised != self.config.advertised):
            handle = self._handle_secured
            advertised = listener.advertised if listener.advertised != self.config.advertised else None
            principal = tls_principal(writer) if listener.ssl else ANONYMOUS
            context = Peer(listener, peer[0] if peer else "", principal,
                           self.security.sasl_session(listener) if listener.sasl else None,
                           splitter, self.config.max_request_bytes, advertised)
        self._connection_ids += 1
        connection = self._connection_ids
        out: list[bytes] = []  # responses not yet handed to the transport, in order
        opening = b""  # the connection's first bytes, until a frame has been read
        # Fetch answers go out with sendfile on a plain TCP connection; through TLS (this
        # listener's, started by `_start_tls`: the kernel cannot encrypt a file it sends)
        # their records are read in and written as bytes.
        zero_copy = tls is None and writer.get_extra_info("socket") is not None
        try:
            while True:
                chunk = await reader.read(READ_CHUNK)
                if not chunk:
                    return
                if opening is not None and len(opening) < 64:
                    opening += chunk[:64]
                frames = splitter.feed(chunk)
                if frames:
                    opening = None
                # Answers computed before this node learnt it lost partitions (it was paused
                # in between) are not sent: the connection closes and the client rediscovers.
                losses = own.losses
                for frame in frames:
                    # Most requests (heartbeats, commits with fsync=never, fetches with data)
                    # complete without ever suspending: run the handler's first step here and
                    # collect its response, so one read chunk of pipelined requests costs one
                    # send() instead of one per response. A handler that does suspend (a
                    # parked JoinGroup, a long-poll Fetch, an fsync wait) first releases the
                    # responses collected so far, then is awaited as usual.
                    coro = handle(frame, context, connection)
                    try:
                        yielded = coro.send(None)
                    except StopIteration as done:
                        response = done.value
                    else:
                        if out:
                            self._may_answer(losses, out)
                            transport.write(b"".join(out))
                            out.clear()
                        response = await _Resume(coro, yielded)
                    if response is None:
                        continue
                    if type(response) is bytes:
                        out.append(response)
                    elif response.zero_copy:
                        self._may_answer(losses, out)
                        await send_answer(writer, out, response, zero_copy)
                        out.clear()
                        if transport.get_write_buffer_size() > (1 << 20):
                            await writer.drain()  # a read-in (TLS) answer may be large
                    else:
                        out.append(response.parts[0])
                if out:
                    self._may_answer(losses, out)
                    transport.write(b"".join(out) if len(out) > 1 else out[0])
                    out.clear()
                    if transport.get_write_buffer_size() > (1 << 20):
                        await writer.drain()
        except FramingError as exc:
            other = not_kafka(opening) if opening is not None else None
            if other is not None:
                log.warning("closing connection from %s: not a Kafka client (%s)", peer, other)
            else:
                log.warning("closing connection from %s: %s", peer, exc)
        except _CloseConnection as exc:
            log.warning("closing connection from %s: %s", peer, exc)
            if exc.last_response is not None:
                out.append(exc.last_response)
        except _OwnershipLost:
            log.info("closing connection from %s: this node lost partitions while answering it", peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection from %s after an internal error", peer)
        finally:
            self.connections.discard(task)
            if hasattr(self, "share_fetches"):
                self.share_fetches.connection_closed(connection)
            if out and not transport.is_closing():
                transport.write(b"".join(out))  # answers to the requests before the bad one
            writer.close()

    def _may_answer(self, losses: int, out: list[bytes]) -> None:
        """Before answers go out: renew first if this node was paused (one clock read when
        not), and refuse to send them if it lost partitions since they were computed."""
        own = self.ownership
        own.gate()
        if own.losses != losses:
            out.clear()
            raise _OwnershipLost()

    async def _start_tls(self, writer: asyncio.StreamWriter, tls: ssl.SSLContext, peer: Any,
                         listener: ListenerConfig | None) -> bool:
        """The TLS handshake of a new connection; False (logged, closed) if it fails."""
        try:
            async with asyncio.timeout(TLS_HANDSHAKE_TIMEOUT_S):
                await writer.start_tls(tls)
            return True
        except (ssl.SSLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            log.warning("TLS handshake with %s on %s failed: %s", peer, listener.name if listener else "?", reason)
        except asyncio.CancelledError:
            pass
        writer.transport.abort()
        return False

    def _decode(self, frame: bytes) -> tuple[RequestHeader, Any] | bytes:
        """(header, request), or the ApiVersions fallback answer to send as it is."""
        self.ownership.gate()
        try:
            return decode_request(frame, disabled=DISABLED_APIS)
        except UnsupportedVersion as exc:
            if exc.api_key == API_VERSIONS:
                # Too new for us: answer in v0 format with our ranges so the client falls back.
                return encode_api_versions_fallback(exc.correlation_id, disabled=DISABLED_APIS)
            raise _CloseConnection(str(exc)) from None
        except MalformedRequest as exc:
            raise _CloseConnection(f"malformed request: {exc}") from None

    async def _call(self, header: RequestHeader, request: Any, client_host: str, connection: int,
                    editable: bool = False) -> Any:
        """The handler's answer; with `editable`, always a kio object (never a FetchAnswer)."""
        handler = (editable and self.editable_handlers.get(header.api_key)) or self.handlers[header.api_key]
        try:
            if header.api_key in WITH_CLIENT_HOST:
                return await handler(header, request, client_host)
            if header.api_key in WITH_CONNECTION:
                return await handler(header, request, connection)
            return await handler(header, request)
        except StorageError as exc:
            log.error("storage error serving api %d: %s", header.api_key, exc)
            raise _CloseConnection("storage error") from None

    async def _handle(self, frame: bytes, client_host: str, connection: int) -> bytes | FetchAnswer | None:
        decoded = self._decode(frame)
        if isinstance(decoded, bytes):
            return decoded
        header, request = decoded
        if self.faults.armed:
            faulted = await self._faulted(header, request)
            if faulted is not _SERVE:
                return faulted
        if header.api_key == API_VERSIONS:
            response = api_versions_response(header.api_version, disabled=DISABLED_APIS)
        else:
            handler = self.handlers[header.api_key]
            try:
                if header.api_key in WITH_CLIENT_HOST:
                    response = await handler(header, request, client_host)
                elif header.api_key in WITH_CONNECTION:
                    response = await handler(header, request, connection)
                else:
                    response = await handler(header, request)
            except StorageError as exc:
                log.error("storage error serving api %d: %s", header.api_key, exc)
                raise _CloseConnection("storage error") from None
        if self._count_requests:
            # Inline (see request_stats.py): a list bump per request, a dict only on errors.
            self.request_stats.by_api[header.api_key] += 1
            if getattr(response, "error_code", 0):
                self.request_stats.count_error(header.api_key, response.error_code)
        if self._debug_requests:
            self._log_request(header, response, client_host)
        if response is None:
            return None
        if type(response) is FetchAnswer:
            return response              # encoded already; its records may still be in files
        return encode_response(header, response)

    def _log_request(self, header: Any, response: Any, client_host: str) -> None:
        r = SUPPORTED_APIS.get(header.api_key)
        api = r.name if r is not None else str(header.api_key)
        error = int(getattr(response, "error_code", 0) or 0)
        request_log.debug("%s v%d correlation %d from client id %s host %s: error %d", api, header.api_version,
                          header.correlation_id, header.client_id, client_host or "-", error,
                          extra={"kgroup": {"api": api, "version": header.api_version,
                                            "correlation_id": header.correlation_id, "client_id": header.client_id,
                                            "client_host": client_host, "error": error}})

    async def _faulted(self, header: Any, request: Any) -> Any:
        """What an armed fault makes of this request (`_SERVE`: serve it as usual)."""
        action = self.faults.hit(header, request)
        if action is None:
            return _SERVE
        return await self._fault(action, header, request)

    async def _fault(self, action: Action, header: Any, request: Any) -> Any:
        """Do what an armed fault says to this request: wait, then answer it with an error,
        close the connection, or (only a delay) hand it back to be served (`_SERVE`)."""
        log.info("fault %s: api %d v%d from client %r: %s", action.fault_id, header.api_key, header.api_version,
                 header.client_id, action.error.name if action.error is not None
                 else "close connection" if action.close_connection else f"delay {action.delay_ms} ms")
        if action.delay_ms:
            await asyncio.sleep(action.delay_ms / 1000)
        if action.close_connection:
            raise _CloseConnection(f"fault {action.fault_id} closes the connection")
        if action.error is None:
            return _SERVE
        if header.api_key == PRODUCE and request.acks == 0:
            return None  # acks=0: the client reads no answer, not even an error
        return encode_response(header, error_response(
            header.api_key, header.api_version, request, action.error, f"fault {action.fault_id} (kgroup control API)"))

    async def _handle_secured(self, frame: bytes, peer: Peer, connection: int) -> bytes | FetchAnswer | None:
        """`_handle` with SASL, authorization and the listener's address (module comment)."""
        if peer.sasl is not None and peer.sasl.awaits_unframed_token:
            # After SaslHandshake v0 the frame is a bare SASL message, not a request.
            answer = unframed_answer(peer, frame, now_ms())
            if answer is None:
                raise _CloseConnection(f"authentication failed: {peer.sasl.failure}")
            return answer
        decoded = self._decode(frame)
        if isinstance(decoded, bytes):
            return decoded
        header, request = decoded
        if self.faults.armed:
            faulted = await self._faulted(header, request)
            if faulted is not _SERVE:
                return faulted
        response = await self._secured_response(header, request, peer, connection)
        if self._count_requests or self._debug_requests:
            self._note_request(header, response, peer.client_host)
        if response is None:
            return None
        if type(response) is FetchAnswer:
            return response  # encoded already, naming no broker; its records may still be in files
        # This listener's address where the handler named the first listener's.
        if peer.advertised is not None:
            response = advertise_on(header.api_key, response, self.config.node_id, peer.advertised)
        return encode_response(header, response)

    async def _secured_response(self, header: RequestHeader, request: Any, peer: Peer, connection: int) -> Any:
        api = header.api_key
        # 1. SASL: what may pass before (and after) authentication.
        if peer.sasl is not None:
            gate = peer.sasl.gate(api, now_ms())
            if gate is Gate.SASL:
                response, close = sasl_answer(peer, header, request, now_ms())
                if close:
                    raise _CloseConnection(f"authentication failed: {peer.sasl.failure}",
                                           encode_response(header, response))
                return response
            if gate is Gate.ILLEGAL:
                return illegal_state(header, "already authenticated")
            if gate is not Gate.SERVE:
                answer = illegal_state(header, peer.sasl.failure or "") if gate is Gate.REFUSE else None
                raise _CloseConnection(peer.sasl.failure or "SASL state",
                                       None if answer is None else encode_response(header, answer))
        if api == API_VERSIONS:
            return api_versions_response(header.api_version, disabled=DISABLED_APIS)
        # 2. Authorization: the API's guard refuses, or narrows the request and finishes the answer.
        finish = None
        authorizer = self.security.authorizer
        if authorizer is not None and api not in OPEN:
            verdict = RULES[api](Access(authorizer, peer.principal, peer.host, self.data.topics), header, request)
            if isinstance(verdict, Refused):
                return verdict.response
            request, finish = verdict.request, verdict.finish
        # A Fetch whose answer a guard finishes (refused topics added) is built as kio objects
        # and read into memory; one with every topic allowed stays encoded for sendfile.
        response = await self._call(header, request, peer.client_host, connection, editable=finish is not None)
        return finish(response) if finish is not None else response

    def _note_request(self, header: RequestHeader, response: Any, client_host: str) -> None:
        """Count and/or log a request of the secured path (`_handle` does it inline)."""
        if self._count_requests:
            self.request_stats.by_api[header.api_key] += 1
            if getattr(response, "error_code", 0):
                self.request_stats.count_error(header.api_key, response.error_code)
        if self._debug_requests:
            self._log_request(header, response, client_host)


_SERVE = object()


async def send_answer(writer: asyncio.StreamWriter, before: list[bytes], answer: FetchAnswer,
                      zero_copy: bool) -> None:
    """Write the responses `before`, then `answer`: its bytes through the transport and its
    record slices with sendfile (`zero_copy`), or everything read in (TLS)."""
    transport = writer.transport
    if not zero_copy:
        before.append(answer.frame())
        transport.write(b"".join(before))
        return
    loop = asyncio.get_running_loop()
    pending = before
    try:
        for part in answer.parts:
            if type(part) is bytes:
                pending.append(part)
                continue
            transport.write(b"".join(pending))
            pending = []
            if transport.is_closing():
                raise ConnectionResetError("the client closed the connection")
            with part.file() as file:
                await loop.sendfile(transport, file, part.position, part.size)
        transport.write(b"".join(pending))
    finally:
        answer.close()


class _Resume:
    """Await the rest of a coroutine whose first step already ran and yielded `first`.

    Equivalent to having awaited the coroutine from the start: whatever it yields (a future
    it blocks on) is passed up to the task unchanged, and the task's wake-up value or
    exception (a cancellation) is passed back down.
    """

    __slots__ = ("coro", "first")

    def __init__(self, coro: Any, first: Any) -> None:
        self.coro = coro
        self.first = first

    def __await__(self):
        coro = self.coro
        yielded = self.first
        self.first = None
        while True:
            try:
                value = yield yielded
            except BaseException as exc:  # noqa: BLE001 (handed to the coroutine, as await does)
                try:
                    yielded = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coro.send(value)
                except StopIteration as done:
                    return done.value


class _CloseConnection(Exception):
    """Drop this connection (bad bytes from the client); the broker goes on. A
    `last_response` is sent before the connection closes (a failed authentication)."""

    def __init__(self, reason: str, last_response: bytes | None = None) -> None:
        super().__init__(reason)
        self.last_response = last_response


class _OwnershipLost(Exception):
    """Drop this connection: answers computed for partitions this node lost must not go out."""


# ---- entry point --------------------------------------------------------------------------

async def run_broker(config: BrokerConfig, ready: asyncio.Event | None = None) -> int:
    broker = Broker(config)
    await broker.start()
    loop = asyncio.get_running_loop()
    for sig, stop in ((signal.SIGTERM, broker.request_stop), (signal.SIGINT, broker.interrupt)):
        try:
            loop.add_signal_handler(sig, stop)
        except (NotImplementedError, RuntimeError):
            pass
    if ready is not None:
        ready.set()
    await broker.run_until_stopped()
    return broker.exit_status or (130 if broker.interrupted else 0)


def serve_config(args: Any) -> BrokerConfig:
    """The config of `kgroup serve`: the file, then every flag given on the command line
    (a flag not given is None, so the file's value stands)."""
    return load_config(getattr(args, "config", None), **{key: getattr(args, key, None) for key in FLAG_KEYS})


def serve_main(args: Any) -> int:
    """Run `kgroup serve` with argparse-style args; returns the exit status."""
    try:
        config = serve_config(args)
        FsyncPolicy.parse(config.fsync)
    except (ConfigError, ValueError, StorageError) as exc:
        print(f"kgroup: error: {exc}", file=sys.stderr)
        return 2
    # A cluster node says which node it is on every line.
    configure_logging(config.log.level, config.log.format, config.node_id if config.cluster else None)
    try:
        import uvloop  # type: ignore[import-not-found]
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        status = runner(run_broker(config))
    except (StorageError, ListenError) as exc:
        print(f"kgroup: error: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        print(f"kgroup: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"kgroup: error: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kgroup: interrupted", file=sys.stderr)
        return 130
    return status


class ListenError(Exception):
    """A listener (Kafka, HTTP console, control API) could not be bound; the message says
    why and what to do."""


def listen_problem(host: str, port: int, exc: OSError) -> str:
    """One line saying why the broker cannot listen on host:port, and what to do."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, socket.gaierror):
        return f"{where}: {host!r} is not an address of this host (no such name) — use an IP address or a " \
               "name it resolves, e.g. --listen 127.0.0.1:9092 or 0.0.0.0:9092"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: this host has no address {host} — listen on one of its addresses (127.0.0.1, " \
               "or 0.0.0.0 for all) and give clients the outside address with --advertised"
    if exc.errno == errno.EADDRINUSE:
        return f"{where}: the port is in use — is another broker running there? Pick another --listen address"
    if exc.errno == errno.EACCES:
        return f"{where}: permission denied — ports below 1024 need privileges; use a port such as 9092"
    return f"{where}: {exc.strerror or exc} — pick another --listen address"

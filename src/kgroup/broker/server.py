"""`kgroup serve`: the asyncio broker process and its listeners.

How this works: one asyncio server per listener accepts connections; each connection
(connection.py) reads frames (FrameSplitter, bounded by the maximum request size) and
answers them one at a time in order, as Kafka does (a parked JoinGroup holds its
connection's later requests until it is answered). What a frame becomes is requests.py's
business (decode, faults, SASL, authorization, the handler its API's table entry names);
what serves it, the node's (concerns.py: every concern built and wired at start). Bytes we
cannot frame or decode close the connection, never the broker. SIGTERM/SIGINT stop
accepting, let in-flight requests finish briefly, close idle connections, sync every log
and exit 0.

A connection is served by one of two request paths, chosen when it is accepted (`_path_for`):
the plain one, or the secured one (SASL, authorization, a listener's own address), so the
plain path stays as fast as it was. Fetch answers leave their records in the segment files,
sent with sendfile on plain TCP (data/fetch_api.py). `--http-listen` adds the web console and
/metrics (observe/console/), `--control-listen` the control API (control/).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import ssl
import sys
from typing import Any

from kgroup.broker.concerns import Node
from kgroup.broker.config import FLAG_KEYS, BrokerConfig, ConfigError, ListenerConfig, load_config
from kgroup.broker.connection import ServedConnection
from kgroup.broker.observe.group_view import GroupViews
from kgroup.broker.observe.log_format import configure_logging
from kgroup.broker.requests import RequestPath
from kgroup.broker.security.authentication import Peer
from kgroup.broker.security.listeners import ANONYMOUS, ListenError, listen_problem, server_ssl_context, tls_principal
from kgroup.storage import FsyncPolicy, StorageError
from kgroup.storage.control_files import publish_control_address, withdraw_control_address
from kgroup.wire import FrameSplitter

log = logging.getLogger("kgroup.broker")

READ_CHUNK = 1 << 20
# A TLS connection's StreamReader (plain ones are Protocols: connection.py) stops reading
# past twice this; asyncio's default, 64 KiB, paused and resumed it -- two epoll_ctl calls --
# several times for every 1 MB Produce.
READ_LIMIT = 1 << 20
# A client that connects to a TLS listener and does not finish the handshake is dropped.
TLS_HANDSHAKE_TIMEOUT_S = 10.0
# SIGTERM: how long a cluster node spends handing its partitions over before it exits.
HAND_OVER_TIMEOUT_S = 10.0


class Server:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.servers: list[asyncio.AbstractServer] = []
        self.connections: set[ServedConnection] = set()
        self._connection_ids = 0
        self._stopping = asyncio.Event()
        # Set once stop() waits for the connections: a connection whose task first runs after
        # that (accepted just before the listeners closed) is closed unanswered, so no request
        # is ever served by a node that is closing or closed.
        self._draining = False
        self.exit_status, self.interrupted = 0, False
        self.console: Any = None                   # the HTTP listeners, when configured
        self.control: Any = None

    async def start(self) -> None:
        cfg = self.config
        # Bind first, so a wrong --listen is reported before the data dir is touched (clients wait).
        for listener in cfg.listeners_to_open:
            # Plain connections are Protocols (connection.py). TLS is started by the
            # connection itself (not start_server's ssl=), so a failed handshake is logged
            # with its reason instead of vanishing; it is then served from its stream.
            tls = server_ssl_context(listener) if listener.ssl else None
            try:
                if tls is None:
                    server = await asyncio.get_running_loop().create_server(
                        functools.partial(ServedConnection, self, listener),
                        listener.host, listener.port, reuse_address=True, start_serving=False)
                else:
                    server = await asyncio.start_server(
                        functools.partial(self._accept, listener=listener, tls=tls),
                        listener.host, listener.port, reuse_address=True, start_serving=False, limit=READ_LIMIT)
            except OSError as exc:
                raise ListenError(listen_problem(listener.host, listener.port, exc)) from None
            self.servers.append(server)
        self.node = node = Node(cfg, self._unit_failed)
        self.requests = RequestPath(node.routes, node.ownership.gate, node.faults, node.security, node.data.topics,
                                    cfg.node_id, node.request_stats, count=cfg.http_listen_host is not None,
                                    peer_listeners=node.peer_listeners, quotas=node.quotas)
        for listener, server in zip(cfg.listeners_to_open, self.servers):
            await server.start_serving()
            host, port = server.sockets[0].getsockname()[:2]
            extra = f" mechanisms={','.join(listener.sasl_mechanisms)}" if listener.sasl else ""
            log.info("listening on %s:%d (%s %s%s) advertised=%s:%d", host, port, listener.name,
                     listener.protocol, extra, *listener.advertised)
        self.bound = self.servers[0].sockets[0].getsockname()[:2]
        where = f" node={cfg.node_id} cluster={','.join(map(str, sorted(cfg.nodes)))}" if cfg.cluster else ""
        log.info("data_dir=%s fsync=%s authorizer=%s%s", cfg.data_dir, cfg.fsync,
                 "on" if node.security.authorizer is not None else "off", where)
        if cfg.http_listen_host is not None:
            await self._start_console(cfg.http_listen_host, cfg.http_listen_port)
        if cfg.control_listen is not None:
            await self._start_control(*cfg.control_listen)
        await node.start()

    async def _start_console(self, host: str, port: int) -> None:
        from kgroup.broker.observe.console.app import Console  # noqa: PLC0415 (prometheus_client only when on)
        node = self.node
        self.console = Console(GroupViews(node.coordinators), node.observer, node.request_stats,
                               node.durability.fsync_seconds, node.end_offset, requests=self.requests,
                               kafka_listeners=self.config.listeners_to_open, security=node.security,
                               telemetry=node.telemetry)
        self.http_bound = await self._bind(self.console.start(host, port), lambda exc: (
            f"cannot listen for HTTP on {host}:{port}: {exc.strerror} — pick another --http-listen address."))
        log.info("web console and metrics on http://%s:%d/", *self.http_bound)

    async def _start_control(self, host: str, port: int) -> None:
        from kgroup.broker.control.control_api import ControlApi  # noqa: PLC0415 (only with --control-listen)
        from kgroup.broker.control.control_cluster import ControlCluster  # noqa: PLC0415

        node = self.node
        cluster = ControlCluster(node.ownership, node.data, node.shard_for, self.config.nodes)
        self.control = ControlApi(node.faults, node.groups, node.group_watch, self.config.node_id, node.status,
                                  cluster)
        self.control_bound = await self._bind(self.control.start(host, port), lambda exc: (
            f"cannot listen on {host}:{port} for the control API: {exc.strerror} — pick another "
            "--control-listen address."))
        if self.config.cluster:
            # Where the other nodes forward what lives here (control/control_cluster.py).
            publish_control_address(node.data.path, self.config.node_id, "%s:%d" % self.control_bound)
        log.info("control API listening on %s:%d", *self.control_bound)

    async def _bind(self, start: Any, problem: Any) -> tuple[str, int]:
        """Where an HTTP listener bound; ListenError (the Kafka listeners closed) if it cannot."""
        try:
            return await start
        except OSError as exc:
            self._close_listeners()
            raise ListenError(problem(exc)) from None

    def _close_listeners(self) -> None:
        for server in self.servers:
            server.close()

    def _unit_failed(self) -> None:
        # A partition that cannot load would never be served: stop loudly.
        self.exit_status = 1
        self.request_stop()

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
        # Peers take this node's partitions while it still answers (NOT_COORDINATOR).
        await self.node.leave(timeout_s=HAND_OVER_TIMEOUT_S)
        log.info("stopping: finishing in-flight requests")
        self._close_listeners()
        if self.console is not None:
            await self.console.close()
        if self.control is not None:
            if self.config.cluster:
                withdraw_control_address(self.node.data.path, self.config.node_id)
            await self.control.close()
        self._draining = True
        # Requests already being served get a moment; parked joins are cut off, idle
        # connections closed. The busy set is read again after every wait: a connection
        # accepted late joins it when it first runs, which may be after an earlier look.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 1.0
        while (busy := {c.busy for c in self.connections if c.busy is not None}) \
                and (left := deadline - loop.time()) > 0:
            await asyncio.wait(busy, timeout=left)
        pending: set[asyncio.Task] = set()
        for connection in list(self.connections):
            pending |= connection.abandon()
        await asyncio.gather(*pending, return_exceptions=True)
        await self.node.close()
        log.info("stopped cleanly")

    def _path_for(self, listener: ListenerConfig | None, transport: asyncio.BaseTransport, peer: Any,
                  splitter: FrameSplitter) -> tuple[Any, Any]:
        """The request path of a new connection and what it is called with: the plain one
        with the client's host, or the secured one with the connection's `Peer`."""
        security = self.node.security
        if listener is None or not (listener.sasl or security.authorizer is not None or listener.ssl_client_auth
                                    != "none" or listener.advertised != self.config.advertised):
            return self.requests.handle, (f"/{peer[0]}" if peer else "")
        advertised = listener.advertised if listener.advertised != self.config.advertised else None
        principal = tls_principal(transport) if listener.ssl else ANONYMOUS
        return self.requests.handle_secured, Peer(
            listener, peer[0] if peer else "", principal, security.sasl_session(listener) if listener.sasl else None,
            splitter, self.config.max_request_bytes, advertised)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      listener: ListenerConfig | None = None, tls: ssl.SSLContext | None = None) -> None:
        """A new connection of a TLS listener: its handshake, then served from its stream
        (connection.py), unless stop() is draining (then closed unanswered)."""
        if self._draining:
            writer.close()
            return
        if tls is not None and not await self._start_tls(writer, tls, writer.get_extra_info("peername"), listener):
            return
        await ServedConnection(self, listener, tls=tls is not None).serve_stream(reader, writer, READ_CHUNK)

    async def _start_tls(self, writer: asyncio.StreamWriter, tls: ssl.SSLContext, peer: Any,
                         listener: ListenerConfig | None) -> bool:
        """The TLS handshake of a new connection (with the listener's certificate as a dynamic
        broker config last set it); False (logged, closed) if it fails."""
        tls = self.node.tls_contexts.get(listener.name, (None, tls))[1] if listener else tls
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


# ---- entry point --------------------------------------------------------------------------

async def run_broker(config: BrokerConfig, ready: asyncio.Event | None = None) -> int:
    broker = Server(config)
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
    """The config of `kgroup serve`: the file (its ports shifted by --port-offset), then every
    flag given on the command line (a flag not given is None, so the file's value stands)."""
    flags = {key: getattr(args, key, None) for key in FLAG_KEYS}
    return load_config(getattr(args, "config", None), port_offset=getattr(args, "port_offset", None), **flags)


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
        # The standard event loop, always: uvloop, picked up here whenever it happened to be
        # installed, was never tested and measured no faster (bench/README.md, "uvloop").
        status = asyncio.run(run_broker(config))
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

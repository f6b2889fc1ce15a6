"""``kgroup cluster``: N `kgroup serve` nodes on this host, as child processes.

Node i is `--node-id i` listening on 127.0.0.1:BASE+i; every node gets the same `--cluster`
list, data dir and `--config` file, with `--port-offset i`: every listener the file names
([[listeners]], http_listen, control_listen) is at its port + i on node i, so secured
listeners and the inter-node listener work as on `kgroup serve`. The file is loaded for
every node before any starts, so a setting or a port clash that cannot work is one line. The addresses are printed once every node listens. Ctrl-C (or SIGTERM)
stops them all with SIGTERM and waits. A node that exits on its own (say, killed with
`kill -9` to watch its partitions move) is reported, and the others keep serving: restart
it by hand with the `kgroup serve` command line printed for it.

With `--control-base-port P`, node i also serves the control API on 127.0.0.1:P+i, and this
process is the nodes' supervisor (kgroup/testing/supervisor.py): `POST /nodes/{id}/kill`,
`/stop`, `/start` and `/pause?ms=N` sent to any node's control API are carried out here, so
a node killed that way can be started again the same way.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from kgroup.testing.process import ChildProcess
from kgroup.testing.supervisor import Supervisor

from .errors import CliError

STOP_TIMEOUT_S = 30.0


def _serve_command(args: Any, node: int, cluster: str) -> list[str]:
    command = [sys.executable, "-m", "kgroup.cli.main", "serve", "--node-id", str(node),
               "--cluster", cluster, "--data-dir", args.data_dir]
    if args.config:
        command += ["--config", args.config]
        if node:
            command += ["--port-offset", str(node)]
    if args.fsync:
        command += ["--fsync", args.fsync]
    if getattr(args, "control_base_port", None):
        command += ["--control-listen", f"127.0.0.1:{args.control_base_port + node}"]
    if getattr(args, "group_events", None) is False:
        command += ["--no-group-events"]
    for flag in ("log_level", "log_format", "node_timeout_ms"):
        if getattr(args, flag, None) is not None:
            command += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    return command


class _Node(ChildProcess):
    """One node's process, as the supervisor drives it (start, stop, kill, pause). Its output
    is ours (the terminal's); it has a session of its own, so Ctrl-C reaches it from us as
    SIGTERM, not from the terminal at the same time."""

    def __init__(self, command: list[str], port: int) -> None:
        super().__init__(command, name=f"node on port {port}", inherit_output=True, new_session=True)
        self.port = port

    def start(self, timeout: float = 60.0) -> None:
        self.launch()
        deadline = time.monotonic() + timeout
        while not _listening(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"it exited with status {self.proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"it did not listen within {timeout:.0f} s")
            time.sleep(0.05)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        return super().stop(timeout)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


DEFAULT_DATA_DIR = "./kgroup-cluster"

# One listener of a node: (name, protocol, port it binds, address it is advertised as).
Listener = tuple[str, str, int, str]


def _node_listeners(args: Any, cluster: str) -> list[list[Listener]]:
    """Each node's listeners as its `kgroup serve` will open them — (name, protocol, port), the
    PLAINTEXT --cluster entry first, then the file's [[listeners]] at port + i, then its
    http_listen / control_listen at port + i — checked now, so a file that cannot work for
    every node is one line before any node starts."""
    from kgroup.broker.config import ConfigError, load_config, read_file

    flags = {flag: getattr(args, flag, None)
             for flag in ("fsync", "group_events", "log_level", "log_format", "node_timeout_ms")}
    if not args.config:
        try:
            load_config(None, node_id=0, cluster=cluster, data_dir=args.data_dir, **flags)
        except ConfigError as exc:
            raise CliError(str(exc), "fix the flag it names", code=2) from None
        return [[("PLAINTEXT", "PLAINTEXT", args.base_port + i, f"127.0.0.1:{args.base_port + i}")]
                for i in range(args.nodes)]
    try:
        raw = read_file(args.config)
    except ConfigError as exc:
        raise CliError(str(exc), "fix the file given with --config", code=2) from None
    for key in ("listen", "advertised"):
        if key in raw:
            raise CliError(f"{args.config}: {key} cannot be used with kgroup cluster: node i's PLAINTEXT "
                           "listener is 127.0.0.1:BASE+i", f"remove {key} from the file (or use "
                           "[[listeners]]: node i gets the file's port + i)", code=2)
    nodes = []
    for i in range(args.nodes):
        try:
            config = load_config(args.config, node_id=i, cluster=cluster, data_dir=args.data_dir,
                                 port_offset=i, **flags)
        except ConfigError as exc:
            raise CliError(f"node {i}: {exc}", "fix the file given with --config", code=2) from None
        ports = [(lst.name, lst.protocol, lst.port, "%s:%d" % lst.advertised) for lst in config.listeners_to_open]
        if config.http_listen_host is not None and config.http_listen_port is not None:
            ports.append(("http_listen", "HTTP", config.http_listen_port,
                          f"{config.http_listen_host}:{config.http_listen_port}"))
        if config.control_listen and not getattr(args, "control_base_port", None):
            ports.append(("control_listen", "HTTP", config.control_listen[1], "%s:%d" % config.control_listen))
        nodes.append(ports)
    return nodes


def _check_ports(nodes: list[list[Listener]], controls: list[int]) -> list[int]:
    """Every port the nodes will listen on, refused if two of them meet (one node's listener
    on another's, say a [[listeners]] port within --nodes of --base-port)."""
    owner: dict[int, str] = {}
    named = [(p, f"node {i}'s {name} listener") for i, ports in enumerate(nodes) for name, _, p, _ in ports]
    named += [(p, f"node {i}'s control API (--control-base-port)") for i, p in enumerate(controls)]
    for port, who in named:
        if port == 0:
            continue
        if port in owner:
            raise CliError(f"port {port} would be both {owner[port]} and {who} (node i adds i to every "
                           "port of the file and to --base-port)",
                           "space the file's listener ports, --base-port and --control-base-port at "
                           "least --nodes apart", code=2)
        owner[port] = who
    return list(owner)


def _data_dir(args: Any) -> str:
    """--data-dir if given, else the config file's data_dir, else ./kgroup-cluster: every
    node and the supervisor get the one the flag and file chose."""
    if args.data_dir:
        return args.data_dir
    if args.config:
        from kgroup.broker.config import ConfigError, read_file

        try:
            value = read_file(args.config).get("data_dir")
        except ConfigError as exc:
            raise CliError(str(exc), "fix the file given with --config", code=2) from None
        if isinstance(value, str):
            return value
    return DEFAULT_DATA_DIR


def _announce(args: Any, ports: list[int], listeners: list[list[Listener]], control: bool) -> None:
    """The nodes' addresses: one line a node (each listener of the file beside the PLAINTEXT
    port), then a bootstrap line for PLAINTEXT and one for each other listener."""
    print(f"kgroup cluster: {args.nodes} nodes, data dir {os.path.abspath(args.data_dir)}")
    for i, p in enumerate(ports):
        extra = "".join(f", {name} ({protocol}) {address}" for name, protocol, _, address in listeners[i][1:])
        api = f" (control API 127.0.0.1:{args.control_base_port + i})" if control else ""
        print(f"  node {i}: 127.0.0.1:{p}{extra}{api}")
    print(f"  bootstrap servers: {','.join(f'127.0.0.1:{p}' for p in ports)}")
    for name, protocol, _, _ in listeners[0][1:]:
        if protocol != "HTTP":
            addresses = [address for node in listeners for n, _, _, address in node if n == name]
            print(f"  {name} ({protocol}) bootstrap servers: {','.join(addresses)}")
    sys.stdout.flush()


def run_cluster(args: Any) -> int:
    """Run the nodes until Ctrl-C; returns the exit status."""
    args.data_dir = _data_dir(args)
    if args.base_port + args.nodes - 1 > 65535:
        raise CliError(f"--base-port {args.base_port} leaves no room for {args.nodes} nodes",
                       "pick a lower --base-port", code=2)
    ports = [args.base_port + i for i in range(args.nodes)]
    controls: list[int] = []
    if getattr(args, "control_base_port", None):
        controls = [args.control_base_port + i for i in range(args.nodes)]
        if controls[-1] > 65535 or set(controls) & set(ports):
            raise CliError(f"--control-base-port {args.control_base_port} leaves no room for {args.nodes} "
                           "control ports beside the nodes' ports", "pick another --control-base-port", code=2)
    cluster = ",".join(f"{i}=127.0.0.1:{p}" for i, p in enumerate(ports))
    listeners = _node_listeners(args, cluster)
    ports_in_use = _check_ports(listeners, controls)
    busy = [p for p in ports_in_use if _listening(p)]
    if busy:
        raise CliError(f"port {busy[0]} on 127.0.0.1 is already in use",
                       "stop what listens there or pick another --base-port")
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    nodes = [_Node(_serve_command(args, i, cluster), p) for i, p in enumerate(ports)]
    supervisor = None
    if getattr(args, "control_base_port", None):
        supervisor = Supervisor(args.data_dir, dict(enumerate(nodes)))
        supervisor.serve()
    for node in nodes:
        node.launch()
    status = 0
    reported: set[int] = set()   # pids of nodes whose exit was reported
    try:
        announced = False
        while stop["signal"] is None:
            for i, node in enumerate(nodes):
                child = node.proc
                if child.pid not in reported and child.poll() is not None:
                    reported.add(child.pid)
                    how = ("start it with `kgroup control node start` or" if supervisor is not None else "")
                    print(f"kgroup cluster: node {i} exited with status {child.returncode}; the others "
                          f"keep serving. To restart it, {how} run: "
                          f"{shlex.join(_serve_command(args, i, cluster))}",
                          file=sys.stderr, flush=True)
            if all(node.proc.pid in reported for node in nodes):
                print("kgroup: error: every node has exited", file=sys.stderr, flush=True)
                status = 1
                break
            if not announced and all(_listening(p) for p in ports):
                announced = True
                _announce(args, ports, listeners, supervisor is not None)
            time.sleep(0.2)
    finally:
        if supervisor is not None:
            supervisor.close()
        for node in nodes:
            node.resume()
            if node.alive():
                node.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for node in nodes:
            try:
                node.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status  # Ctrl-C is how a foreground cluster is stopped: 0, as `kgroup serve`

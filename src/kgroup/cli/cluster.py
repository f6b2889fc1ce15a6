"""``kgroup cluster``: N `kgroup serve` nodes on this host, as child processes.

Node i is `--node-id i` listening on 127.0.0.1:BASE+i; every node gets the same `--cluster`
list and data dir. The addresses are printed once every node listens. Ctrl-C (or SIGTERM)
stops them all with SIGTERM and waits. A node that exits on its own (say, killed with
`kill -9` to watch its partitions move) is reported, and the others keep serving: restart
it by hand with the `kgroup serve` command line printed for it.
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

from .errors import CliError

STOP_TIMEOUT_S = 30.0


def _serve_command(args: Any, node: int, cluster: str) -> list[str]:
    command = [sys.executable, "-m", "kgroup.cli.main", "serve", "--node-id", str(node),
               "--cluster", cluster, "--data-dir", args.data_dir]
    if args.config:
        command += ["--config", args.config]
    if args.fsync:
        command += ["--fsync", args.fsync]
    return command


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def run_cluster(args: Any) -> int:
    """Run the nodes until Ctrl-C; returns the exit status."""
    if args.base_port + args.nodes - 1 > 65535:
        raise CliError(f"--base-port {args.base_port} leaves no room for {args.nodes} nodes",
                       "pick a lower --base-port", code=2)
    ports = [args.base_port + i for i in range(args.nodes)]
    busy = [p for p in ports if _listening(p)]
    if busy:
        raise CliError(f"port {busy[0]} on 127.0.0.1 is already in use",
                       "stop what listens there or pick another --base-port")
    cluster = ",".join(f"{i}=127.0.0.1:{p}" for i, p in enumerate(ports))
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    # Children get Ctrl-C from us as SIGTERM, not from the terminal at the same time.
    children = [subprocess.Popen(_serve_command(args, i, cluster), start_new_session=True)
                for i in range(args.nodes)]
    status = 0
    reported: set[int] = set()
    try:
        announced = False
        while stop["signal"] is None:
            for i, child in enumerate(children):
                if i not in reported and child.poll() is not None:
                    reported.add(i)
                    print(f"kgroup cluster: node {i} exited with status {child.returncode}; the others "
                          f"keep serving. To restart it: {shlex.join(_serve_command(args, i, cluster))}",
                          file=sys.stderr, flush=True)
            if len(reported) == len(children):
                print("kgroup: error: every node has exited", file=sys.stderr, flush=True)
                status = 1
                break
            if not announced and all(_listening(p) for p in ports):
                announced = True
                print(f"kgroup cluster: {args.nodes} nodes, data dir {os.path.abspath(args.data_dir)}")
                for i, p in enumerate(ports):
                    print(f"  node {i}: 127.0.0.1:{p}")
                print(f"  bootstrap servers: {','.join(f'127.0.0.1:{p}' for p in ports)}", flush=True)
            time.sleep(0.2)
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for child in children:
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status  # Ctrl-C is how a foreground cluster is stopped: 0, as `kgroup serve`

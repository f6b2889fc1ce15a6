"""The supervisor of a cluster's node processes: the parent that kills, stops, starts and
pauses them — for the test handle (`Cluster`), for `kgroup cluster`, and for the nodes'
control APIs (`POST /nodes/{id}/kill|stop|start|pause`), which forward here.

Why a supervisor, and why the parent: a killed node cannot be started by its peers (they
do not know how it was started, and a process they spawned would die or be orphaned with
them), and a paused (SIGSTOPped) node cannot resume itself. The process that started the
nodes knows their command lines and outlives each of them, so it does all four; it serves
a small HTTP endpoint on loopback and writes its address in the data dir
(`cluster/supervisor.json`, storage/control_files.py), where every node finds it.

    POST /nodes/{id}/kill            SIGKILL, as a crash (returns once it is dead)
    POST /nodes/{id}/stop            SIGTERM: the node hands its units over and exits
    POST /nodes/{id}/start           start it again (same command line, ports and data)
    POST /nodes/{id}/pause?ms=N      SIGSTOP now, SIGCONT after N ms (returns at once)
    GET  /nodes                      each node: pid, running, paused

A node asking for itself to be killed, stopped or paused (the header X-Kgroup-From-Node
names it) gets its answer first: the action follows a moment later, so the answer reaches
the client before the node stops answering.

Each node is anything with `start(timeout)`, `stop()`, `kill()`, `pause(ms)`, `alive()`
and `pid` (process.py's ServeProcess). Operations on the nodes are serialised by one lock,
so the HTTP endpoint and the test's own calls never act on one node at once.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from kgroup.storage.control_files import publish_supervisor, withdraw_supervisor

log = logging.getLogger("kgroup.testing.supervisor")

# A node that asked for its own end answers first; the action follows this much later.
SELF_ACTION_DELAY_S = 0.2
MAX_PAUSE_MS = 3_600_000
_PATH = re.compile(r"^/nodes/(\d+)/(kill|stop|start|pause)$")


def pause_ms(query: dict[str, str]) -> int:
    raw = query.get("ms", "")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAUSE_MS:
        raise SupervisorError(400, f"pause needs ?ms=N, a whole number from 1 to {MAX_PAUSE_MS}")
    return int(raw)


class NodeProcess(Protocol):
    def start(self, timeout: float = ...) -> None: ...
    def stop(self) -> int | None: ...
    def kill(self) -> None: ...
    def pause(self, ms: int) -> None: ...
    def alive(self) -> bool: ...


class SupervisorError(Exception):
    """A node control that cannot be done (`status`: the HTTP status it answers with)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Supervisor:
    """The nodes of one cluster, by id, and the endpoint their control APIs forward to."""

    def __init__(self, data_dir: Path | str, nodes: dict[int, NodeProcess]) -> None:
        self.data_dir = Path(data_dir)
        self.nodes = nodes
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- the controls -----------------------------------------------------------------------

    def node(self, node_id: int) -> NodeProcess:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise SupervisorError(404, f"no node {node_id}; the cluster's nodes are {sorted(self.nodes)}") from None

    def kill(self, node_id: int) -> dict[str, Any]:
        with self._lock:
            self.node(node_id).kill()
            return self.describe(node_id)

    def stop(self, node_id: int) -> dict[str, Any]:
        with self._lock:
            status = self.node(node_id).stop()
            return {**self.describe(node_id), "exit_status": status}

    def start(self, node_id: int, timeout: float = 60.0) -> dict[str, Any]:
        with self._lock:
            node = self.node(node_id)
            if node.alive():
                raise SupervisorError(409, f"node {node_id} is running; stop or kill it first")
            try:
                node.start(timeout)
            except RuntimeError as exc:
                raise SupervisorError(500, f"node {node_id} did not start: {str(exc).splitlines()[0]}") from None
            return self.describe(node_id)

    def pause(self, node_id: int, ms: int) -> dict[str, Any]:
        with self._lock:
            node = self.node(node_id)
            if not node.alive():
                raise SupervisorError(409, f"node {node_id} is not running")
            node.pause(ms)
            return {**self.describe(node_id), "paused_ms": ms}

    def describe(self, node_id: int) -> dict[str, Any]:
        node = self.nodes[node_id]
        proc = getattr(node, "proc", None)
        return {"node": node_id, "running": node.alive(), "pid": proc.pid if proc is not None else None,
                "paused": bool(getattr(node, "paused", lambda: False)())}

    def act(self, node_id: int, action: str, query: dict[str, str]) -> dict[str, Any]:
        """One control by name, as the HTTP endpoint gets it."""
        if action == "pause":
            return self.pause(node_id, pause_ms(query))
        return {"kill": self.kill, "stop": self.stop, "start": self.start}[action](node_id)

    # ---- the endpoint -----------------------------------------------------------------------

    def serve(self, host: str = "127.0.0.1") -> str:
        """Serve the endpoint in a thread and publish its address; returns it."""
        supervisor = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = (json.dumps(body) + "\n").encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if urlsplit(self.path).path != "/nodes":
                    return self._answer(404, {"error": f"no such supervisor endpoint: GET {self.path}"})
                self._answer(200, {"nodes": [supervisor.describe(n) for n in sorted(supervisor.nodes)]})

            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                match = _PATH.match(parts.path)
                if match is None:
                    return self._answer(404, {"error": f"no such supervisor endpoint: POST {self.path}"})
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                node_id, action = int(match.group(1)), match.group(2)
                query = dict(parse_qsl(parts.query))
                asker = self.headers.get("X-Kgroup-From-Node")
                try:
                    if asker is not None and asker.isdigit() and int(asker) == node_id and action != "start":
                        supervisor.node(node_id)
                        if action == "pause":
                            pause_ms(query)   # a bad ms is refused now, not later
                        threading.Timer(SELF_ACTION_DELAY_S, supervisor._act_quietly,
                                        (node_id, action, query)).start()
                        return self._answer(200, {"node": node_id, "action": action, "scheduled": True})
                    self._answer(200, {**supervisor.act(node_id, action, query), "action": action})
                except SupervisorError as exc:
                    self._answer(exc.status, {"error": str(exc)})

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="kgroup-supervisor", daemon=True)
        self._thread.start()
        address = "%s:%d" % self._server.server_address[:2]
        publish_supervisor(self.data_dir, address)
        return address

    def _act_quietly(self, node_id: int, action: str, query: dict[str, str]) -> None:
        try:
            self.act(node_id, action, query)
        except SupervisorError as exc:
            log.warning("node %d: %s failed: %s", node_id, action, exc)

    def close(self) -> None:
        """Stop serving (the nodes are left as they are: their owner stops them)."""
        if self._server is not None:
            withdraw_supervisor(self.data_dir)
            self._server.shutdown()
            self._server.server_close()
            self._server = None

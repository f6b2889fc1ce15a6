"""What the control API keeps in a cluster's shared data dir (`<data_dir>/cluster/`).

    control/<node>.json   {"address": "HOST:PORT", "pid": N}: where node N's control API
                          listens (written when it starts listening, removed when it stops)
    supervisor.json       {"address": "HOST:PORT", "pid": N}: the process that started the
                          nodes and can kill, stop, start and pause them (kgroup.testing's
                          Cluster, or `kgroup cluster`); absent when nodes were started by hand
    moves.json            {"version": 1, "units": {"<slot>": node}}: units moved to a node of
                          the control API's choosing (POST /groups/{g}/coordinator); every
                          node's placement reads it (broker/cluster/ownership.py)

Why files: the nodes of a cluster already share the data dir and agree through it on
everything else (topics.json, ownership epochs, leases), so a node learns its peers'
control addresses, the supervisor and the moves the same way, with no second membership of
its own. A control address may be stale (a killed node does not remove its file): a node
that forwards to it finds nobody there and answers as for a node that is down.

moves.json changes under an exclusive flock (read-modify-write, replaced atomically), as
topics.json does; readers compare the file's identity and read it again only when it
changed, so the poll loop's look at it costs one stat.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import StorageError
from kgroup.storage.file_locks import open_locked

MOVES_LOCK_TIMEOUT_S = 5.0


def _cluster_dir(data_dir: Path | str) -> Path:
    return Path(data_dir) / "cluster"


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, [json.dumps(value).encode()])


# ---- addresses ------------------------------------------------------------------------------

def publish_control_address(data_dir: Path | str, node: int, address: str) -> None:
    _write_json(_cluster_dir(data_dir) / "control" / f"{node}.json", {"address": address, "pid": os.getpid()})


def withdraw_control_address(data_dir: Path | str, node: int) -> None:
    path = _cluster_dir(data_dir) / "control" / f"{node}.json"
    if (_read_json(path) or {}).get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def control_address(data_dir: Path | str, node: int) -> str | None:
    """Where node `node`'s control API listens (its last start), or None."""
    return (_read_json(_cluster_dir(data_dir) / "control" / f"{node}.json") or {}).get("address")


def publish_supervisor(data_dir: Path | str, address: str) -> None:
    _write_json(_cluster_dir(data_dir) / "supervisor.json", {"address": address, "pid": os.getpid()})


def withdraw_supervisor(data_dir: Path | str) -> None:
    path = _cluster_dir(data_dir) / "supervisor.json"
    if (_read_json(path) or {}).get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def supervisor_address(data_dir: Path | str) -> str | None:
    return (_read_json(_cluster_dir(data_dir) / "supervisor.json") or {}).get("address")


# ---- moves ----------------------------------------------------------------------------------

class Moves:
    """The units moved by hand (slot -> node), read again only when the file changed."""

    def __init__(self, data_dir: Path | str) -> None:
        self.path = _cluster_dir(data_dir) / "moves.json"
        self._seen: tuple | None = None
        self._units: dict[int, int] = {}

    def current(self) -> dict[int, int]:
        try:
            st = os.stat(self.path)
            identity: tuple | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            identity = None
        if identity != self._seen:
            self._units = self._read() if identity is not None else {}
            self._seen = identity
        return self._units

    def _read(self) -> dict[int, int]:
        units = (_read_json(self.path) or {}).get("units", {})
        try:
            return {int(slot): int(node) for slot, node in units.items()}
        except (TypeError, ValueError, AttributeError):
            return {}

    def set(self, slot: int, node: int | None) -> None:
        """Move unit `slot` to `node` from now on (None: back to its usual placement)."""
        lock = self.path.with_name("moves.lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd, _ = open_locked(str(lock), MOVES_LOCK_TIMEOUT_S)
        if fd is None:
            raise StorageError(f"{lock} stayed locked for {MOVES_LOCK_TIMEOUT_S:.0f} s")
        try:
            units = self._read() if self.path.exists() else {}
            if node is None:
                units.pop(slot, None)
            else:
                units[slot] = node
            _write_json(self.path, {"version": 1, "units": {str(s): n for s, n in sorted(units.items())}})
        finally:
            os.close(fd)

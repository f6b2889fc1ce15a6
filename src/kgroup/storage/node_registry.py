"""Node liveness files: a lock held for life, a lease renewed while serving, an expulsion mark.

How this works: in `<data_dir>/cluster/nodes/` each node `<id>` has

- `<id>.lock`: the node holds an exclusive `flock` on it for its whole life. The kernel
  drops it the moment the process dies (`kill -9` included), so a peer that can take it
  with LOCK_NB knows the node is gone (and lets go at once).
- `<id>.lease`: the node's wall-clock time in ms, its incarnation (a number that changes
  each time the node starts or is expelled) and flags (LEAVING: shutting down, handing its
  units over), rewritten every few hundred ms. A process that
  is stopped (SIGSTOP, a long pause) keeps its lock, but its lease goes stale.
- `<id>.expel`: written by a peer that found the lease stale: "incarnation I is expelled".

The expulsion handshake keeps a paused node from serving after its units were taken, with
no lock a paused process could hold. A renewal writes the lease, then reads the mark; if it
names the node's incarnation the node drops everything it owned and starts a new
incarnation. A peer writes the mark, then reads the lease; only if the lease is still
stale (and still that incarnation) may it take the node's units. Either the node's read
comes after the peer's write (it sees the mark and stops) or the peer's read comes after a
renewal it then sees as fresh (and waits). Each step is a system call, so the two
processes observe each other's writes in order.

All three files are small records with a CRC, read with `pread` (a torn read is retried).
Reading another node's files never needs its cooperation.
"""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

from kgroup.storage.errors import StorageError
from kgroup.storage.file_locks import open_locked, try_lock

_LEASE = struct.Struct(">qqq")    # wall-clock ms, incarnation, flags
_EXPEL = struct.Struct(">q")      # incarnation expelled
_CRC = struct.Struct(">I")


LEAVING = 1  # lease flag: the node is shutting down and handing its units over


@dataclass(frozen=True, slots=True)
class Lease:
    time_ms: int
    incarnation: int
    flags: int = 0

    @property
    def leaving(self) -> bool:
        return bool(self.flags & LEAVING)


class NodeLockedError(StorageError):
    """Another live process already runs as this node id."""


def _encode(body: bytes) -> bytes:
    return body + _CRC.pack(crc32c.crc32c(body))


def _decode(raw: bytes, size: int) -> bytes | None:
    if len(raw) != size + _CRC.size:
        return None
    body = raw[:size]
    return body if _CRC.unpack_from(raw, size)[0] == crc32c.crc32c(body) else None


class NodeRegistry:
    """The `nodes` directory: this node's own files, and probes of its peers'."""

    def __init__(self, directory: Path, node_ids: list[int], me: int) -> None:
        self.directory = Path(directory)
        self.node_ids = list(node_ids)
        self.me = me
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {self.directory}: {exc}") from exc
        self._lock_fd: int | None = None
        self._lease_fd: int | None = None
        self._probe_fds: dict[int, int] = {}
        self._read_fds: dict[str, int] = {}

    def _file(self, node: int, kind: str) -> str:
        return os.path.join(self.directory, f"{node}.{kind}")

    def _open(self, path: str) -> int:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open {path}: {exc}") from exc

    # -- this node ---------------------------------------------------------------------

    def lock_self(self, timeout_s: float = 5.0) -> None:
        """Take this node's lock for the life of the process. Peers probe it with short
        LOCK_NB attempts, so a few failures are retried; a lock still held after
        `timeout_s` belongs to a live process running as this node."""
        path = self._file(self.me, "lock")
        fd, holder = open_locked(path, timeout_s)
        if fd is None:
            raise NodeLockedError(f"node {self.me} is already running (pid {holder} holds {path}); "
                                  "give each node its own --node-id")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd
        self._lease_fd = self._open(self._file(self.me, "lease"))

    def renew(self, now_ms: int, incarnation: int, flags: int = 0) -> bool:
        """Write this node's lease, then read its expulsion mark: False if the current
        incarnation was expelled (the caller must drop every unit before serving again).
        `flags`: LEAVING while it hands its units over before exiting."""
        if self._lease_fd is None:
            raise StorageError(f"node {self.me}: renew before lock_self")
        try:
            os.pwrite(self._lease_fd, _encode(_LEASE.pack(now_ms, incarnation, flags)), 0)
        except OSError as exc:
            raise StorageError(f"cannot renew lease {self._file(self.me, 'lease')}: {exc}") from exc
        return self.expelled(self.me) != incarnation

    # -- peers -------------------------------------------------------------------------

    def lock_free(self, node: int) -> bool:
        """True if no process holds `node`'s lock (it is dead, or never started)."""
        fd = self._probe_fds.get(node)
        if fd is None:
            fd = self._probe_fds[node] = self._open(self._file(node, "lock"))
        if not try_lock(fd, self._file(node, "lock")):
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True

    def _read(self, node: int, kind: str, size: int) -> bytes | None:
        path = self._file(node, kind)
        fd = self._read_fds.get(path)
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise StorageError(f"cannot open {path}: {exc}") from exc
            self._read_fds[path] = fd
        for _ in range(5):  # a read that overlapped a write is retried
            raw = os.pread(fd, size + _CRC.size, 0)
            if not raw:
                return None
            body = _decode(raw, size)
            if body is not None:
                return body
        return None

    def lease(self, node: int) -> Lease | None:
        """`node`'s last lease, or None if it never wrote a valid one."""
        body = self._read(node, "lease", _LEASE.size)
        return None if body is None else Lease(*_LEASE.unpack(body))

    def expelled(self, node: int) -> int | None:
        """The incarnation of `node` last marked expelled, or None."""
        body = self._read(node, "expel", _EXPEL.size)
        return None if body is None else _EXPEL.unpack(body)[0]

    def expel(self, node: int, incarnation: int) -> None:
        """Mark `node`'s `incarnation` expelled (its lease went stale while it kept its lock)."""
        path = self._file(node, "expel")
        fd = self._open(path)
        try:
            os.pwrite(fd, _encode(_EXPEL.pack(incarnation)), 0)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc
        finally:
            os.close(fd)

    def close(self) -> None:
        for fd in [*self._probe_fds.values(), *self._read_fds.values()]:
            os.close(fd)
        self._probe_fds = {}
        self._read_fds = {}
        if self._lease_fd is not None:
            os.close(self._lease_fd)
            self._lease_fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

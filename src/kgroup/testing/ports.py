"""Loopback ports for the processes tests start: each port handed out once on this machine.

A test picks a broker's port, and the broker binds it a moment later, in another process.
The old way (bind port 0, read the port, close) loses that port twice over on a busy
machine: the kernel hands the same number to the next `bind(0)` of another suite, and it
is in the ephemeral range, so any client's outgoing connection may take it as its local
port first. Either way the broker fails with "the port is in use".

So `free_port`:
- picks from below the kernel's ephemeral range (ip_local_port_range: 32768-60999 on
  Linux, so 20000-32767 here), where no outgoing connection takes a port;
- reserves the port for this process's lifetime with an flock on a file named for it in
  a directory every process on this machine shares (`$KGROUP_PORT_DIR`, else
  `/tmp/kgroup-ports`): two suites running at once never hand out the same port, and a
  process's reservations end with it, however it ends;
- checks that the port can be bound right now (as the child will, with SO_REUSEADDR).
A port stays reserved while this process lives, so a broker started again after a stop
gets the same one back.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path

DIR_ENV = "KGROUP_PORT_DIR"
LOWEST = 20000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")

_held: dict[int, int] = {}          # port -> the fd holding its lock
_lock = threading.Lock()


class NoFreePort(RuntimeError):
    pass


def port_range() -> range:
    """The ports handed out: below the ephemeral range, or above it where it starts low."""
    try:
        low, high = (int(x) for x in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        low, high = 49152, 65535           # IANA's ephemeral range (BSD, macOS)
    if low - LOWEST >= 1000:
        return range(LOWEST, low)
    if 65535 - high >= 1000:
        return range(high + 1, 65536)
    return range(1024, 65536)             # no room outside it: the locks still keep suites apart


def port_dir() -> Path:
    path = Path(os.environ.get(DIR_ENV) or Path(tempfile.gettempdir()) / "kgroup-ports")
    path.mkdir(parents=True, exist_ok=True)
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A port on `host` no other test process on this machine holds, bindable now; held
    by this process until it exits (or `release`)."""
    return free_run(1, host)


def free_run(count: int, host: str = "127.0.0.1") -> int:
    """The first of `count` consecutive ports, every one held as `free_port` holds one: for
    a command given a base port that counts up from it (`kgroup cluster --base-port`). A
    run checked only by binding its ports leaves all but the first free for another
    process's `free_port`, and both then start a broker on the same port."""
    candidates = port_range()
    directory = port_dir()
    with _lock:
        start = random.randrange(len(candidates))
        for i in range(len(candidates)):
            first = candidates[(start + i) % len(candidates)]
            run = range(first, first + count)
            if run.stop > candidates.stop or any(p in _held for p in run):
                continue
            fds: list[int] = []
            for port in run:
                fd = _try_lock(directory / str(port))
                if fd is None:
                    break
                fds.append(fd)
                if not _bindable(host, port):
                    break
            else:
                _held.update(zip(run, fds))
                return run.start
            for fd in fds:
                os.close(fd)
    raise NoFreePort(f"no {count} free port(s) in a row in {candidates.start}-{candidates.stop - 1} "
                     f"on {host} (locks in {directory})")


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    return [free_port(host) for _ in range(count)]


def release(port: int) -> None:
    """Give a port back (another process may take it from now on)."""
    with _lock:
        fd = _held.pop(port, None)
    if fd is not None:
        os.close(fd)


def held() -> set[int]:
    with _lock:
        return set(_held)


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)      # not inherited by children (PEP 446)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True

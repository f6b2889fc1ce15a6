"""The epoch table: who owns each unit (a log partition) now, readable with a memory load.

How this works: `<data_dir>/cluster/epochs` is a small file every node of a cluster maps
with `mmap(MAP_SHARED)`, so a store by one process is seen by a load in another (one host,
one page cache). After a 64-byte header it holds one slot per unit; a slot is 2 x N int64
entries for a cluster of N nodes:

    epoch[0..N-1]      entry i: the highest ownership epoch node i has won for the unit
    released[0..N-1]   entry i: the epoch node i has handed over cleanly (0: none)

Each entry has one writer (node i), so there is no write race and no lock: the current
epoch of a unit is the largest epoch entry and its owner is the node that wrote it. An
ownership epoch is won elsewhere (ownership.py, an atomic link in the data dir); the winner
then publishes it here with a store into its own entry. A node that won epoch E but was
overtaken while paused and publishes late cannot hide the newer epoch: the maximum stays.

`Fence` is what an append path checks immediately before and after it writes: "the largest
epoch entry of my unit is still mine" (a slice of the mapped memory and a compare, no
system call). A deleted topic's units get `DELETED` in the deleting node's entry, which
fences every owner at once.

Slots: 0..M-1 are the group-metadata partitions (and the `__kgroup_events` partitions owned
with them); topic partitions get slots from M up, allocated in `topics.json` under its lock,
which is also the only place the file grows (`ensure_capacity`). A reader that meets a slot
past its mapping maps the file again (`_remap`); old maps stay referenced until `close`.

On a machine crash the file may lose recent stores; the ownership records in the data dir
are the truth, and every node publishes again what it claims after a restart.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from kgroup.storage.errors import CorruptDataError, FencedError, StorageError

MAGIC = b"KGEPOCH1"
_HEADER = struct.Struct(">8sqq")  # magic, node count, reserved
HEADER_BYTES = 64
ENTRY = 8
# The epoch a deleting node publishes for the units of a deleted topic (fences every owner).
DELETED = (1 << 62)
INITIAL_SLOTS = 256


class EpochTable:
    """The mapped epoch table of one data dir (see the module docstring)."""

    def __init__(self, path: Path, nodes: int) -> None:
        if nodes < 1:
            raise StorageError(f"epoch table {path}: a cluster needs at least one node")
        self.path = Path(path)
        self.nodes = nodes
        self.slot_entries = 2 * nodes
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open epoch table {self.path}: {exc}") from exc
        self._maps: list[mmap.mmap] = []
        self.view: memoryview | None = None
        self.capacity = 0
        try:
            if os.fstat(self._fd).st_size == 0:
                self.ensure_capacity(INITIAL_SLOTS)
            self._check_header()
            self._remap()
        except BaseException:
            os.close(self._fd)
            raise

    # -- file ----------------------------------------------------------------------------

    def _bytes_for(self, slots: int) -> int:
        return HEADER_BYTES + slots * self.slot_entries * ENTRY

    def ensure_capacity(self, slots: int) -> None:
        """Grow the file to hold at least `slots` slots (never shrinks). Call with the
        topics lock held: two growers must not race (an ftruncate to a smaller size would
        cut entries)."""
        want = self._bytes_for(max(slots, INITIAL_SLOTS))
        try:
            size = os.fstat(self._fd).st_size
            if size == 0:
                os.pwrite(self._fd, _HEADER.pack(MAGIC, self.nodes, 0).ljust(HEADER_BYTES, b"\0"), 0)
            if size < want:
                # Double, so a burst of topic creations does not remap every time.
                os.ftruncate(self._fd, max(want, 2 * size))
                os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(f"cannot grow epoch table {self.path}: {exc}") from exc

    def _check_header(self) -> None:
        raw = os.pread(self._fd, _HEADER.size, 0)
        if len(raw) < _HEADER.size:
            raise CorruptDataError(f"epoch table {self.path} is shorter than its header")
        magic, nodes, _ = _HEADER.unpack(raw)
        if magic != MAGIC:
            raise CorruptDataError(f"epoch table {self.path}: bad magic {magic!r}")
        if nodes != self.nodes:
            raise StorageError(
                f"epoch table {self.path} was made for a cluster of {nodes} nodes, not {self.nodes}; "
                "every node must name the same --cluster list")

    def _remap(self) -> None:
        size = os.fstat(self._fd).st_size
        mapped = mmap.mmap(self._fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._maps.append(mapped)
        view = memoryview(mapped)[HEADER_BYTES:]
        usable = len(view) - len(view) % (self.slot_entries * ENTRY)
        self.view = view[:usable].cast("q")
        self.capacity = usable // (self.slot_entries * ENTRY)

    def _base(self, slot: int) -> int:
        if slot >= self.capacity:
            self._remap()
            if slot >= self.capacity:
                raise StorageError(f"epoch table {self.path} has no slot {slot} (capacity {self.capacity})")
        return slot * self.slot_entries

    # -- reading -------------------------------------------------------------------------

    def current(self, slot: int) -> tuple[int, int]:
        """(epoch, index of the owning node) of a unit; (0, -1) if nobody ever owned it."""
        base = self._base(slot)
        entries = self.view[base:base + self.nodes].tolist()
        epoch = max(entries)
        return (epoch, entries.index(epoch)) if epoch > 0 else (0, -1)

    def epoch_of(self, slot: int, node: int) -> int:
        return self.view[self._base(slot) + node]

    def released(self, slot: int, node: int) -> int:
        """The epoch `node` last handed over for this unit (0: none)."""
        return self.view[self._base(slot) + self.nodes + node]

    # -- writing (each node only its own entries) ----------------------------------------

    def publish(self, slot: int, node: int, epoch: int) -> None:
        """Node `node` won `epoch` for the unit: store it (and clear its hand-over mark)."""
        base = self._base(slot)
        view = self.view
        if epoch > view[base + node]:
            view[base + node] = epoch
        view[base + self.nodes + node] = 0

    def release(self, slot: int, node: int, epoch: int) -> None:
        """Node `node` handed its `epoch` of the unit over (it wrote nothing since)."""
        self.view[self._base(slot) + self.nodes + node] = epoch

    def mark_deleted(self, slot: int, node: int) -> None:
        """Fence every owner of a deleted topic's unit."""
        self.view[self._base(slot) + node] = DELETED

    def fence(self, slot: int, node: int, epoch: int) -> Fence:
        self._base(slot)
        return Fence(self, slot, node, epoch)

    def close(self) -> None:
        self.view = None
        for mapped in self._maps:
            try:
                mapped.close()
            except BufferError:  # a Fence still holds a view: the map goes with it
                pass
        self._maps = []
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Fence:
    """One node's claim on one unit at one epoch, checked at every write to its logs."""

    __slots__ = ("table", "slot", "node", "epoch", "_base", "_end")

    def __init__(self, table: EpochTable, slot: int, node: int, epoch: int) -> None:
        self.table = table
        self.slot = slot
        self.node = node
        self.epoch = epoch
        self._base = slot * table.slot_entries
        self._end = self._base + table.nodes

    @property
    def holds(self) -> bool:
        """Whether the largest published epoch of the unit is still ours."""
        view = self.table.view
        if view is None:
            return False
        return max(view[self._base:self._end]) == self.epoch

    def check(self) -> None:
        """Raise `FencedError` unless this node still owns the unit at its epoch."""
        view = self.table.view
        if view is None or max(view[self._base:self._end]) != self.epoch:
            raise FencedError(f"unit {self.slot}: ownership epoch {self.epoch} of node index "
                              f"{self.node} was superseded; this node may not write it any more")

    def __repr__(self) -> str:
        return f"Fence(slot={self.slot}, node={self.node}, epoch={self.epoch})"

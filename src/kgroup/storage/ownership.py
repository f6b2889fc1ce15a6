"""Ownership records: which node won each ownership epoch of each unit, decided by the
file system.

How this works: `<data_dir>/cluster/owners/<slot>@<epoch>` is a symbolic link whose target
is the id of the node that won that epoch of unit `<slot>`. Winning epoch E+1 is creating
that name: `symlink(2)` either creates it or fails with EEXIST because another node did
first, so two nodes can never both win the same epoch, and there is no lock a paused
process could hold. Epochs of a unit are consecutive (a claimer always claims the one
after the latest), so the latest is found by probing upward from a hint (the epoch table).
A record never changes once made; the owner of epoch E prunes records older than E-1.

A claim is durable once the directory is fsynced (`sync`); a winner publishes its epoch in
the epoch table (epoch_table.py) only after that, and only then writes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kgroup.storage.atomic_files import fsync_directory
from kgroup.storage.errors import CorruptDataError, StorageError

_RECORD = re.compile(r"^(\d+)@(\d+)$")


class OwnershipRecords:
    """The `owners` directory of a cluster data dir."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {self.directory}: {exc}") from exc
        # (slot, epoch) -> node: records never change, so a lookup is read once.
        self._owners: dict[tuple[int, int], int] = {}

    def _path(self, slot: int, epoch: int) -> str:
        return os.path.join(self.directory, f"{slot}@{epoch}")

    def exists(self, slot: int, epoch: int) -> bool:
        return os.path.lexists(self._path(slot, epoch))

    def latest(self, slot: int, hint: int = 0) -> int:
        """The latest epoch claimed for `slot` (0: never claimed). `hint` is an epoch known
        to be claimed (from the epoch table); without a record for it (pruned, or a table
        that lost stores in a machine crash) the directory is listed."""
        epoch = hint
        if epoch > 0 and not self.exists(slot, epoch):
            epoch = max((e for s, e in self._list() if s == slot), default=0)
        while self.exists(slot, epoch + 1):
            epoch += 1
        return epoch

    def owner(self, slot: int, epoch: int) -> int | None:
        """The node that won `epoch` of `slot`, or None if nobody did (or it was pruned)."""
        key = (slot, epoch)
        node = self._owners.get(key)
        if node is None:
            try:
                target = os.readlink(self._path(slot, epoch))
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise StorageError(f"cannot read ownership record {self._path(slot, epoch)}: {exc}") from exc
            try:
                node = int(target)
            except ValueError:
                raise CorruptDataError(f"ownership record {self._path(slot, epoch)} names {target!r}, "
                                       "not a node id") from None
            self._owners[key] = node
        return node

    def claim(self, slot: int, epoch: int, node: int) -> bool:
        """Try to win `epoch` of `slot` for `node`; False if another node already has."""
        try:
            os.symlink(str(node), self._path(slot, epoch))
        except FileExistsError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot claim {self._path(slot, epoch)}: {exc}") from exc
        self._owners[(slot, epoch)] = node
        return True

    def sync(self) -> None:
        """Make the claims made so far durable."""
        fsync_directory(self.directory)

    def prune(self, slot: int, below: int) -> None:
        """Forget the records of `slot` older than epoch `below` (the owner of a newer
        epoch calls this; nothing reads them any more).

        A unit's records are a run of consecutive epochs (claims are consecutive, and every
        prune removes a run's bottom), so the run below `below` is found walking down from
        `below - 1` to the first epoch without a record, without listing the directory: a
        listing per unit taken made opening a topic of 5,000 partitions cost 5,000 listings
        of every record (minutes of a node's CPU). The run is then removed from its bottom
        up, so a prune cut short (kill -9) leaves a shorter run still joined to the newer
        epochs, which the next prune finds; removed top down it would leave a gap that no
        later walk gets past, and the records under it would stay for good."""
        bottom = below
        while bottom > 1 and self.exists(slot, bottom - 1):
            bottom -= 1
        for epoch in range(bottom, below):
            path = self._path(slot, epoch)
            self._owners.pop((slot, epoch), None)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass   # another owner's prune (of an older epoch) got here first
            except OSError as exc:
                raise StorageError(f"cannot prune {path}: {exc}") from exc

    def forget(self, slots: set[int]) -> None:
        """Remove every record of `slots` (a deleted topic's units)."""
        for s, e in self._list():
            if s in slots:
                try:
                    os.unlink(self._path(s, e))
                except FileNotFoundError:
                    pass
                self._owners.pop((s, e), None)

    def _list(self) -> list[tuple[int, int]]:
        found = []
        for name in os.listdir(self.directory):
            m = _RECORD.match(name)
            if m:
                found.append((int(m.group(1)), int(m.group(2))))
        return found

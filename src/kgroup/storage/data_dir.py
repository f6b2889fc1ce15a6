"""DataDir: the broker's data directory, the one entry point to storage.

Layout:

    <data_dir>/.lock                   flock'ed: exclusively by a single broker (or a tool),
                                       shared by each node of a cluster
    <data_dir>/topics.json             topic metadata, shared by every node of a cluster
    <data_dir>/topics.lock             flock'ed around every change of topics.json
    <data_dir>/topics/<topic>-<p>/     one PartitionLog per topic partition
    <data_dir>/group-metadata/         the GroupMetadataLog (partitions.json, <p>/...)
    <data_dir>/cluster/                cluster.json (the node ids), epochs (epoch_table.py),
                                       owners/ (ownership.py), nodes/ (node_registry.py)

Units and slots: ownership is per unit. Unit (slot) p < M is group-metadata partition p
together with partition p of each "bound" topic (the broker's `__kgroup_events`, whose
events of a group go to the partition of that group's coordinator); every other topic
partition is a unit of its own, with a slot allocated from M up when it is created (a slot
is never reused, so a recreated topic starts from fresh epochs). Inside a log directory each
ownership epoch writes in its own `u<slot>-e<epoch>/` (epoch_dirs.py).

A DataDir opens only the units this process owns. A `NodeMembership` names the node and its
cluster; the broker's ownership code (broker/cluster/ownership.py) decides what to `acquire`,
opens it (`open_unit`) and closes or hands it over (`close_unit`). Without a membership (a
tool, a test, a benchmark) the DataDir is a one-node cluster that owns everything from the
start.

Topic metadata lives in one `topics.json` (not a file per topic) because `<topic>-<p>` names
are ambiguous across topics ("a-1" partition 0 vs "a" partition 1 is fine, but a per-topic
directory "a-1" would collide with a partition directory). Format:
`{"version": 1, "next_slot": n, "topics": {name: {"topic_id": "<uuid>", "partitions": n,
"configs": {}, "slots": [...]}}}`. Every change is a read-modify-write under an exclusive
flock on `topics.lock`, replaced atomically; other nodes notice it by polling
(`refresh_topics`, which compares the file's identity).

Crash safety of topic changes: creation writes topics.json first (after removing anything a
deleted topic of the same name left behind), then owners create the partition directories.
Deletion writes topics.json first and fences every owner of the topic's units, then renames
each partition directory to `<topic>-<p>.<id>-delete` and removes it; on open, leftover
`-delete` directories and partition directories of unknown topics are removed.

Threading: like the logs, everything runs on the loop thread except `sync()` methods of the
logs (see segments.py). `DataDir.sync()` syncs every dirty log in the calling thread.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Mapping

from kgroup.storage import epoch_dirs
from kgroup.storage.atomic_files import fsync_directory, write_atomically
from kgroup.storage.config import LogConfig, MiB
from kgroup.storage.epoch_table import DELETED, EpochTable
from kgroup.storage.file_locks import open_locked
from kgroup.storage.errors import (
    CorruptDataError,
    DataDirLockedError,
    NotOwnedError,
    StorageError,
    TopicError,
    TopicExistsError,
)
from kgroup.storage.leader_epochs import leader_epoch_of
from kgroup.storage.metadata_log import DEFAULT_PARTITIONS, GroupMetadataLog
from kgroup.storage.node_registry import NodeRegistry
from kgroup.storage.ownership import OwnershipRecords
from kgroup.storage.partition_log import PartitionLog
from kgroup.storage.segments import log

TOPICS_FILE = "topics.json"
TOPICS_LOCK = "topics.lock"
CLUSTER_FILE = "cluster.json"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
TOPICS_LOCK_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """What storage remembers about a topic."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)
    # The ownership unit (slot) of each partition.
    slots: tuple[int, ...] = ()
    # What Metadata reports (the nodes share one data dir: this is not a copy count).
    replication_factor: int = 1

    def to_json(self) -> dict:
        return {"topic_id": str(self.topic_id), "partitions": self.partitions,
                "configs": dict(self.configs), "slots": list(self.slots),
                "replication_factor": self.replication_factor}


@dataclass(frozen=True, slots=True)
class NodeMembership:
    """This process's place in its data dir's cluster.

    `exclusive`: a single broker (no --cluster): it locks the data dir for itself, as
    before clusters existed. `claim_all`: own every unit from the start (a tool or a test;
    a broker lets its ownership code decide)."""

    node_ids: tuple[int, ...]
    me: int
    exclusive: bool = True
    claim_all: bool = False

    @property
    def index(self) -> int:
        """This node's entry in the epoch table."""
        return sorted(self.node_ids).index(self.me)


# A tool or a test opens a data dir as node 1, the node id a single broker has by default,
# so each resumes the other's ownership epochs instead of sealing them.
STANDALONE = NodeMembership((1,), 1, exclusive=True, claim_all=True)


def check_topic_name(name: str) -> None:
    """Kafka's rule: 1..249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    if not _LEGAL_TOPIC.match(name) or name in (".", ".."):
        raise TopicError(f"illegal topic name {name!r}")


class DataDir:
    """Open (creating) and lock a data directory; hold the logs of the units it owns."""

    def __init__(self, path: Path | str, *, metadata_partitions: int = DEFAULT_PARTITIONS,
                 metadata_segment_bytes: int = 100 * MiB, snapshots_retained: int = 2,
                 log_config: LogConfig | None = None, membership: NodeMembership | None = None,
                 bound_topics: frozenset[str] = frozenset()) -> None:
        self.path = Path(path)
        self.membership = membership or STANDALONE
        self.bound_topics = bound_topics
        self.default_log_config = log_config or LogConfig()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create data dir {self.path}: {exc}") from exc
        self._lock_fd: int | None = self._lock()
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._owned: dict[int, int] = {}  # slot -> epoch, for the units open here
        # slot -> the logs of it open here: None for the group-metadata partition, else a
        # (topic, partition) key of `_logs` (or of `_draining`, while it is handed over).
        self._open_keys: dict[int, list[tuple[str, int] | None]] = {}
        self._draining: dict[tuple[str, int], PartitionLog] = {}
        self.metadata_log: GroupMetadataLog | None = None
        self.table: EpochTable | None = None
        self.nodes: NodeRegistry | None = None
        self._topics: dict[str, TopicMeta] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._topics_stat: tuple | None = None
        # Bumped whenever the topic image changes (here or by another node).
        self.topics_version = 0
        try:
            self.topics_dir = self.path / "topics"
            self.topics_dir.mkdir(exist_ok=True)
            cluster_dir = self.path / "cluster"
            cluster_dir.mkdir(exist_ok=True)
            self.owners = OwnershipRecords(cluster_dir / "owners")
            self.nodes = NodeRegistry(cluster_dir / "nodes", sorted(self.membership.node_ids), self.membership.me)
            self.nodes.lock_self()
            with self._topics_locked():
                self._check_cluster_file(cluster_dir / CLUSTER_FILE)
                self.table = EpochTable(cluster_dir / "epochs", len(self.membership.node_ids))
                self.metadata_log = GroupMetadataLog(
                    self.path / "group-metadata", metadata_partitions, metadata_segment_bytes,
                    snapshots_retained, open_all=False)
                topics, next_slot, changed = self._read_topics_file()
                if changed:  # slots given to topics from before clusters existed
                    self._write_topics_file(topics, next_slot)
                self.table.ensure_capacity(next_slot)
                self._set_image(topics)
                self._clean_topics_dir()
            fsync_directory(self.path)
            if self.membership.claim_all:
                for slot in sorted(self.units()):
                    self._claim_and_open(slot)
        except BaseException:
            self.close()
            raise

    # -- locks ---------------------------------------------------------------------------

    def _lock(self) -> int:
        lock_path = self.path / ".lock"
        fd, holder = open_locked(str(lock_path), shared=not self.membership.exclusive)
        if fd is None:
            if self.membership.exclusive:
                raise DataDirLockedError(
                    f"data dir {self.path} is locked by pid {holder} (lock file {lock_path}); "
                    "is another broker running on it?")
            raise DataDirLockedError(
                f"data dir {self.path} is locked by a single broker (pid {holder}); a cluster "
                "node cannot share it")
        if self.membership.exclusive:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    @contextmanager
    def _topics_locked(self) -> Iterator[None]:
        """Hold the exclusive lock around a read-modify-write of topics.json (short)."""
        path = self.path / TOPICS_LOCK
        fd, _ = open_locked(str(path), TOPICS_LOCK_TIMEOUT_S)
        if fd is None:
            raise StorageError(f"{path} stayed locked for {TOPICS_LOCK_TIMEOUT_S:.0f}s "
                               "(another node is stuck changing topics)")
        try:
            yield
        finally:
            os.close(fd)  # releases the flock

    def _check_cluster_file(self, file: Path) -> None:
        nodes = sorted(self.membership.node_ids)
        if file.exists():
            try:
                stored = sorted(int(n) for n in json.loads(file.read_text())["nodes"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CorruptDataError(f"cannot read {file}: {exc}") from exc
            if stored == nodes:
                return
            if not (self.membership.exclusive and len(stored) == 1):
                if len(stored) == 1:
                    hint = "it was used by a single broker; start a cluster on a new data dir"
                else:
                    hint = (f"it belongs to a cluster of nodes {stored}; every node must name "
                            "that same --cluster list")
                raise StorageError(f"data dir {self.path} cannot serve nodes {nodes}: {hint}")
            # One single broker after another with a different node id: fine.
        write_atomically(file, [json.dumps({"version": 1, "nodes": nodes}).encode()])

    # -- topics.json ---------------------------------------------------------------------

    def _stat_topics(self) -> tuple | None:
        try:
            st = os.stat(self.path / TOPICS_FILE)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _read_topics_file(self) -> tuple[dict[str, TopicMeta], int, bool]:
        """(topics, next slot, whether slots had to be given to topics that had none)."""
        file = self.path / TOPICS_FILE
        m = self.metadata_log.num_partitions
        self._topics_stat = self._stat_topics()
        if self._topics_stat is None:
            if any(_PARTITION_DIR.match(e.name) and e.is_dir() for e in os.scandir(self.topics_dir)):
                raise CorruptDataError(
                    f"{file} is missing but {self.topics_dir} holds partition directories; "
                    "refusing to guess which topics they belong to")
            return {}, m, False
        try:
            doc = json.loads(file.read_text())
            if doc.get("version") != 1:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            topics = {name: TopicMeta(name, uuid.UUID(t["topic_id"]), int(t["partitions"]),
                                      dict(t.get("configs", {})), tuple(int(s) for s in t.get("slots", ())),
                                      int(t.get("replication_factor", 1)))
                      for name, t in doc["topics"].items()}
            next_slot = max(int(doc.get("next_slot", m)), m)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptDataError(f"cannot read topic metadata {file}: {exc}") from exc
        changed = False
        for name, meta in sorted(topics.items()):
            if len(meta.slots) != meta.partitions:
                slots, next_slot = self._slots_for(name, meta.slots, meta.partitions, next_slot)
                topics[name] = replace(meta, slots=slots)
                changed = True
        return topics, next_slot, changed

    def _slots_for(self, name: str, slots: tuple[int, ...], partitions: int, next_slot: int
                   ) -> tuple[tuple[int, ...], int]:
        """Slots for partitions len(slots)..partitions-1: a bound topic's partition p is
        unit p; any other partition gets a new slot."""
        if name in self.bound_topics:
            if partitions > self.metadata_log.num_partitions:
                raise TopicError(f"topic {name!r} is owned with the group-metadata partitions: it "
                                 f"cannot have more than {self.metadata_log.num_partitions} partitions")
            return tuple(range(partitions)), next_slot
        fresh = tuple(range(next_slot, next_slot + partitions - len(slots)))
        return slots + fresh, next_slot + len(fresh)

    def _write_topics_file(self, topics: dict[str, TopicMeta], next_slot: int) -> None:
        doc = {"version": 1, "next_slot": next_slot,
               "topics": {n: t.to_json() for n, t in sorted(topics.items())}}
        write_atomically(self.path / TOPICS_FILE, [json.dumps(doc, indent=1).encode()])
        self._topics_stat = self._stat_topics()

    def _set_image(self, topics: dict[str, TopicMeta]) -> None:
        self._topics = topics
        self._names_by_id = {meta.topic_id: name for name, meta in topics.items()}
        self.topics_version += 1
        self._slot_parts: dict[int, list[tuple[str, int]]] = {}
        for name, meta in topics.items():
            for p, slot in enumerate(meta.slots):
                self._slot_parts.setdefault(slot, []).append((name, p))

    @contextmanager
    def _changing_topics(self) -> Iterator[tuple[dict[str, TopicMeta], list[int]]]:
        """Under the topics lock, the current topics (a copy to change) and [next slot];
        written back when the block ends without an error."""
        with self._topics_locked():
            topics, next_slot, _ = self._read_topics_file()
            box = [next_slot]
            yield topics, box
            self.table.ensure_capacity(box[0])
            self._write_topics_file(topics, box[0])
            self._set_image(topics)
            self._apply_configs()
        self._open_new_bound_partitions()

    def refresh_topics(self) -> bool:
        """Re-read topics.json if another node changed it; True if the topics changed. Logs
        of topics that are gone are closed; new topic configs apply to open logs."""
        if self._stat_topics() == self._topics_stat:
            return False
        with self._topics_locked():
            topics, _, _ = self._read_topics_file()
        if topics == self._topics:
            return False
        self._set_image(topics)
        units = self.units()
        for slot in [s for s in self._owned if s not in units]:
            self.close_unit(slot)
        self._apply_configs()
        self._open_new_bound_partitions()
        return True

    def set_default_log_config(self, config: LogConfig) -> None:
        """New defaults for topic logs (dynamic broker configs): applied to the open logs
        of topics that do not set their own, and to the logs opened from now on."""
        self.default_log_config = config
        self._apply_configs()

    def _apply_configs(self) -> None:
        for (name, p), plog in self._logs.items():
            meta = self._topics.get(name)
            if meta is not None:
                cfg = self._log_config(meta)
                plog.config = cfg
                plog.segment_bytes = cfg.segment_bytes

    def _clean_topics_dir(self) -> None:
        """Remove what deleted topics left (under the topics lock, so the image is current)."""
        for entry in os.scandir(self.topics_dir):
            if not entry.is_dir():
                continue
            if entry.name.endswith("-delete"):
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            m = _PARTITION_DIR.match(entry.name)
            meta = self._topics.get(m.group(1)) if m else None
            if meta is None or int(m.group(2)) >= meta.partitions:
                log.warning("removing %s: no such topic partition in %s", entry.path, TOPICS_FILE)
                self._remove_dir(Path(entry.path), "orphan")

    def _remove_dir(self, path: Path, tag: str) -> None:
        doomed = path.with_name(f"{path.name}.{tag}-delete")
        try:
            os.rename(path, doomed)
            shutil.rmtree(doomed)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot remove {path}: {exc}") from exc

    def _log_config(self, meta: TopicMeta) -> LogConfig:
        return self.default_log_config.with_topic_configs(meta.configs)

    # -- units ---------------------------------------------------------------------------

    def units(self) -> dict[int, int]:
        """Every unit (slot) now, with its placement index: the group-metadata partition
        number, or the topic partition number."""
        found = {p: p for p in range(self.metadata_log.num_partitions)}
        for slot, parts in self._slot_parts.items():
            if slot not in found:
                found[slot] = parts[0][1]
        return found

    def unit_of(self, topic: str, partition: int) -> int:
        meta = self.topic(topic)
        if not 0 <= partition < meta.partitions:
            raise TopicError(f"unknown topic partition {topic}-{partition} in {self.path}")
        return meta.slots[partition]

    def owned_units(self) -> dict[int, int]:
        """slot -> epoch of the units open here."""
        return dict(self._owned)

    def acquire(self, slot: int) -> int | None:
        """Win an ownership epoch for `slot` and publish it; None if another node won it
        (see `acquire_many`)."""
        return self.acquire_many([slot]).get(slot)

    def acquire_many(self, slots: list[int]) -> dict[int, int]:
        """Win ownership epochs for `slots` and publish them: {slot: epoch} for those won.

        If this node won the latest epoch of a unit itself (an earlier run of this node,
        which is gone since this process holds the node's lock; or this process before it
        closed the unit) and nobody claimed one since, that epoch is resumed: its directory
        is reopened, with no seal. Otherwise the next epoch is claimed; the claims are made
        durable together (one fsync) before any is published, and the previous owner's
        logs are sealed when the unit is opened.
        """
        me, index = self.membership.me, self.membership.index
        won: dict[int, int] = {}
        claimed = False
        for slot in slots:
            hint, _ = self.table.current(slot)
            if hint >= DELETED:
                continue
            latest = self.owners.latest(slot, hint)
            if latest > 0 and self.owners.owner(slot, latest) == me:
                won[slot] = latest
            elif self.owners.claim(slot, latest + 1, me):
                won[slot] = latest + 1
                claimed = True
        if claimed:
            self.owners.sync()
        for slot, epoch in won.items():
            self.table.publish(slot, index, epoch)
        return won

    def leader_epoch(self, slot: int) -> int:
        """The leader epoch of unit `slot` as every node sees it: its current ownership
        epoch less one (leader_epochs.py; 0 before anyone owns it, or once deleted)."""
        epoch, _ = self.table.current(slot)
        return 0 if epoch >= DELETED else leader_epoch_of(epoch)

    def holds(self, slot: int) -> bool:
        """Whether this node still owns unit `slot` at the epoch it opened it at."""
        epoch = self._owned.get(slot)
        return epoch is not None and self.table.current(slot)[0] == epoch

    def describe_unit(self, slot: int) -> str:
        """"group-metadata partition 7", "orders-3": what a unit is, for logs."""
        parts = [f"{t}-{p}" for t, p in self._slot_parts.get(slot, ())]
        if slot < self.metadata_log.num_partitions:
            return f"group-metadata partition {slot}" + (f" (with {', '.join(parts)})" if parts else "")
        return ", ".join(parts) or f"unit {slot} (a deleted topic partition)"

    def stop_serving(self, slot: int) -> None:
        """Before a unit is handed over: its topic partitions answer NotOwnedError from now
        on, while the logs stay open until `close_unit` (in-flight writes finish). A bound
        topic's partition stays writable: the coordinator writes its last events there."""
        for key in self._open_keys.get(slot, ()):
            if key is not None and key in self._logs and key[0] not in self.bound_topics:
                self._draining[key] = self._logs.pop(key)

    def open_unit(self, slot: int, epoch: int) -> None:
        """Open every log of unit `slot` at `epoch` (won by `acquire`), with its fence."""
        if slot in self._owned:
            raise StorageError(f"unit {slot} is already open at epoch {self._owned[slot]}")
        self._owned[slot] = epoch
        self._open_keys[slot] = []
        try:
            if slot < self.metadata_log.num_partitions:
                plan = epoch_dirs.prepare(self.metadata_log.directory / str(slot), slot, epoch)
                self.metadata_log.open_partition(slot, plan, self._fence(slot, epoch))
                self._open_keys[slot].append(None)
            for key in self._slot_parts.get(slot, ()):
                self._open_topic_partition(slot, epoch, key)
        except BaseException:
            self.close_unit(slot)
            raise
        self.owners.prune(slot, epoch - 1)
        for key in self._open_keys[slot]:
            epoch_dirs.remove_older(self._log_directory(key, slot), slot, epoch)

    def _fence(self, slot: int, epoch: int):
        return self.table.fence(slot, self.membership.index, epoch)

    def _log_directory(self, key: tuple[str, int] | None, slot: int) -> Path:
        if key is None:
            return self.metadata_log.directory / str(slot)
        return self.topics_dir / f"{key[0]}-{key[1]}"

    def _open_topic_partition(self, slot: int, epoch: int, key: tuple[str, int]) -> None:
        plan = epoch_dirs.prepare(self._log_directory(key, slot), slot, epoch)
        self._logs[key] = PartitionLog(plan.directory, self._log_config(self._topics[key[0]]), plan,
                                       self._fence(slot, epoch))
        self._open_keys[slot].append(key)

    def _open_new_bound_partitions(self) -> None:
        """A bound topic that appeared or grew while this node owned the group-metadata
        units: open its partitions in those units' epochs."""
        for slot, epoch in self._owned.items():
            if slot >= self.metadata_log.num_partitions:
                continue
            for key in self._slot_parts.get(slot, ()):
                if key not in self._logs:
                    self._open_topic_partition(slot, epoch, key)

    def close_unit(self, slot: int, release: bool = False) -> None:
        """Close the logs of unit `slot` (sync them first if it matters). `release`: hand
        it over cleanly — mark it released in the epoch table so another node may take it
        without waiting for this one to die."""
        epoch = self._owned.pop(slot, None)
        for key in self._open_keys.pop(slot, ()):
            if key is None:
                self.metadata_log.close_partition(slot)
            else:
                plog = self._logs.pop(key, None) or self._draining.pop(key, None)
                if plog is not None:
                    plog.close(handed_over=True)   # another node serves it now
        if release and epoch is not None:
            self.table.release(slot, self.membership.index, epoch)

    def _claim_and_open(self, slot: int) -> None:
        epoch = self.acquire(slot)
        if epoch is None:
            raise StorageError(f"unit {slot} of {self.path} was claimed by another process")
        self.open_unit(slot, epoch)

    # -- topics --------------------------------------------------------------------------

    def topics(self) -> dict[str, TopicMeta]:
        """Every topic, by name."""
        return dict(self._topics)

    def names_by_id(self) -> Mapping[uuid.UUID, str]:
        """Every topic's name by its id: built when the topics change, so the requests that
        name topics by id (Produce v13, Fetch v13+) do not rebuild it per request."""
        return self._names_by_id

    def topic(self, name: str) -> TopicMeta:
        try:
            return self._topics[name]
        except KeyError:
            raise TopicError(f"unknown topic {name!r} in {self.path}") from None

    def _remove_leftovers(self, name: str, first: int, count: int) -> None:
        """Partition directories a deleted topic of the same name left behind."""
        for p in range(first, count):
            path = self.topics_dir / f"{name}-{p}"
            if path.exists():
                self._remove_dir(path, "leftover")

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                     topic_id: uuid.UUID | None = None, replication_factor: int = 1) -> TopicMeta:
        """Create a topic (its partitions are opened by their owners)."""
        check_topic_name(name)
        if partitions <= 0:
            raise TopicError(f"topic {name!r}: partition count must be positive, got {partitions}")
        meta = TopicMeta(name, topic_id or uuid.uuid4(), partitions, dict(configs or {}),
                         replication_factor=replication_factor)
        self._log_config(meta)  # reject bad configs before writing anything
        with self._changing_topics() as (topics, next_slot):
            if name in topics:
                raise TopicExistsError(f"topic {name!r} already exists in {self.path}")
            slots, next_slot[0] = self._slots_for(name, (), partitions, next_slot[0])
            meta = replace(meta, slots=slots)
            self._remove_leftovers(name, 0, partitions)
            topics[name] = meta
        self._opened_by_claim_all(meta.slots)
        return meta

    def create_partitions(self, name: str, new_count: int) -> TopicMeta:
        """Grow a topic to `new_count` partitions (Kafka never shrinks)."""
        with self._changing_topics() as (topics, next_slot):
            meta = topics.get(name)
            if meta is None:
                raise TopicError(f"unknown topic {name!r} in {self.path}")
            if new_count <= meta.partitions:
                raise TopicError(f"topic {name!r} has {meta.partitions} partitions; cannot change to {new_count}")
            slots, next_slot[0] = self._slots_for(name, meta.slots, new_count, next_slot[0])
            self._remove_leftovers(name, meta.partitions, new_count)
            grown = topics[name] = replace(meta, partitions=new_count, slots=slots)
        self._opened_by_claim_all(grown.slots[meta.partitions:])
        return grown

    def _opened_by_claim_all(self, slots) -> None:
        if self.membership.claim_all:
            for slot in slots:
                if slot not in self._owned:
                    self._claim_and_open(slot)

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMeta:
        """Replace a topic's configs; retention settings apply to its logs at once, a new
        segment.bytes from the next roll."""
        with self._changing_topics() as (topics, _):
            meta = topics.get(name)
            if meta is None:
                raise TopicError(f"unknown topic {name!r} in {self.path}")
            updated = replace(meta, configs=dict(configs))
            self._log_config(updated)
            topics[name] = updated
        return updated

    def delete_topic(self, name: str) -> None:
        """Forget a topic, fence every owner of its partitions, remove their directories."""
        if name in self.bound_topics:
            raise TopicError(f"topic {name!r} belongs to the group coordinator and cannot be deleted")
        with self._changing_topics() as (topics, _):
            meta = topics.pop(name, None)
            if meta is None:
                raise TopicError(f"unknown topic {name!r} in {self.path}")
            for slot in meta.slots:
                self.table.mark_deleted(slot, self.membership.index)
        for p, slot in enumerate(meta.slots):
            self.close_unit(slot)
            self._remove_dir(self.topics_dir / f"{name}-{p}", meta.topic_id.hex)
        self.owners.forget(set(meta.slots))
        fsync_directory(self.topics_dir)

    def partition_log(self, topic: str, partition: int) -> PartitionLog:
        """The log of one topic partition (owned by this node)."""
        try:
            return self._logs[(topic, partition)]
        except KeyError:
            meta = self._topics.get(topic)
            if meta is not None and 0 <= partition < meta.partitions:
                raise NotOwnedError(f"topic partition {topic}-{partition} is not owned by this node") from None
            raise TopicError(f"unknown topic partition {topic}-{partition} in {self.path}") from None

    def partition_logs(self) -> dict[tuple[str, int], PartitionLog]:
        return dict(self._logs)

    def draining_log(self, topic: str, partition: int) -> PartitionLog | None:
        """The log of a partition being handed over (not served any more), if any."""
        return self._draining.get((topic, partition))

    # -- upkeep --------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Apply retention to every partition log; returns segments deleted."""
        return sum(plog.apply_retention(now_ms) for plog in self._logs.values())

    def sync(self) -> None:
        """fsync every log with unsynced appends (any thread; see segments.py)."""
        for plog in list(self._logs.values()):
            if plog.log_end_offset > plog.durable_end and not plog.fenced:
                plog.sync()
        if self.metadata_log is not None:
            for part in self.metadata_log.dirty_partitions():
                if not part.log.fenced:
                    part.sync()

    def close(self) -> None:
        """Flush and close every log and release the locks. Idempotent."""
        try:
            for plog in self._logs.values():
                plog.close()
            if self.metadata_log is not None:
                self.metadata_log.close()
        finally:
            for plog in self._draining.values():
                plog.close()
            self._logs = {}
            self._draining = {}
            self._owned = {}
            self._open_keys = {}
            if self.table is not None:
                self.table.close()
                self.table = None
            if self.nodes is not None:
                self.nodes.close()
                self.nodes = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None

    def __enter__(self) -> DataDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

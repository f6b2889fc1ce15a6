"""DataDir: the broker's data directory, the one entry point to storage.

Layout:

    <data_dir>/.lock                   flock'ed by the running broker; holds its pid
    <data_dir>/topics.json             topic metadata, replaced atomically on every change
    <data_dir>/topics/<topic>-<p>/     one PartitionLog per topic partition
    <data_dir>/group-metadata/         the GroupMetadataLog (partitions.json, <p>/...)

Topic metadata lives in one `topics.json` (not a file per topic) because `<topic>-<p>` names
are ambiguous across topics ("a-1" partition 0 vs "a" partition 1 is fine, but a per-topic
directory "a-1" would collide with a partition directory). Format:
`{"version": 1, "topics": {name: {"topic_id": "<uuid>", "partitions": n, "configs": {}}}}`.

Crash safety of topic changes: creation writes topics.json first, then the partition
directories (missing ones are created on open). Deletion writes topics.json first, then
renames each partition directory to `<topic>-<p>.<id>-delete` and removes it; on open,
leftover `-delete` directories and partition directories of unknown topics are removed.

Threading: like the logs, everything runs on the loop thread except `sync()` methods of the
logs (see segments.py). `DataDir.sync()` syncs every dirty log in the calling thread.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from kgroup.storage.atomic_files import fsync_directory, write_atomically
from kgroup.storage.config import LogConfig, MiB
from kgroup.storage.errors import (
    CorruptDataError,
    DataDirLockedError,
    StorageError,
    TopicError,
)
from kgroup.storage.metadata_log import DEFAULT_PARTITIONS, GroupMetadataLog
from kgroup.storage.partition_log import PartitionLog
from kgroup.storage.segments import log

TOPICS_FILE = "topics.json"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """What storage remembers about a topic."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"topic_id": str(self.topic_id), "partitions": self.partitions,
                "configs": dict(self.configs)}


def check_topic_name(name: str) -> None:
    """Kafka's rule: 1..249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    if not _LEGAL_TOPIC.match(name) or name in (".", ".."):
        raise TopicError(f"illegal topic name {name!r}")


class DataDir:
    """Open (creating) and lock a data directory; hold its partition logs and the
    group-metadata log."""

    def __init__(self, path: Path | str, *, metadata_partitions: int = DEFAULT_PARTITIONS,
                 metadata_segment_bytes: int = 100 * MiB, snapshots_retained: int = 2,
                 log_config: LogConfig | None = None) -> None:
        self.path = Path(path)
        self.default_log_config = log_config or LogConfig()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create data dir {self.path}: {exc}") from exc
        self._lock_fd = self._lock()
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self.metadata_log: GroupMetadataLog | None = None
        try:
            self.topics_dir = self.path / "topics"
            self.topics_dir.mkdir(exist_ok=True)
            self._topics = self._read_topics()
            self._clean_topics_dir()
            for meta in self._topics.values():
                for p in range(meta.partitions):
                    self._open_log(meta, p)
            fsync_directory(self.topics_dir)
            self.metadata_log = GroupMetadataLog(
                self.path / "group-metadata", metadata_partitions, metadata_segment_bytes,
                snapshots_retained)
            fsync_directory(self.path)
        except BaseException:
            self.close()
            raise

    # -- lock ----------------------------------------------------------------------------

    def _lock(self) -> int:
        lock_path = self.path / ".lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open lock file {lock_path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise DataDirLockedError(
                    f"data dir {self.path} is locked by pid {holder} (lock file {lock_path}); "
                    "is another broker running on it?") from None
            raise StorageError(f"cannot lock {lock_path}: {exc}") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    # -- topics.json ---------------------------------------------------------------------

    def _read_topics(self) -> dict[str, TopicMeta]:
        file = self.path / TOPICS_FILE
        if not file.exists():
            if any(_PARTITION_DIR.match(e.name) and e.is_dir() for e in os.scandir(self.topics_dir)):
                raise CorruptDataError(
                    f"{file} is missing but {self.topics_dir} holds partition directories; "
                    "refusing to guess which topics they belong to")
            return {}
        try:
            doc = json.loads(file.read_text())
            if doc.get("version") != 1:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            return {name: TopicMeta(name, uuid.UUID(t["topic_id"]), int(t["partitions"]),
                                    dict(t.get("configs", {})))
                    for name, t in doc["topics"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptDataError(f"cannot read topic metadata {file}: {exc}") from exc

    def _write_topics(self, topics: dict[str, TopicMeta]) -> None:
        doc = {"version": 1, "topics": {n: t.to_json() for n, t in sorted(topics.items())}}
        write_atomically(self.path / TOPICS_FILE, [json.dumps(doc, indent=1).encode()])
        self._topics = topics

    def _clean_topics_dir(self) -> None:
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

    def _open_log(self, meta: TopicMeta, partition: int) -> PartitionLog:
        plog = PartitionLog(self.topics_dir / f"{meta.name}-{partition}", self._log_config(meta))
        self._logs[(meta.name, partition)] = plog
        return plog

    # -- topics --------------------------------------------------------------------------

    def topics(self) -> dict[str, TopicMeta]:
        """Every topic, by name."""
        return dict(self._topics)

    def topic(self, name: str) -> TopicMeta:
        try:
            return self._topics[name]
        except KeyError:
            raise TopicError(f"unknown topic {name!r} in {self.path}") from None

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                     topic_id: uuid.UUID | None = None) -> TopicMeta:
        """Create a topic and its empty partition logs."""
        check_topic_name(name)
        if name in self._topics:
            raise TopicError(f"topic {name!r} already exists in {self.path}")
        if partitions <= 0:
            raise TopicError(f"topic {name!r}: partition count must be positive, got {partitions}")
        meta = TopicMeta(name, topic_id or uuid.uuid4(), partitions, dict(configs or {}))
        self._log_config(meta)  # reject bad configs before writing anything
        self._write_topics({**self._topics, name: meta})
        for p in range(partitions):
            self._open_log(meta, p)
        fsync_directory(self.topics_dir)
        return meta

    def create_partitions(self, name: str, new_count: int) -> TopicMeta:
        """Grow a topic to `new_count` partitions (Kafka never shrinks)."""
        meta = self.topic(name)
        if new_count <= meta.partitions:
            raise TopicError(f"topic {name!r} has {meta.partitions} partitions; cannot change to {new_count}")
        grown = TopicMeta(name, meta.topic_id, new_count, meta.configs)
        self._write_topics({**self._topics, name: grown})
        for p in range(meta.partitions, new_count):
            self._open_log(grown, p)
        fsync_directory(self.topics_dir)
        return grown

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMeta:
        """Replace a topic's configs; retention settings apply to its logs at once, a new
        segment.bytes from the next roll."""
        meta = self.topic(name)
        updated = TopicMeta(name, meta.topic_id, meta.partitions, dict(configs))
        cfg = self._log_config(updated)
        self._write_topics({**self._topics, name: updated})
        for p in range(meta.partitions):
            plog = self._logs[(name, p)]
            plog.config = cfg
            plog.segment_bytes = cfg.segment_bytes
        return updated

    def delete_topic(self, name: str) -> None:
        """Forget a topic and remove its partition directories."""
        meta = self.topic(name)
        remaining = dict(self._topics)
        del remaining[name]
        self._write_topics(remaining)
        for p in range(meta.partitions):
            plog = self._logs.pop((name, p))
            plog.close()
            self._remove_dir(plog.directory, meta.topic_id.hex)
        fsync_directory(self.topics_dir)

    def partition_log(self, topic: str, partition: int) -> PartitionLog:
        """The log of one topic partition."""
        try:
            return self._logs[(topic, partition)]
        except KeyError:
            raise TopicError(f"unknown topic partition {topic}-{partition} in {self.path}") from None

    def partition_logs(self) -> dict[tuple[str, int], PartitionLog]:
        return dict(self._logs)

    # -- upkeep --------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Apply retention to every partition log; returns segments deleted."""
        return sum(plog.apply_retention(now_ms) for plog in self._logs.values())

    def sync(self) -> None:
        """fsync every log with unsynced appends (any thread; see segments.py)."""
        for plog in list(self._logs.values()):
            if plog.log_end_offset > plog.durable_end:
                plog.sync()
        if self.metadata_log is not None:
            self.metadata_log.sync()

    def close(self) -> None:
        """Flush and close every log and release the lock. Idempotent."""
        try:
            for plog in self._logs.values():
                plog.close()
            if self.metadata_log is not None:
                self.metadata_log.close()
        finally:
            self._logs = {}
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None

    def __enter__(self) -> DataDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

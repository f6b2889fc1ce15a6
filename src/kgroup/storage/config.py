"""Storage configuration: the fsync policy and per-log settings.

The broker applies the fsync *timing*; storage only offers cheap `append`, `flush` (hand the
buffered bytes to the kernel: survives `kill -9`) and `sync` (fsync: survives power loss).

- "always" (default): the broker answers an offset commit, a group change or an acks=all
  produce only after a `sync()` that covers it; it batches many requests per `sync()`
  (group commit).
- "interval:<ms>": the broker calls `sync()` every <ms> milliseconds and answers after
  `flush()`.
- "never": the broker only flushes (benchmarks; survives `kill -9` of the broker but not a
  machine crash).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from kgroup.storage.errors import StorageConfigError

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FsyncPolicy:
    """How the broker makes appends durable; see the module docstring."""

    mode: Literal["always", "interval", "never"] = "always"
    interval_ms: int = 0

    @classmethod
    def parse(cls, text: str) -> FsyncPolicy:
        """Parse "always", "never" or "interval:<ms>"."""
        text = text.strip()
        if text in ("always", "never"):
            return cls(mode=text)  # type: ignore[arg-type]
        if text.startswith("interval:"):
            raw = text.partition(":")[2]
            try:
                ms = int(raw)
            except ValueError:
                raise StorageConfigError(f"fsync policy {text!r}: interval {raw!r} is not an integer") from None
            if ms <= 0:
                raise StorageConfigError(f"fsync policy {text!r}: interval must be > 0 ms")
            return cls(mode="interval", interval_ms=ms)
        raise StorageConfigError(f"fsync policy {text!r}: expected 'always', 'never' or 'interval:<ms>'")

    @property
    def sync_before_answer(self) -> bool:
        """True when a durable request must wait for `sync()` before it is answered."""
        return self.mode == "always"

    def __str__(self) -> str:
        return f"interval:{self.interval_ms}" if self.mode == "interval" else self.mode


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one log (a topic partition or a group-metadata partition).

    retention_bytes / retention_ms of -1 mean unlimited (Kafka's convention).
    """

    segment_bytes: int = 100 * MiB
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096

    def __post_init__(self) -> None:
        if self.segment_bytes < 64:
            raise StorageConfigError(f"segment_bytes={self.segment_bytes} is too small (minimum 64)")
        if self.index_interval_bytes < 0:
            raise StorageConfigError(f"index_interval_bytes={self.index_interval_bytes} must be >= 0")

    def with_topic_configs(self, configs: Mapping[str, str | None]) -> LogConfig:
        """Overlay Kafka topic configs (segment.bytes, retention.bytes, retention.ms,
        index.interval.bytes); other keys are ignored here."""
        fields = {
            "segment.bytes": "segment_bytes",
            "retention.bytes": "retention_bytes",
            "retention.ms": "retention_ms",
            "index.interval.bytes": "index_interval_bytes",
        }
        values = {
            "segment_bytes": self.segment_bytes,
            "retention_bytes": self.retention_bytes,
            "retention_ms": self.retention_ms,
            "index_interval_bytes": self.index_interval_bytes,
        }
        for key, attr in fields.items():
            raw = configs.get(key)
            if raw is None:
                continue
            try:
                values[attr] = int(raw)
            except ValueError:
                raise StorageConfigError(f"topic config {key}={raw!r} is not an integer") from None
        return LogConfig(**values)

"""What the consumer and producer hand to their users: partitions, records, metadata."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""


@dataclass(slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a produced record landed."""

    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Where a batch of ``Producer.send_columns`` landed: ``count`` records from
    ``base_offset`` on (-1 when not known: acks=0, or a duplicate the broker had stored)."""

    topic: str
    partition: int
    base_offset: int
    count: int
    timestamp: int

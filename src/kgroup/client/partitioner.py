"""Kafka's default partitioner for keyed records: murmur2(key) & 0x7fffffff mod count.

Same function as Kafka's Java client and kafka-python, so ``kgroup produce`` puts a key on
the partition any other Kafka producer would.
"""

from __future__ import annotations


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 (seed 0x9747b28c), as a signed int."""
    length = len(data)
    seed = 0x9747B28C
    m = 0x5BD1E995
    r = 24
    h = (seed ^ length) & 0xFFFFFFFF
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = int.from_bytes(data[i4 : i4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    extra = length % 4
    if extra >= 3:
        h ^= data[(length & ~3) + 2] << 16
    if extra >= 2:
        h ^= data[(length & ~3) + 1] << 8
    if extra >= 1:
        h ^= data[length & ~3]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class StickyPartitioner:
    """Kafka's default partitioner: murmur2 for keyed records; records without a key stick
    to one partition per topic until a batch is sent, then move on (KIP-480)."""

    def __init__(self) -> None:
        self._sticky: dict[str, int] = {}
        self._counter = 0

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, partitions)
        p = self._sticky.get(topic)
        if p is None or p >= partitions:
            p = self._next(topic, partitions)
        return p

    def batch_sent(self, topic: str, partitions: int) -> None:
        """A batch of ``topic`` was closed: keyless records move to the next partition."""
        self._next(topic, partitions)

    def batch_closed(self, topic: str, partition: int, partitions: int) -> None:
        """A batch of ``topic``-``partition`` was closed: keyless records sticking to that
        partition move on to the next."""
        if self._sticky.get(topic) == partition:
            self._next(topic, partitions)

    def _next(self, topic: str, partitions: int) -> int:
        self._counter += 1
        p = self._counter % partitions
        self._sticky[topic] = p
        return p

"""Which group-metadata partition owns a group: exactly Kafka's rule.

Kafka: `Utils.abs(groupId.hashCode()) % groupMetadataTopicPartitionCount`, where
`String.hashCode` is s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units with 32-bit
signed wraparound, and `Utils.abs(n)` is `n & 0x7fffffff` (so Integer.MIN_VALUE maps to 0).
"""

from __future__ import annotations

from kgroup.java_hash import java_string_hashcode

__all__ = ["java_string_hashcode", "partition_for_group"]


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The group-metadata partition of `group_id` among `num_partitions`."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return (java_string_hashcode(group_id) & 0x7FFFFFFF) % num_partitions

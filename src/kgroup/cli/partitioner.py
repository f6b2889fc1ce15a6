"""Kafka's default partitioner; it lives in ``kgroup.client.partitioner`` (re-exported)."""

from kgroup.client.partitioner import murmur2, partition_for_key

__all__ = ["murmur2", "partition_for_key"]

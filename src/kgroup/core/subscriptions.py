"""Reading the topics out of a member's consumer-protocol subscription bytes.

The coordinator needs them for OffsetDelete and offset retention. Garbage metadata from a
misbehaving client must not break either, so it reads as "unknown" (None): like Kafka,
retention then keeps every offset of the group and OffsetDelete protects none.
"""

from __future__ import annotations

import struct


def subscribed_topics(metadata: bytes) -> tuple[str, ...] | None:
    """Topics of a ConsumerProtocolSubscription (any version), or None if unreadable."""
    try:
        (_version, count), pos = struct.unpack_from(">hi", metadata, 0), 6
        topics = []
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if length < 0 or pos + length > len(metadata):
                return None
            topics.append(metadata[pos:pos + length].decode())
            pos += length
        return tuple(topics)
    except (struct.error, UnicodeDecodeError):
        return None

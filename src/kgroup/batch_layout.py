"""The header of a Kafka record batch v2 (magic 2): its layout, written once for every layer.

    offset  field                 type
    0       baseOffset            int64   (rewritten by the broker; not covered by the CRC)
    8       batchLength           int32   (bytes after this field: total size - 12)
    12      partitionLeaderEpoch  int32
    16      magic                 int8    (2)
    17      crc                   uint32  CRC-32C of bytes 21..end
    21      attributes            int16   (bits 0-2 compression, 3 timestamp type,
                                           4 transactional, 5 control)
    23      lastOffsetDelta       int32
    27      baseTimestamp         int64
    35      maxTimestamp          int64
    43      producerId            int64
    51      producerEpoch         int16
    53      baseSequence          int32
    57      recordCount           int32
    61      records...

A records blob (Produce, Fetch, a segment file) is such batches back to back: each is
`LOG_OVERHEAD` bytes (baseOffset, batchLength) and then `batchLength` bytes. The wire layer
(wire/record_batch.py) checks, decodes and builds batches, storage (storage/batch_header.py)
parses the fields it indexes by; both, and everything that peeks at a header, take the
offsets from here. A leaf: it imports nothing of kgroup and does no I/O.
"""

from __future__ import annotations

import struct

MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqqhii")     # every field, baseOffset to recordCount
HEADER_SIZE = HEADER.size                     # 61
LOG_OVERHEAD = 12                             # baseOffset + batchLength
LENGTH_AT = 8
MAGIC_AT = 16
CRC_START = 21                                # the CRC covers bytes CRC_START..end
ATTRIBUTES_AT = 21
LAST_OFFSET_DELTA_AT = 23
PRODUCER_ID_AT = 43
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49

BASE_OFFSET = struct.Struct(">q")             # at 0
BASE_AND_LENGTH = struct.Struct(">qi")        # baseOffset, batchLength, at 0
LENGTH = struct.Struct(">i")                  # batchLength, at LENGTH_AT
LAST_OFFSET_DELTA = struct.Struct(">i")       # at LAST_OFFSET_DELTA_AT
ATTRIBUTES_AND_LAST_DELTA = struct.Struct(">hi")  # at ATTRIBUTES_AT
PRODUCER_ID = struct.Struct(">q")             # at PRODUCER_ID_AT

TRANSACTIONAL_BIT = 0x10                      # attributes: a batch of a transaction
CONTROL_BIT = 0x20                            # attributes: a control batch (a marker)


class BatchExtent:
    """Where a parsed header's batch ends, for the header classes of the wire and storage
    layers (each a frozen dataclass with these three fields)."""

    __slots__ = ()

    base_offset: int
    batch_length: int
    last_offset_delta: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, baseOffset and batchLength included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

"""Storage: append-only logs on local disk.

- `DataDir` (data_dir.py): the data directory: lock, topic metadata, partition logs, and
  the group-metadata log.
- `PartitionLog` (partition_log.py): one topic partition, v2 record batches as received.
- `GroupMetadataLog` / `MetadataPartition` (metadata_log.py): our `__consumer_offsets`,
  framed opaque records plus snapshots; `RecordLog` (record_log.py) is one partition's file.
- `FsyncPolicy`, `LogConfig` (config.py); errors (errors.py), all `StorageError`s.

Threading and durability contract: segments.py.
"""

from kgroup.storage.config import FsyncPolicy, LogConfig
from kgroup.storage.data_dir import DataDir, TopicMeta
from kgroup.storage.errors import (
    CorruptDataError,
    DataDirLockedError,
    InvalidBatchError,
    LogClosedError,
    LogFailedError,
    LogHandedOverError,
    OffsetOutOfRangeError,
    StorageConfigError,
    StorageError,
    TopicError,
    TopicExistsError,
)
from kgroup.storage.group_hash import java_string_hashcode, partition_for_group
from kgroup.storage.metadata_log import GroupMetadataLog, MetadataPartition, Replay
from kgroup.storage.partition_log import PartitionLog
from kgroup.storage.record_log import RecordLog

__all__ = [
    "CorruptDataError", "DataDir", "DataDirLockedError", "FsyncPolicy",
    "GroupMetadataLog", "InvalidBatchError", "LogClosedError", "LogConfig", "LogFailedError",
    "LogHandedOverError",
    "MetadataPartition", "OffsetOutOfRangeError", "PartitionLog", "RecordLog", "Replay",
    "StorageConfigError", "StorageError", "TopicError", "TopicExistsError", "TopicMeta", "java_string_hashcode",
    "partition_for_group",
]

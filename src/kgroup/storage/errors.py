"""Exceptions raised by the storage layer.

Every error caused by bad on-disk data or by misuse of a storage object is a `StorageError`,
and its message names what is wrong and where (the file or directory involved).
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every storage-layer error."""


class CorruptDataError(StorageError):
    """On-disk data that cannot be read back (bad frame, bad batch header, bad snapshot)."""


class DataDirLockedError(StorageError):
    """Another process holds the lock on the data directory."""


class InvalidBatchError(StorageError):
    """A record batch handed to a partition log is not a well-formed v2 batch header."""


class OffsetOutOfRangeError(StorageError):
    """A read asked for an offset outside [log_start_offset, log_end_offset]."""


class LogClosedError(StorageError):
    """The log was used after `close()` or `delete()`."""


class LogHandedOverError(LogClosedError):
    """The log was closed because this node gave its unit up (a hand-over, or a unit lost
    to another node): another node serves the partition now, so a write that was waiting on
    it is answered NOT_LEADER_OR_FOLLOWER, not as a storage failure."""


class LogFailedError(StorageError):
    """A write or fsync failed earlier; the log refuses further writes (the broker should
    stop: after a failed fsync the kernel may have dropped the dirty pages, so a retry that
    succeeds would not prove anything)."""


class StorageConfigError(StorageError):
    """A storage configuration value is invalid or conflicts with what is on disk."""


class TopicError(StorageError):
    """Misuse of topic metadata: unknown topic, existing topic, bad partition count."""


class FencedError(StorageError):
    """This node no longer owns the unit (log partition) it tried to write: another node
    took it over, or its topic was deleted. Nothing written after that is ever read back,
    and the write must not be acknowledged."""


class NotOwnedError(StorageError):
    """The log exists in the data dir but this node does not own it (in a cluster another
    node leads that partition or coordinates those groups)."""


class TopicExistsError(TopicError):
    """A topic of that name exists already (perhaps just created through another node)."""

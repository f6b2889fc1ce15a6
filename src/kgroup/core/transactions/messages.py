"""Requests and responses of the transaction APIs as the core sees them (version-free, like
core/messages.py for the group APIs; the wire edge maps each Kafka version onto them)."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.core.errors import ErrorCode
from kgroup.core.messages import OffsetCommitPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

TopicPartitions = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str
    transaction_timeout_ms: int
    # v3+ (KIP-360): the producer's current id and epoch, to bump rather than replace.
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: TopicPartitions
    # The client's transaction.version (KIP-890 part 2): 2 for AddPartitionsToTxn v5+ and
    # for a partition a TV2 producer's Produce adds implicitly; 0 below.
    client_version: int = 0


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    """One error per requested partition, in request order."""

    errors: tuple[tuple[str, int, ErrorCode], ...]


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    # 2: the group added implicitly by a TxnOffsetCommit v5+ (KIP-890 part 2).
    client_version: int = 0


@dataclass(frozen=True, slots=True)
class TxnResponse:
    """The answer of AddOffsetsToTxn (and of anything else that only has an error)."""

    error: ErrorCode


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    # 2 for EndTxn v5+ (KIP-890 part 2): the epoch is bumped on every commit and abort.
    client_version: int = 0


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnMarkers:
    """Work for the broker: write the end of a transaction (commit or abort) into every
    partition it touched and to the coordinators of the groups whose offsets it commits,
    then tell the coordinator (`MarkersWritten`). Written only once the PrepareCommit or
    PrepareAbort behind it is durable; written again after a restart until complete."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: TopicPartitions
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MarkersWritten:
    """Every marker of a transaction is durable: the coordinator completes it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    """TxnOffsetCommit: offsets a transaction commits for a group, fenced by the group
    (KIP-447: generation, member id, instance id; v0-v2 carry none of them)."""

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[OffsetCommitPartition, ...]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    # The TxnOffsetCommit version: from v6 (KIP-1319) a stale member epoch is
    # STALE_MEMBER_EPOCH and a group that does not exist GROUP_ID_NOT_FOUND.
    api_version: int = 0


@dataclass(frozen=True, slots=True)
class TxnOffsetsMarker:
    """The end of a producer's transaction at a group coordinator (its pending offsets)."""

    producer_id: int
    producer_epoch: int
    commit: bool
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DescribedTxn:
    transactional_id: str
    error: ErrorCode
    state: str = ""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 0
    start_ms: int = -1
    partitions: TopicPartitions = ()
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    states: tuple[str, ...] = ()
    producer_ids: tuple[int, ...] = ()
    # v1: only transactions running longer than this (-1: no filter).
    min_duration_ms: int = -1


@dataclass(frozen=True, slots=True)
class ListedTxn:
    transactional_id: str
    producer_id: int
    state: str

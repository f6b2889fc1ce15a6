"""Records of the group-metadata log (our `__consumer_offsets`).

Every durable change to groups or offsets is one of these. A record is a key and a value; a
value of None is a tombstone that deletes the key. `replay` (coordinator.py) applies them,
both live and when a coordinator loads a log after a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kgroup.core.transactions.txn_state import TxnState


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    # Set only by OffsetCommit v1 clients that asked for a retention; None uses the
    # broker's retention rule (KIP-211).
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetCommitValue | None


@dataclass(frozen=True, slots=True)
class ClassicMemberValue:
    """One member as persisted in classic group metadata."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    # The metadata of the group's chosen protocol for this member, and its assignment.
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class ClassicGroupValue:
    """A classic group at the end of a rebalance (or empty), as persisted."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[ClassicMemberValue, ...]


@dataclass(frozen=True, slots=True)
class ClassicGroupRecord:
    group_id: str
    value: ClassicGroupValue | None


# ---- consumer groups (KIP-848) ----------------------------------------------------------
# Assignments are keyed by topic id (as a string) and hold sorted partition tuples:
#   ((topic_id, (p0, p1, ...)), ...) sorted by topic id.
Partitions = tuple[tuple[str, tuple[int, ...]], ...]
# (topic id, partition, epoch), sorted: the epoch at which each partition was assigned (KIP-1251).
AssignmentEpochs = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpochRecord:
    """The group epoch and the metadata of its subscribed topics at that epoch.

    An epoch of None deletes the whole group. `subscribed` is ((topic name, topic id,
    partition count), ...) sorted: a change to it is what bumps the epoch when topics change.
    """

    group_id: str
    epoch: int | None
    subscribed: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerMemberValue:
    """What a member asked for: its subscription and how it runs."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int
    # Set for a member that still speaks the classic protocol inside a consumer group
    # (online migration): its JoinGroup protocols and session timeout.
    classic_protocols: tuple[tuple[str, bytes], ...] | None = None
    classic_session_timeout_ms: int = -1

    @property
    def is_classic(self) -> bool:
        return self.classic_protocols is not None


@dataclass(frozen=True, slots=True)
class ConsumerMemberRecord:
    group_id: str
    member_id: str
    value: ConsumerMemberValue | None


@dataclass(frozen=True, slots=True)
class ConsumerTargetRecord:
    """One member's target assignment (None removes it)."""

    group_id: str
    member_id: str
    partitions: Partitions | None


@dataclass(frozen=True, slots=True)
class ConsumerTargetEpochRecord:
    """The epoch of the group's target assignment (None: removed with the group), and when
    the assignor computed it (KIP-1263's assignment timestamp; 0: not computed by the
    assignor, so the next one may run at once)."""

    group_id: str
    epoch: int | None
    timestamp_ms: int = 0


class MemberState(Enum):
    """Where a consumer-group member stands in reconciling (consumer_group.py); the value is
    what the log holds."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(frozen=True, slots=True)
class ConsumerCurrentValue:
    """Where a member stands in reconciling towards its target.

    `assignment_epochs` (KIP-1251, assignment_epochs.py) holds (topic id, partition, epoch)
    for every partition assigned or pending revocation: the member epoch at which the member
    was given it. None is a record written before we kept them: every partition then counts
    as assigned at the member's epoch, as Kafka reads such a record."""

    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Partitions
    pending_revocation: Partitions
    assignment_epochs: AssignmentEpochs | None = None


@dataclass(frozen=True, slots=True)
class ConsumerCurrentRecord:
    group_id: str
    member_id: str
    value: ConsumerCurrentValue | None


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """What a subscribed regular expression matched when the group last resolved it: the
    topic names (sorted), the version of the broker's topics it was resolved against (see
    `ShardState.topics_version`) and when (Kafka 4.4's ResolvedRegularExpression)."""

    topics: tuple[str, ...]
    version: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerRegexRecord:
    """A group's resolved regular expression (None: no member subscribes with it any more),
    Kafka 4.4's ConsumerGroupRegularExpression record."""

    group_id: str
    regex: str
    value: ResolvedRegex | None


ConsumerRecord = (ConsumerGroupEpochRecord | ConsumerMemberRecord | ConsumerTargetRecord
                  | ConsumerTargetEpochRecord | ConsumerCurrentRecord | ConsumerRegexRecord)


# ---- transactions (KIP-98, KIP-447) -------------------------------------------------------

TopicPartitions = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TxnValue:
    """A transactional id at its coordinator (Kafka's TransactionMetadata, as persisted).

    `last_producer_epoch` lets a producer that retries InitProducerId after a lost answer
    get the epoch it was given (KIP-360); `previous_producer_id` does the same after the id
    rotated on an exhausted epoch. `partitions` and `groups` are what the transaction
    touched (sorted): markers go to each partition, and to the coordinator of each group
    whose offsets it commits. `start_ms` is -1 when no transaction is in flight.

    `client_version` is the transaction.version of the request that last moved it (Kafka's
    ClientTransactionVersion): 2 means every EndTxn bumps the epoch (KIP-890 part 2), which
    is how a retried EndTxn is told from the next one. `next_producer_id` is the id an
    exhausted epoch rotates to once the ending transaction's markers are written (-1: none).
    """

    producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    previous_producer_id: int
    timeout_ms: int
    state: TxnState
    partitions: TopicPartitions
    groups: tuple[str, ...]
    start_ms: int
    update_ms: int
    client_version: int = 0
    next_producer_id: int = -1


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """A transactional id's state (None: expired, gone)."""

    transactional_id: str
    value: TxnValue | None


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRecord:
    """An offset a transaction commits (TxnOffsetCommit): pending until its producer's
    marker commits it, dropped if the marker aborts."""

    group_id: str
    topic: str
    partition: int
    producer_id: int
    value: OffsetCommitValue


@dataclass(frozen=True, slots=True)
class TxnOffsetMarkerRecord:
    """The end of a producer's transaction, for the pending offsets it holds in this shard."""

    producer_id: int
    commit: bool


TxnRecordKind = TxnRecord | TxnOffsetCommitRecord | TxnOffsetMarkerRecord


# ---- group configs (KIP-848) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupConfigRecord:
    """A group's dynamic configs (group_configs.py): ((name, value), ...) sorted by name.

    None deletes them all. Independent of the group's own records: configs may be set
    before a group exists and outlive its deletion, as in Kafka.
    """

    group_id: str
    configs: tuple[tuple[str, str], ...] | None


# ---- share groups (KIP-932) ---------------------------------------------------------------
# A share group's membership and assignment have the consumer group's shape (epoch and
# subscribed topics, members, target assignment and its epoch, each member's current
# assignment) but no reconciliation: a partition may be assigned to several members at once.


@dataclass(frozen=True, slots=True)
class ShareGroupEpochRecord:
    """The share group's epoch and subscribed topics' metadata; epoch None deletes the group."""

    group_id: str
    epoch: int | None
    subscribed: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ShareMemberValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareMemberRecord:
    group_id: str
    member_id: str
    value: ShareMemberValue | None


@dataclass(frozen=True, slots=True)
class ShareTargetRecord:
    """One member's target assignment (None removes it)."""

    group_id: str
    member_id: str
    partitions: Partitions | None


@dataclass(frozen=True, slots=True)
class ShareTargetEpochRecord:
    group_id: str
    epoch: int | None
    timestamp_ms: int = 0                 # as ConsumerTargetEpochRecord's


@dataclass(frozen=True, slots=True)
class ShareCurrentValue:
    """The assignment a member was last given, and at which epoch."""

    member_epoch: int
    previous_member_epoch: int
    assigned: Partitions


@dataclass(frozen=True, slots=True)
class ShareCurrentRecord:
    group_id: str
    member_id: str
    value: ShareCurrentValue | None


@dataclass(frozen=True, slots=True)
class ShareStateBatch:
    """Offsets first..last of a share partition's window, all in one state (share_partition
    .RecordState's value) and delivered `delivery_count` times."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateValue:
    """A share partition's durable state: where its window starts and what is in it.
    `state_epoch` moves when the state is reset (AlterShareGroupOffsets), which fences
    writes of the partition's old in-memory state. `leader_epoch` is the newest leader epoch
    of the topic partition that wrote it (-1: none given), which fences a stale leader's
    writes (FENCED_LEADER_EPOCH), as Kafka's share coordinator keeps it."""

    state_epoch: int
    start_offset: int
    batches: tuple[ShareStateBatch, ...] = ()
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """The state of one share partition (group, topic id, partition); None deletes it."""

    group_id: str
    topic_id: str
    partition: int
    value: ShareStateValue | None


@dataclass(frozen=True, slots=True)
class InitializedTopic:
    """The partitions of a topic whose share state a share group has initialized: only they
    are assignable (a topic that grew has its new partitions initialized after), and they
    stay initialized while no member subscribes to the topic (Kafka 4.4's
    ShareGroupStatePartitionMetadata, its initialized topics)."""

    name: str
    partitions: frozenset[int]
    # How many partitions from 0 on are initialized (every heartbeat asks `covers`).
    prefix: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        prefix = 0
        while prefix in self.partitions:
            prefix += 1
        object.__setattr__(self, "prefix", prefix)

    def covers(self, count: int) -> bool:
        """Whether every partition of a topic of `count` partitions is initialized."""
        return self.prefix >= count


@dataclass(frozen=True, slots=True)
class ShareInitRecord:
    """One topic a share group has initialized (None: no longer, its state deleted)."""

    group_id: str
    topic_id: str
    value: InitializedTopic | None


ShareRecord = (ShareGroupEpochRecord | ShareMemberRecord | ShareTargetRecord | ShareTargetEpochRecord
               | ShareCurrentRecord | ShareInitRecord)


Record = (OffsetCommitRecord | ClassicGroupRecord | ConsumerRecord | TxnRecordKind | GroupConfigRecord
          | ShareRecord | ShareStateRecord)

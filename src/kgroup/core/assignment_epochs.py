"""Assignment epochs of consumer-group members (KIP-1251): since when each partition is held.

How this works: a consumer-protocol member's current assignment (`ConsumerCurrentValue`)
keeps, for every partition assigned to it or pending revocation, the member epoch at which
it was given the partition. A reconciliation step (`stamp`) keeps the epoch of a partition
the member already had, gives a newly assigned one the epoch the step moves the member to,
keeps a revoked one's while it is pending revocation and drops it with the partition. A
static member stepping out for a restart has them all reset to 0 (`at_epoch`), so its next
incarnation may commit for what it still holds, as in Kafka. They live in the group log
with the rest of the value; a record written before we kept them reads as every partition
assigned at the record's member epoch (Kafka reads such a record the same way).

OffsetCommit and TxnOffsetCommit (every version) fence a member's commit with them
(`check_commit`, Kafka 4.4's ConsumerGroup.validateOffsetCommit): a commit sent with the
member's epoch passes; one ahead of it fails; one behind it passes only if every partition
it names is held by the member since an epoch no later than the one sent:

    assignment epoch <= client epoch <= member epoch

So a commit that crossed an epoch bump in flight still lands, while one for a partition
the member did not hold at the epoch it names (not yet given, or another member's) does
not. A failure fails the whole request: STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a
member that speaks the classic protocol inside the group. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import AssignmentEpochs, ConsumerCurrentValue


def epochs_of(value: ConsumerCurrentValue) -> dict[tuple[str, int], int]:
    """(topic id, partition) -> assignment epoch, for each partition `value` holds."""
    if value.assignment_epochs is not None:
        return {(t, p): e for t, p, e in value.assignment_epochs}
    default = max(value.member_epoch, 0)   # a record from before KIP-1251, as Kafka reads it
    return {(t, p): default for part in (value.assigned, value.pending_revocation) for t, ps in part for p in ps}


def _with(value: ConsumerCurrentValue, epochs: AssignmentEpochs) -> ConsumerCurrentValue:
    return ConsumerCurrentValue(value.member_epoch, value.previous_member_epoch, value.state, value.assigned,
                                value.pending_revocation, epochs)


def stamp(value: ConsumerCurrentValue, before: ConsumerCurrentValue) -> ConsumerCurrentValue:
    """`value` (a step from `before`) with its assignment epochs: a partition `before`
    had assigned keeps its epoch, as does one still pending revocation; any other assigned
    partition is new and takes `value`'s member epoch."""
    old = epochs_of(before)
    held = {(t, p) for t, ps in before.assigned for p in ps}
    new_epoch = value.member_epoch
    out = [(t, p, old[(t, p)] if (t, p) in held else new_epoch) for t, ps in value.assigned for p in ps]
    out += [(t, p, old.get((t, p), new_epoch)) for t, ps in value.pending_revocation for p in ps]
    out.sort()
    return _with(value, tuple(out))


def at_epoch(value: ConsumerCurrentValue, epoch: int) -> ConsumerCurrentValue:
    """`value` with every partition it holds assigned at `epoch`."""
    out = [(t, p, epoch) for part in (value.assigned, value.pending_revocation) for t, ps in part for p in ps]
    out.sort()
    return _with(value, tuple(out))


def check_commit(value: ConsumerCurrentValue, client_epoch: int, partitions: Iterable[tuple[str, str | None, int]],
                 classic: bool) -> None:
    """Fence a commit sent with `client_epoch` by a member at `value` (see the module doc).
    `partitions` are (topic name, its id or None if there is no such topic, partition)."""
    code = ErrorCode.ILLEGAL_GENERATION if classic else ErrorCode.STALE_MEMBER_EPOCH
    what = "generation id" if classic else "member epoch"
    member_epoch = value.member_epoch
    if client_epoch == member_epoch:
        return
    if client_epoch > member_epoch:
        raise GroupError(code, f"Received {what} {client_epoch} is newer than current member epoch {member_epoch}.")
    epochs = epochs_of(value)
    for name, topic_id, partition in partitions:
        assigned_at = epochs.get((topic_id, partition)) if topic_id is not None else None
        if assigned_at is None:
            raise GroupError(code, f"Partition {name}-{partition} is not assigned or pending revocation for member.")
        if client_epoch < assigned_at:
            raise GroupError(code, f"Received {what} {client_epoch} is older than assignment epoch {assigned_at} "
                                   f"for partition {name}-{partition}.")

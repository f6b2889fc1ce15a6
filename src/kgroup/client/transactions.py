"""The producer's idempotence and transactions (KIP-98, KIP-447), as the Java client does them.

How this works: an idempotent producer gets a producer id and epoch (InitProducerId) and
numbers the records of each partition from 0; the producer sends at most one batch per
partition at a time and resends a failed batch as it was, so a retry after a lost answer is
recognised by the broker and stored once. A transactional producer (``transactional.id``)
gets its id from the transaction coordinator (found with FindCoordinator key type 1), which
fences any older producer of the same id. A transaction then goes:

    begin_transaction                         (local)
    send ...                                  AddPartitionsToTxn for each new partition,
                                              before its first batch is sent
    send_offsets_to_transaction(offsets, gm)  AddOffsetsToTxn, then TxnOffsetCommit to the
                                              group's coordinator, fenced by the group
                                              metadata (generation, member id, instance id)
    commit_transaction / abort_transaction    flush, then EndTxn

Requests to the coordinator follow it while it moves or loads (``ClusterClient.call_coordinator``)
and are sent again while it answers CONCURRENT_TRANSACTIONS (the previous transaction's
markers are still being written). A fenced producer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH)
cannot go on: every later call raises ``ProducerFenced``. A batch that failed otherwise
inside a transaction makes it abortable: ``commit_transaction`` raises and only
``abort_transaction`` is allowed.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kgroup.error_codes import ErrorCode
from kgroup.wire.api_keys import ApiKey

from .cluster import (ClusterClient, MovedError, Recovery, first_partition_error, request_fields,
                      transaction_key)
from .errors import BrokerError, KafkaClientError
from .records import OffsetAndMetadata, TopicPartition

E = ErrorCode
# Answers that mean "the coordinator is busy with this id; ask again".
_BUSY = frozenset({E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS})
FENCING = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})


class ProducerFenced(KafkaClientError):
    """Another producer with the same transactional id took over (or this one timed out)."""

    hint = "this producer cannot go on; close it (a newer instance owns the transactional id)"


class TransactionError(KafkaClientError):
    """A transaction cannot be committed, or a call came at the wrong time."""

    hint = "abort the transaction and start a new one"


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """What ``send_offsets_to_transaction`` needs of a consumer (``Consumer.group_metadata``):
    the group fences the commit by these (KIP-447)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class ProducerTxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    ABORTABLE = "abortable error"
    FENCED = "fenced"


class TransactionManager:
    """Producer id, epoch, sequence numbers and the transaction in progress."""

    def __init__(self, cluster: ClusterClient, transactional_id: str | None, timeout_ms: int,
                 request_timeout_s: float) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.request_timeout_s = request_timeout_s
        self.producer_id = -1
        self.epoch = -1
        self.state = ProducerTxnState.UNINITIALIZED
        self.error: BaseException | None = None
        self._sequences: dict[TopicPartition, int] = {}
        self.added: set[TopicPartition] = set()
        self._groups: set[str] = set()

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None

    # ---- state checks ---------------------------------------------------------------------

    def check_fenced(self) -> None:
        if self.state is ProducerTxnState.FENCED:
            raise ProducerFenced(f"producer of transactional id {self.transactional_id!r} was fenced")

    def require(self, *states: ProducerTxnState, action: str) -> None:
        self.check_fenced()
        if self.state not in states:
            raise TransactionError(f"cannot {action}: the producer is {self.state.value}")

    def failed(self, exc: BaseException) -> None:
        """A batch of the transaction failed: fenced, or only an abort can follow."""
        if isinstance(exc, BrokerError) and exc.code in FENCING:
            self.state = ProducerTxnState.FENCED
        elif self.state is ProducerTxnState.IN_TRANSACTION:
            self.state = ProducerTxnState.ABORTABLE
        self.error = exc

    # ---- sequence numbers -----------------------------------------------------------------

    def next_sequence(self, tp: TopicPartition, count: int) -> int:
        """The base sequence of a new batch of ``count`` records to ``tp``."""
        base = self._sequences.get(tp, 0)
        self._sequences[tp] = (base + count) & 0x7FFFFFFF
        return base

    # ---- requests -------------------------------------------------------------------------

    async def _coordinator(self, api_key: int, fields: dict[str, Any], error_of: Any, **kw: Any) -> Any:
        """A request to the transaction coordinator, sent again while it is busy."""
        key = transaction_key(self.transactional_id or "")
        retries = self.cluster.retries(self.request_timeout_s)
        while True:
            resp = await self.cluster.call_coordinator(key, api_key, request_fields(**fields),
                                                       error_of=error_of, timeout=retries.remaining(), **kw)
            code = int(error_of(resp) or 0)
            if code in _BUSY:
                delay = retries.next_delay()
                if delay is not None:
                    await self.cluster.sleep(delay)
                    continue
            return resp

    def _raise(self, code: int, what: str) -> None:
        if not code:
            return
        error = BrokerError(code, what)
        if error.code in FENCING:
            self.state = ProducerTxnState.FENCED
            raise ProducerFenced(f"{what}: {error.name}")
        raise error

    async def init(self) -> None:
        """InitProducerId: for the transactional id from its coordinator, else from any broker."""
        if not self.transactional:
            async def attempt() -> Any:
                resp = await self.cluster.request_any(
                    ApiKey.INIT_PRODUCER_ID, request_fields(
                        transactional_id=None, transaction_timeout=self.timeout_ms,
                        producer_id=-1, producer_epoch=-1))
                if int(resp.error_code) == E.COORDINATOR_LOAD_IN_PROGRESS:
                    # A Kafka broker just started has no producer ids yet: ask again, as
                    # Kafka's producer does.
                    raise MovedError(int(resp.error_code), Recovery.RETRY, "init producer id")
                return resp

            resp = await self.cluster.retrying(attempt)
            self._raise(int(resp.error_code), "init producer id")
        else:
            self.check_fenced()
            resp = await self._coordinator(ApiKey.INIT_PRODUCER_ID, dict(
                transactional_id=self.transactional_id, transaction_timeout=self.timeout_ms,
                producer_id=-1, producer_epoch=-1), lambda r: r.error_code)
            self._raise(int(resp.error_code), f"init transactions of {self.transactional_id!r}")
        self.producer_id, self.epoch = int(resp.producer_id), int(resp.producer_epoch)
        self._sequences.clear()
        self.state = ProducerTxnState.READY
        self.error = None

    def begin(self) -> None:
        self.require(ProducerTxnState.READY, action="begin a transaction")
        self.state = ProducerTxnState.IN_TRANSACTION
        self.added.clear()
        self._groups.clear()

    async def add_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn for the partitions not yet in the transaction."""
        new = sorted(set(tps) - self.added)
        if not new:
            return
        self.require(ProducerTxnState.IN_TRANSACTION, action="send in this transaction")
        by_topic: dict[str, list[int]] = {}
        for tp in new:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        resp = await self._coordinator(ApiKey.ADD_PARTITIONS_TO_TXN, dict(
            v3_and_below_transactional_id=self.transactional_id, v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()]),
            _add_partitions_error, max_version=3)   # v4+ is the brokers' batched form
        self._raise(_add_partitions_error(resp), f"add partitions to {self.transactional_id!r}")
        self.added.update(new)

    async def send_offsets(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                           group: GroupMetadata) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator."""
        self.require(ProducerTxnState.IN_TRANSACTION, action="send offsets outside a transaction")
        if group.group_id not in self._groups:
            resp = await self._coordinator(ApiKey.ADD_OFFSETS_TO_TXN, dict(
                transactional_id=self.transactional_id, producer_id=self.producer_id,
                producer_epoch=self.epoch, group_id=group.group_id), lambda r: r.error_code)
            self._raise(int(resp.error_code), f"add offsets of group {group.group_id!r}")
            self._groups.add(group.group_id)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, value in sorted(offsets.items()):
            offset, meta = (value.offset, value.metadata) if isinstance(value, OffsetAndMetadata) else (int(value), "")
            by_topic.setdefault(tp[0], []).append({"partition_index": tp[1], "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": meta})
        resp = await self.cluster.call_coordinator(group.group_id, ApiKey.TXN_OFFSET_COMMIT, request_fields(
            transactional_id=self.transactional_id, group_id=group.group_id, producer_id=self.producer_id,
            producer_epoch=self.epoch, generation_id=group.generation_id, member_id=group.member_id,
            group_instance_id=group.group_instance_id,
            topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()]),
            error_of=first_partition_error, timeout=self.request_timeout_s)
        code = first_partition_error(resp)
        if code and ErrorCode(code) not in FENCING:
            self.state = ProducerTxnState.ABORTABLE
        self._raise(code, f"commit offsets of group {group.group_id!r} in the transaction")

    async def end(self, commit: bool) -> None:
        """EndTxn (if the transaction touched anything), then ready for the next one."""
        if self.added or self._groups:
            resp = await self._coordinator(ApiKey.END_TXN, dict(
                transactional_id=self.transactional_id, producer_id=self.producer_id,
                producer_epoch=self.epoch, committed=commit), lambda r: r.error_code)
            self._raise(int(resp.error_code), f"{'commit' if commit else 'abort'} transaction "
                                              f"of {self.transactional_id!r}")
        self.state = ProducerTxnState.READY
        self.error = None
        self.added.clear()
        self._groups.clear()


def _add_partitions_error(resp: Any) -> int:
    """The error that made an AddPartitionsToTxn fail (not the OPERATION_NOT_ATTEMPTED of the
    partitions that were fine)."""
    codes = [int(p.partition_error_code) for t in resp.results_by_topic_v3_and_below
             for p in t.results_by_partition if int(p.partition_error_code)]
    return next((c for c in codes if c != E.OPERATION_NOT_ATTEMPTED), codes[0] if codes else 0)


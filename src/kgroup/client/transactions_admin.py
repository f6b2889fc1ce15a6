"""Admin operations on transactions: ListTransactions, DescribeTransactions, DescribeProducers
(what `kafka-transactions.sh list | describe | describe-producers` does).

ListTransactions is asked of every broker (each lists the transactional ids it
coordinates); DescribeTransactions goes to each id's transaction coordinator (FindCoordinator
key type 1); DescribeProducers to each partition's leader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kgroup.wire.api_keys import ApiKey

from .cluster import BrokerInfo, ClusterClient, request_fields, transaction_key
from .errors import BrokerError


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int                                   # -1: no transaction in flight
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """One producer as a partition knows it."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int                           # -1: no transaction open here


class TransactionAdmin:
    """Transaction admin over a ``ClusterClient`` (``AdminClient.transactions``)."""

    def __init__(self, cluster: ClusterClient) -> None:
        self.cluster = cluster

    async def list(self, states: Sequence[str] = (), producer_ids: Sequence[int] = (),
                   min_duration_ms: int = -1) -> list[TransactionListing]:
        """Transactional ids on every broker, filtered by state, producer id and (when >= 0)
        how long their transaction has been running."""
        md = await self.cluster.metadata(topics=())
        found: dict[str, TransactionListing] = {}
        for broker in md.brokers or (BrokerInfo(-1, *self.cluster.bootstrap[0]),):
            conn = await self.cluster.connection(broker.host, broker.port)
            resp = await self.cluster.request(conn, ApiKey.LIST_TRANSACTIONS, request_fields(
                state_filters=list(states), producer_id_filters=list(producer_ids),
                duration_filter=min_duration_ms))
            if int(resp.error_code):
                raise BrokerError(int(resp.error_code), f"list transactions on {conn.address}")
            for t in resp.transaction_states:
                found[t.transactional_id] = TransactionListing(t.transactional_id, int(t.producer_id),
                                                               t.transaction_state)
        return sorted(found.values(), key=lambda t: t.transactional_id)

    async def describe(self, transactional_ids: Iterable[str]) -> list[TransactionDescription]:
        """Each id's state, producer and partitions, from its coordinator."""
        out = []
        for tid in transactional_ids:
            resp = await self.cluster.call_coordinator(
                transaction_key(tid), ApiKey.DESCRIBE_TRANSACTIONS, request_fields(transactional_ids=[tid]),
                error_of=lambda r: r.transaction_states[0].error_code)
            (s,) = resp.transaction_states
            if int(s.error_code):
                raise BrokerError(int(s.error_code), f"describe transaction {tid!r}")
            start = s.transaction_start_time
            out.append(TransactionDescription(
                tid, s.transaction_state, int(s.producer_id), int(s.producer_epoch),
                int(s.transaction_timeout.total_seconds() * 1000),
                # The broker sends the epoch (0) when no transaction is in flight.
                int(start.timestamp() * 1000) if start is not None and start.timestamp() > 0 else -1,
                tuple((t.topic, int(p)) for t in s.topics for p in t.partitions)))
        return out

    async def producers(self, topic: str, partitions: Iterable[int]) -> dict[int, list[ProducerState]]:
        """The producers each partition knows (DescribeProducers, to each leader)."""
        out: dict[int, list[ProducerState]] = {}
        for leader, ps in (await self.cluster.leaders(topic, partitions)).items():
            conn = await self.cluster.node(leader)
            resp = await self.cluster.request(conn, ApiKey.DESCRIBE_PRODUCERS, request_fields(
                topics=[{"name": topic, "partition_indexes": ps}]))
            for t in resp.topics:
                for p in t.partitions:
                    if int(p.error_code):
                        raise BrokerError(int(p.error_code), f"describe producers of {topic}-{p.partition_index}")
                    out[int(p.partition_index)] = [
                        ProducerState(int(a.producer_id), int(a.producer_epoch), int(a.last_sequence),
                                      int(a.last_timestamp), int(a.coordinator_epoch),
                                      int(a.current_txn_start_offset))
                        for a in p.active_producers]
        return out

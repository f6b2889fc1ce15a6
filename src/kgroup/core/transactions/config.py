"""Transaction coordinator settings, named and defaulted as Apache Kafka's broker names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    # transaction.max.timeout.ms: a producer asking for a longer transaction.timeout.ms gets
    # INVALID_TRANSACTION_TIMEOUT.
    max_timeout_ms: int = 900_000
    # transactional.id.expiration.ms: an idle transactional id (no transaction in flight) is
    # forgotten after this long.
    id_expiration_ms: int = 604_800_000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    id_expiration_check_interval_ms: int = 3_600_000
    # producer.id.expiration.ms: a partition forgets the sequence numbers of a producer
    # idle this long (the broker applies it; checked with log retention).
    producer_id_expiration_ms: int = 86_400_000

    def __post_init__(self) -> None:
        if self.max_timeout_ms < 1:
            raise ValueError("transaction.max.timeout.ms must be positive")
        if self.id_expiration_ms < 1 or self.id_expiration_check_interval_ms < 1:
            raise ValueError("transactional id expiration settings must be positive")
        if self.producer_id_expiration_ms < 1:
            raise ValueError("producer.id.expiration.ms must be positive")

"""The share-group dead-letter queue (KIP-1191), as Kafka 4.4 writes it.

How this works: a share partition (core/share_partition.py) notes every offset it archives
because a member REJECTed it or because it was delivered `share.delivery.count.limit` times
(`DeadLetter`s). Once the state that archived them is written, the share fetch service hands
them here with the group's configs. If the group names a dead-letter topic
(`errors.deadletterqueue.topic.name`), one record per offset is appended to it:

- the topic's name must start with the broker's prefix (`dlq_topic_name_prefix`, Kafka's
  `errors.deadletterqueue.topic.name.prefix`, default `dlq.`; both broker settings may also be
  changed at run time over AlterConfigs, as on Kafka), and the topic must carry the
  topic config `errors.deadletterqueue.group.enable=true`;
- a missing topic is created (one partition per `default_partitions`, with that config set)
  only if `dlq_auto_create_topics` (Kafka's `errors.deadletterqueue.auto.create.topics.enable`,
  default false) is on;
- the record: no key; the original record's value if the group's
  `errors.deadletterqueue.copy.record.enable` is true, else none; the time written; headers
  `__dlq.errors.topic`, `__dlq.errors.partition`, `__dlq.errors.offset`, `__dlq.errors.group`,
  `__dlq.errors.delivery.count` (decimal text) and `__dlq.errors.message` (why).

A dead letter that cannot be written (no such topic, a wrong prefix, the partition led
elsewhere, a storage error) is logged and dropped: the offset stays archived, as in Kafka.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Sequence

from kgroup.broker.config import BrokerConfig
from kgroup.core.share_partition import DeadLetter
from kgroup.storage import DataDir, StorageError
from kgroup.storage.errors import TopicError
from kgroup.wire.record_batch import build_batch, decode_records, split_batches

log = logging.getLogger(__name__)

GROUP_ENABLE = "errors.deadletterqueue.group.enable"
PREFIX = "errors.deadletterqueue.topic.name.prefix"
AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
_READ_BYTES = 1 << 20


class DeadLetterWriter:
    """Appends the dead letters of this node's share partitions to their groups' DLQ topics."""

    def __init__(self, data: DataDir, config: BrokerConfig | None = None,
                 ring: Callable[[tuple[str, int]], None] | None = None,
                 dynamic: Callable[[str], tuple[str, int] | None] | None = None) -> None:
        self.data = data
        self.config = config or BrokerConfig()
        self.ring = ring
        # Both settings are dynamic on Kafka (cluster-wide): a value set over AlterConfigs
        # (DynamicBrokerConfigs.value_of) wins over the TOML file's.
        self.dynamic = dynamic
        self.written = 0
        self.dropped = 0

    def _setting(self, kafka_name: str, static: str) -> str:
        found = self.dynamic(kafka_name) if self.dynamic is not None else None
        return static if found is None else found[0]

    def _topic(self, group_id: str, name: str) -> int | None:
        """The DLQ topic's partition count, created if allowed; None (logged) if unusable."""
        prefix = self._setting(PREFIX, self.config.dlq_topic_name_prefix)
        if not name.startswith(prefix):
            log.warning("share group %s: dead-letter topic %s does not start with %r; dead letters dropped",
                        group_id, name, prefix)
            return None
        meta = self.data.topics().get(name)
        if meta is None:
            auto = self._setting(AUTO_CREATE, "true" if self.config.dlq_auto_create_topics else "false")
            if auto.strip().lower() != "true":
                log.warning("share group %s: dead-letter topic %s does not exist; dead letters dropped",
                            group_id, name)
                return None
            try:
                meta = self.data.create_topic(name, self.config.default_partitions, {GROUP_ENABLE: "true"})
            except TopicError:
                meta = self.data.topics().get(name)       # made meanwhile
                if meta is None:
                    return None
        if meta.configs.get(GROUP_ENABLE, "false").lower() != "true":
            log.warning("share group %s: dead-letter topic %s lacks %s=true; dead letters dropped",
                        group_id, name, GROUP_ENABLE)
            return None
        return meta.partitions

    def _values(self, topic: str, partition: int, offsets: Sequence[int]) -> dict[int, bytes | None]:
        """The values of the original records at `offsets` (those still in the log)."""
        wanted, found = set(offsets), {}
        plog = self.data.partition_log(topic, partition)
        at, last = min(wanted), max(wanted)
        while at <= last:
            blob = plog.read(at, _READ_BYTES)
            batches = split_batches(blob) if blob else []
            if not batches:
                break
            for batch in batches:
                for record in decode_records(batch):
                    if record.offset in wanted:
                        found[record.offset] = record.value
                at = max(at, batch.header.base_offset + batch.header.last_offset_delta + 1)
        return found

    def write(self, group_id: str, dlq_topic: str | None, copy_value: bool, topic: str, partition: int,
              letters: Sequence[DeadLetter], now_ms: int | None = None) -> int:
        """Append `letters` (offsets of `topic`-`partition`) to `dlq_topic`; how many were."""
        if not letters or not dlq_topic:
            return 0
        try:
            count = self._topic(group_id, dlq_topic)
            if count is None:
                self.dropped += len(letters)
                return 0
            values = self._values(topic, partition, [d.offset for d in letters]) if copy_value else {}
            now = int(time.time() * 1000) if now_ms is None else now_ms
            target = partition % count
            records = [(None, values.get(d.offset), (
                ("__dlq.errors.topic", topic.encode()), ("__dlq.errors.partition", str(partition).encode()),
                ("__dlq.errors.offset", str(d.offset).encode()), ("__dlq.errors.group", group_id.encode()),
                ("__dlq.errors.delivery.count", str(d.delivery_count).encode()),
                ("__dlq.errors.message", d.reason.value.encode())), now) for d in letters]
            plog = self.data.partition_log(dlq_topic, target)
            if not plog.owned:
                raise TopicError(f"{dlq_topic}-{target} is led by another node")
            plog.append(build_batch(records))
            plog.flush()
        except (StorageError, TopicError) as exc:
            log.warning("share group %s: %d dead letters of %s-%d not written to %s: %s",
                        group_id, len(letters), topic, partition, dlq_topic, exc)
            self.dropped += len(letters)
            return 0
        except Exception:
            log.exception("share group %s: %d dead letters of %s-%d not written to %s",
                          group_id, len(letters), topic, partition, dlq_topic)
            self.dropped += len(letters)
            return 0
        self.written += len(letters)
        if self.ring is not None:
            self.ring((dlq_topic, target))
        return len(letters)

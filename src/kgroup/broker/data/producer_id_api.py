"""InitProducerId for idempotent producers (no transactional id; txn/apis.py: the versions).

Why: kafka-python 3.x, librdkafka and the Java producer enable idempotence by default and
refuse to send without a producer id. Ids come from durably reserved blocks
(storage/producer_ids.py), so a restarted broker never hands out an id it gave before: the
partitions keep each producer's sequence numbers (broker/data/producer_states.py), and a reused
id would collide with an old producer's. v3+ (KIP-360): a producer that sends its current
id and epoch gets the same id with the epoch bumped (a new id once the epoch would pass
32767), and starts its sequences again at 0. A transactional id is the transaction
coordinator's (broker/txn/txn_api.py); asked here, it gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
"""

from __future__ import annotations

from typing import Any, Callable

from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get

TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
MAX_EPOCH = 32767


class ProducerIds:
    """Answers InitProducerId for idempotent producers (see the module docstring)."""

    def __init__(self, next_id: Callable[[], int]) -> None:
        self.next_id = next_id

    def init_producer_id(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        if get(request, "transactional_id", None) is not None:
            return build(cls, throttle_time=0, error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         producer_id=-1, producer_epoch=-1)
        producer_id = int(get(request, "producer_id", -1))
        epoch = int(get(request, "producer_epoch", -1))
        if producer_id >= 0 and 0 <= epoch < MAX_EPOCH - 1:
            return build(cls, throttle_time=0, error_code=0, producer_id=producer_id,
                         producer_epoch=epoch + 1)
        return build(cls, throttle_time=0, error_code=0, producer_id=self.next_id(), producer_epoch=0)

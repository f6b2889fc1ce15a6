"""InitProducerId (api 22), v0–v5: producer ids for idempotent producers, no transactions.

Why: kafka-python 3.x and the Java producer enable idempotence by default and refuse to
send without a producer id. We hand out ids but keep no per-producer sequence state, so
batches are stored as sent (a producer retry after a lost answer may store a duplicate,
which Kafka's sequence check would have dropped).

Ids: an in-memory counter that starts at the current time in milliseconds times 1000, so a
restarted broker does not hand out an id it gave before (unless >1000 ids per ms were
given). v3+ (KIP-360): a producer that sends its current id and epoch gets the same id
with the epoch bumped (a new id once the epoch would pass 32767). A transactional id gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): this broker runs no transaction coordinator.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from kgroup.wire.kio_build import build, get
from kgroup.wire import RequestHeader, response_class

TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
MAX_EPOCH = 32767


class ProducerIds:
    """Allocates producer ids (see the module docstring)."""

    def __init__(self, start: int | None = None) -> None:
        self._next = itertools.count(start if start is not None else int(time.time() * 1000) * 1000)

    def init_producer_id(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(22, header.api_version)
        if get(request, "transactional_id", None) is not None:
            return build(cls, throttle_time=0, error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         producer_id=-1, producer_epoch=-1)
        producer_id = int(get(request, "producer_id", -1))
        epoch = int(get(request, "producer_epoch", -1))
        if producer_id >= 0 and 0 <= epoch < MAX_EPOCH:
            return build(cls, throttle_time=0, error_code=0, producer_id=producer_id,
                         producer_epoch=epoch + 1)
        return build(cls, throttle_time=0, error_code=0, producer_id=next(self._next),
                     producer_epoch=0)

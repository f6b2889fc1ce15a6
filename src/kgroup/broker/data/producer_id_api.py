"""InitProducerId for idempotent producers (no transactional id; txn/apis.py: the versions).

Why: kafka-python 3.x, librdkafka and the Java producer enable idempotence by default and
refuse to send without a producer id. Ids come from durably reserved blocks
(storage/producer_ids.py), so a restarted broker never hands out an id it gave before: the
partitions keep each producer's sequence numbers (broker/data/producer_states.py), and a reused
id would collide with an old producer's.

Kafka's rule, kept exactly: without a transactional id every request gets a new producer id
at epoch 0, whatever producer id and epoch it carries. Nothing on the broker knows which
client an idempotent id belongs to, so the id and epoch a request names prove nothing: a
client that sends 0/0 rather than -1/-1 (@platformatic/kafka does) must not be handed
producer 0 with a bumped epoch, or two such clients would share (id, epoch) and each one's
first batches would look like retries of the other's -- acknowledged and never stored. An
idempotent producer bumps its own epoch (KIP-360) without asking the broker. Only the
pair's shape is checked, as Kafka checks it for every InitProducerId: one of the two at -1
and the other not is INVALID_REQUEST (42). A transactional id is the transaction
coordinator's (broker/txn/txn_api.py); asked here, it gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
"""

from __future__ import annotations

from typing import Any, Callable

from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get

TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
INVALID_REQUEST = 42


def half_named(producer_id: int, epoch: int) -> bool:
    """A producer id without an epoch or an epoch without an id: Kafka refuses the request."""
    return (producer_id == -1) != (epoch == -1)


class ProducerIds:
    """Answers InitProducerId for idempotent producers (see the module docstring)."""

    def __init__(self, next_id: Callable[[], int]) -> None:
        self.next_id = next_id

    def init_producer_id(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        error = 0
        if get(request, "transactional_id", None) is not None:
            error = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif half_named(int(get(request, "producer_id", -1)), int(get(request, "producer_epoch", -1))):
            error = INVALID_REQUEST
        if error:
            return build(cls, throttle_time=0, error_code=error, producer_id=-1, producer_epoch=-1)
        return build(cls, throttle_time=0, error_code=0, producer_id=self.next_id(), producer_epoch=0)

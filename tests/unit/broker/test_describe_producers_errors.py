"""DescribeProducers' per-partition errors as Kafka 4.4 answers them (its wire check): the
topic named "" is INVALID_TOPIC_EXCEPTION, a partition of a topic that does not exist
UNKNOWN_TOPIC_OR_PARTITION, each with the error's message; one a topic that exists lacks
UNKNOWN_TOPIC_OR_PARTITION without."""

from kgroup.broker.txn.describe_producers_api import describe_producers
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, request_class
from kgroup.wire.kio_build import build, item

from tests.unit.broker.datactx import DataCtx

DESCRIBE_PRODUCERS = 61


def _ask(ctx: DataCtx, topics: dict[str, tuple[int, ...]]) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
    cls = request_class(DESCRIBE_PRODUCERS, 0)
    tcls = item(cls, "topics")
    request = build(cls, topics=tuple(build(tcls, name=n, partition_indexes=ps) for n, ps in topics.items()))
    answer = describe_producers(ctx.dp.ctx, RequestHeader(DESCRIBE_PRODUCERS, 0, 1, "test", True), request)
    return {(t.name, p.partition_index): (p.error_code, p.error_message) for t in answer.topics for p in t.partitions}


def test_the_empty_topic_name_is_an_invalid_topic_and_an_unknown_partition_has_a_message(tmp_path):
    out = _ask(DataCtx(tmp_path), {"": (0, -1), "nowhere": (2,)})
    assert out[("", 0)][0] == out[("", -1)][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert out[("", 0)][1]
    code, message = out[("nowhere", 2)]
    assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and message


def test_a_partition_a_topic_that_exists_lacks_is_unknown_without_a_message(tmp_path):
    ctx = DataCtx(tmp_path)
    ctx.data.create_topic("t", 1)
    out = _ask(ctx, {"t": (0, 5)})
    assert out[("t", 0)] == (ErrorCode.NONE, None)
    assert out[("t", 5)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)

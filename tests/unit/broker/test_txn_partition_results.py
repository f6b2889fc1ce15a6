"""AddPartitionsToTxn results shaped as Kafka 4.4 shapes them (broker/txn_api.py)."""

from __future__ import annotations

from kgroup.broker.txn.txn_api import TxnApi
from kgroup.core.errors import ErrorCode as E
from kgroup.wire import request_class, response_class
from kgroup.wire.kio_build import build, item


def topics(*named):
    cls = item(request_class(24, 3), "v3_and_below_topics")
    return tuple(build(cls, name=n, partitions=tuple(ps)) for n, ps in named)


def shape(errors, asked):
    cls = response_class(24, 3)
    out = TxnApi._topic_results(cls, errors, "results_by_topic_v3_and_below", asked)
    return [(t.name, [(p.partition_index, p.partition_error_code) for p in t.results_by_partition]) for t in out]


def test_a_request_refused_before_the_coordinator_answers_each_partition_once_and_no_empty_topic():
    asked = topics(("", (1, 1)), ("t", (0,)), ("empty", ()))
    errors = [("", 1, E.UNKNOWN_TOPIC_OR_PARTITION), ("", 1, E.UNKNOWN_TOPIC_OR_PARTITION),
              ("t", 0, E.OPERATION_NOT_ATTEMPTED)]
    assert shape(errors, asked) == [("", [(1, E.UNKNOWN_TOPIC_OR_PARTITION)]), ("t", [(0, E.OPERATION_NOT_ATTEMPTED)])]


def test_the_coordinators_answer_names_every_topic_asked_for():
    asked = topics(("t", (0,)), ("empty", ()))
    errors = [("t", 0, E.INVALID_PRODUCER_ID_MAPPING)]
    assert shape(errors, asked) == [("t", [(0, E.INVALID_PRODUCER_ID_MAPPING)]), ("empty", [])]


def test_a_verification_is_answered_by_partition_with_no_empty_topic():
    cls = response_class(24, 4)
    result_cls = item(cls, "results_by_transaction")
    asked_cls = item(item(request_class(24, 4), "transactions"), "topics")
    asked = (build(asked_cls, name="t", partitions=(0,)), build(asked_cls, name="empty", partitions=()))
    errors = [("t", 0, E.NONE)]
    out = TxnApi._topic_results(result_cls, errors, "topic_results", asked, keyed=True)
    assert [(t.name, [p.partition_index for p in t.results_by_partition]) for t in out] == [("t", [0])]
    out = TxnApi._topic_results(result_cls, errors, "topic_results", asked)
    assert [t.name for t in out] == ["t", "empty"]

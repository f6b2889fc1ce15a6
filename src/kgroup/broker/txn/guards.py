"""Guards of the producer and transaction APIs (txn/apis.py lists which guards which API):
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeProducers, DescribeTransactions, ListTransactions, and WriteTxnMarkers (sent only
between brokers, not served).
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.static.primitive import TZAware

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.security.authorization import (GROUP, TOPIC, TRANSACTIONAL_ID, Access, Admission, Refused,
    TopicList, admit_items, admit_topics, all_partitions_refused, cluster_guard, per_topic, plain_refusal,
    whole)
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item
from kgroup.wire.kio_build import replace_fields as replaced

E = ErrorCode
_EPOCH = TZAware.parse(datetime.datetime.fromtimestamp(0, datetime.timezone.utc))
GROUP_FAILED = E.GROUP_AUTHORIZATION_FAILED
TOPIC_FAILED = E.TOPIC_AUTHORIZATION_FAILED

TXN_FAILED = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def init_producer_id(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    txn = get(request, "transactional_id")
    if txn is not None:
        if access.allowed(Op.WRITE, TRANSACTIONAL_ID, txn):
            return Admission(request)
        return plain_refusal(header, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1)
    if access.cluster(Op.IDEMPOTENT_WRITE) or access.allowed_on_some(Op.WRITE, TOPIC):
        return Admission(request)
    return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1)


# -- transactions (KIP-98, KIP-447, KIP-890 part 1) ---------------------------------------------

_ADD_PARTITIONS = TopicList(request="v3_and_below_topics", response="results_by_topic_v3_and_below",
                            response_partitions="results_by_partition", error_field="partition_error_code")


def add_partitions_to_txn(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """v0-v3 (producers): WRITE on the transactional id, then WRITE on every topic — all or
    nothing: with one topic refused, the others answer OPERATION_NOT_ATTEMPTED. v4+ (brokers
    verifying for each other): CLUSTER_ACTION on the cluster."""
    if header.api_version >= 4:
        if access.cluster(Op.CLUSTER_ACTION):
            return Admission(request)
        return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=())
    if not access.allowed(Op.WRITE, TRANSACTIONAL_ID, request.v3_and_below_transactional_id):
        return all_partitions_refused(header, request, _ADD_PARTITIONS, TXN_FAILED)
    topics = request.v3_and_below_topics
    refused = {t.name for t in topics if not access.allowed(Op.WRITE, TOPIC, t.name)}
    if not refused:
        return Admission(request)
    cls = response_class(header.api_key, header.api_version)
    return Refused(build(cls, results_by_topic_v3_and_below=tuple(
        _ADD_PARTITIONS.refused_topic(cls, t, TOPIC_FAILED if t.name in refused else E.OPERATION_NOT_ATTEMPTED)
        for t in topics)))


def add_offsets_to_txn(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return plain_refusal(header, TXN_FAILED)
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return plain_refusal(header, GROUP_FAILED)
    return Admission(request)


end_txn = whole(Op.WRITE, TRANSACTIONAL_ID, lambda r: r.transactional_id, producer_id=-1, producer_epoch=-1)


def _markers_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    marker_cls = item(cls, "markers")
    spec = TopicList(request_partitions="partition_indexes")
    return build(cls, markers=tuple(
        build(marker_cls, producer_id=m.producer_id,
              topics=tuple(spec.refused_topic(marker_cls, t, code) for t in m.topics))
        for m in request.markers))


write_txn_markers = cluster_guard(Op.CLUSTER_ACTION, _markers_refused)
_TXN_COMMIT_TOPICS = TopicList()


def txn_offset_commit(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return all_partitions_refused(header, request, _TXN_COMMIT_TOPICS, TXN_FAILED)
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return all_partitions_refused(header, request, _TXN_COMMIT_TOPICS, GROUP_FAILED)
    return admit_topics(access, header, request, Op.READ, _TXN_COMMIT_TOPICS)


describe_producers = per_topic(Op.READ, TopicList(request_partitions="partition_indexes",
                                                  failed={"error_message": None}))


def describe_transactions(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """DESCRIBE on each transactional id; the topics of a described transaction are only
    those the principal may describe."""
    def only_describable_topics(response: Any) -> Any:
        return replaced(response, transaction_states=tuple(
            replaced(t, topics=tuple(x for x in t.topics if access.allowed(Op.DESCRIBE, TOPIC, x.topic)))
            for t in response.transaction_states))

    def refused(cls: type, tid: str) -> Any:
        return build(item(cls, "transaction_states"), error_code=TXN_FAILED, transactional_id=tid,
                     transaction_state="", transaction_timeout=0, transaction_start_time=_EPOCH, producer_id=-1,
                     producer_epoch=-1, topics=())

    return admit_items(request, "transactional_ids", lambda t: access.allowed(Op.DESCRIBE, TRANSACTIONAL_ID, t),
                       refused, "transaction_states", only_describable_topics)


def list_transactions(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """Only the transactions whose transactional id the principal may describe."""
    return Admission(request, lambda r: replaced(r, transaction_states=tuple(
        t for t in r.transaction_states if access.allowed(Op.DESCRIBE, TRANSACTIONAL_ID, t.transactional_id))))

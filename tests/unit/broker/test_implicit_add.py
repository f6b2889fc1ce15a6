"""txn/implicit_add.py: which partitions of a Produce a transaction.version 2 producer's
transaction must hold (KIP-890 part 2), read from each partition's first batch header."""

from __future__ import annotations

from types import SimpleNamespace as NS

from kgroup.broker.txn.implicit_add import transactional_writes
from kgroup.conformance.observe import batch


def produce(*partitions):
    """A Produce request's topic_data: (topic, index, records) each."""
    topics: dict[str, list] = {}
    for topic, index, records in partitions:
        topics.setdefault(topic, []).append(NS(index=index, records=records))
    return NS(topic_data=[NS(name=t, partition_data=ps) for t, ps in topics.items()])


def test_only_transactional_batches_count_by_producer_and_epoch():
    txn = batch([b"a"], producer_id=7, producer_epoch=3, base_sequence=0, transactional=True)
    other = batch([b"b"], producer_id=8, producer_epoch=0, base_sequence=0, transactional=True)
    idempotent = batch([b"c"], producer_id=7, producer_epoch=3, base_sequence=0)
    plain = batch([b"d"])
    request = produce(("t", 0, txn), ("t", 1, idempotent), ("u", 2, plain), ("u", 0, txn), ("t", 0, txn),
                      ("v", 0, other), ("v", 1, None), ("v", 2, b"short"))
    names = [t.name for t in request.topic_data]
    assert transactional_writes(request, names) == {(7, 3): (("t", 0), ("u", 0)), (8, 0): (("v", 0),)}


def test_topics_named_by_id_count_by_their_resolved_names_and_an_unknown_id_not_at_all():
    """Produce v13 names topics by id (no `name` field): the produce path's resolved names
    are used, and a topic whose id resolved to nothing is left to its UNKNOWN_TOPIC_ID."""
    txn = batch([b"a"], producer_id=7, producer_epoch=3, base_sequence=0, transactional=True)
    request = NS(topic_data=[NS(topic_id=1, partition_data=[NS(index=0, records=txn)]),
                             NS(topic_id=2, partition_data=[NS(index=1, records=txn)])])
    assert transactional_writes(request, ["t", None]) == {(7, 3): (("t", 0),)}

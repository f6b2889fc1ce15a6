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
    assert transactional_writes(request) == {(7, 3): (("t", 0), ("u", 0)), (8, 0): (("v", 0),)}

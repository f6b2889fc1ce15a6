"""Idempotent producers and transactions (KIP-98, KIP-447, KIP-890 part 1): one entry each.

Version notes (what real clients send: librdkafka 2.16 InitProducerId 0–4,
AddPartitionsToTxn 0, AddOffsetsToTxn 0, EndTxn 0–1, TxnOffsetCommit 0–3; kafka-python 3.0
up to 4/3/3/3/3; aiokafka 0.14 v0 of each; kafkajs 2.2 v0–v1; txn_api.py has the
per-version notes). KIP-890 part 2 ("transaction.version 2", finalized at 2 as Kafka 4.4
does): EndTxn v5 (an epoch bump per transaction), AddPartitionsToTxn v5, TxnOffsetCommit v5
(adds its group itself), and Produce v12+ adding partitions implicitly (implicit_add.py);
TxnOffsetCommit v6 names topics by id (KIP-1319) and answers STALE_MEMBER_EPOCH and
GROUP_ID_NOT_FOUND where older versions answer ILLEGAL_GENERATION.
"""

from __future__ import annotations

from kgroup.broker.apis import Api
from kgroup.broker.txn import guards
from kgroup.broker.txn.describe_producers_api import ProducersApi
from kgroup.broker.txn.txn_api import TxnApi
from kgroup.broker.txn.write_markers_api import WriteMarkersApi
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.INIT_PRODUCER_ID, 0, 5, TxnApi.init_producer_id, guards.init_producer_id, edits=True),
    Api(K.ADD_PARTITIONS_TO_TXN, 0, 5, TxnApi.add_partitions_to_txn, guards.add_partitions_to_txn, edits=True),
    Api(K.ADD_OFFSETS_TO_TXN, 0, 4, TxnApi.add_offsets_to_txn, guards.add_offsets_to_txn, edits=True),
    Api(K.END_TXN, 0, 5, TxnApi.end_txn, guards.end_txn, edits=True),
    Api(K.TXN_OFFSET_COMMIT, 0, 6, TxnApi.txn_offset_commit, guards.txn_offset_commit, edits=True),
    Api(K.DESCRIBE_PRODUCERS, 0, 0, ProducersApi.describe_producers, guards.describe_producers, edits=False),
    Api(K.DESCRIBE_TRANSACTIONS, 0, 0, TxnApi.describe_transactions, guards.describe_transactions, edits=False),
    Api(K.LIST_TRANSACTIONS, 0, 2, TxnApi.list_transactions, guards.list_transactions, edits=False),
    # Sent by a transaction coordinator on another node (txn_markers.py; write_markers_api.py).
    Api(K.WRITE_TXN_MARKERS, 1, 2, WriteMarkersApi.write_txn_markers, guards.write_txn_markers, edits=True),
)

PREPARED_GUARDS: dict = {}

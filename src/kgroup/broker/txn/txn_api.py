"""The transaction APIs on the wire: kio requests of any version -> core messages -> kio responses.

Version notes (txn/apis.py has the versions served and what real clients send):

- InitProducerId: v2 flexible; v3 producer id and epoch (KIP-360); v4 PRODUCER_FENCED
  (older versions get INVALID_PRODUCER_EPOCH, as Kafka answers them); v5 adds only the
  TRANSACTION_ABORTABLE code, which we never send. Without a transactional id it is the data
  path's (data/producer_id_api.py): a new id at epoch 0 for every request, as in Kafka. A
  producer id without its epoch (or the other way round) is INVALID_REQUEST on both paths.
- AddPartitionsToTxn: v3 flexible; v4 batches transactions and has `verify_only`
  (KIP-890 part 1: a broker asks whether partitions are in a transaction, as our produce
  path asks the coordinator directly).
  v5 (KIP-890 part 2) is the same request from a transaction.version 2 client (in Kafka, the
  broker adding a TV2 producer's partition for its Produce): what it adds records TV2.
- AddOffsetsToTxn, EndTxn, TxnOffsetCommit: v2/v3 flexible;
  TxnOffsetCommit v3 adds generation, member id and instance id (KIP-447). KIP-890 part 2
  (transaction.version 2): EndTxn v5 bumps the producer epoch on every commit and abort and
  answers the producer id and epoch to go on with; TxnOffsetCommit v5 adds its group to the
  transaction itself (a TV2 client sends no AddOffsetsToTxn). TxnOffsetCommit v6 (KIP-1319)
  names topics by id and answers STALE_MEMBER_EPOCH / GROUP_ID_NOT_FOUND where v0-v5 answer
  ILLEGAL_GENERATION.
- ListTransactions v1: a duration filter.

Every core error becomes this API's error field here (PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH
below the versions that know it). TxnOffsetCommit is asked of the transaction's coordinator
first (`verify`): the group's offsets count only for an Ongoing transaction of the producer's
epoch that added the group, so a fenced producer cannot commit them.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.data.producer_id_api import half_named
from kgroup.broker.groups.group_api import GroupApi
from kgroup.broker.groups.offset_topics import shard_topics, unknown_partitions
from kgroup.broker.groups.topic_ids import FIRST_BY_ID, request_names, topic_key
from kgroup.core import messages as m
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.topic_regex import InvalidRegex, full_matcher
from kgroup.core.transactions import messages as tm
from kgroup.core.transactions.txn_state import TxnState
from kgroup.storage.group_hash import java_string_hashcode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item, ms

E = ErrorCode
OFFSETS_TOPIC = "__consumer_offsets"
KNOWN_STATES = frozenset(s.value for s in TxnState)
# Errors the broker answers before asking the transaction coordinator (Kafka's KafkaApis).
_REFUSED_BEFORE_COORDINATOR = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.TOPIC_AUTHORIZATION_FAILED})


def offsets_partition(group_id: str, partitions: int) -> int:
    """The partition of __consumer_offsets Kafka keeps a group in: Utils.abs of the group id's
    Java hash code (Integer.MIN_VALUE -> 0) modulo the partition count."""
    h = java_string_hashcode(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def txn_version_of(api_key: int, version: int) -> int:
    """The transaction.version a request's version speaks for (Kafka's TransactionVersion.
    transactionVersionForEndTxn / ...ForAddPartitionsToTxn): 2 from v5 on, else 0."""
    return 2 if version >= 5 else 0


def _epoch_error(error: ErrorCode, version: int, knows_fenced_from: int) -> ErrorCode:
    """PRODUCER_FENCED for versions that know it (KIP-588), else INVALID_PRODUCER_EPOCH."""
    if error is E.PRODUCER_FENCED and version < knows_fenced_from:
        return E.INVALID_PRODUCER_EPOCH
    return error


def verify(groups: GroupApi, transactional_id: str, producer_id: int, producer_epoch: int,
           partitions: tuple = (), group_id: str | None = None) -> ErrorCode:
    """Whether the producer's transaction may write these partitions (or commit this group's
    offsets) now; what the produce path (DataContext.verify_txn) and TxnOffsetCommit ask."""
    shard = groups.shard_of(transactional_id)
    if not shard.loaded:
        return E.COORDINATOR_LOAD_IN_PROGRESS
    return shard.coordinator.verify_txn(transactional_id, producer_id, producer_epoch, partitions, group_id)


class TxnApi:
    """The transaction coordinator's APIs over the group shards (see the module docstring)."""

    def __init__(self, groups: GroupApi, idempotent_init: Any, remote: Any = None) -> None:
        self.groups = groups
        # InitProducerId without a transactional id (DataPath.init_producer_id).
        self.idempotent_init = idempotent_init
        # A transaction coordinator on another node of a cluster (remote_txn.RemoteTxn).
        self.remote = remote

    # ---- verification (KIP-890) -----------------------------------------------------------

    def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
               partitions: tuple = (), group_id: str | None = None) -> ErrorCode:
        return verify(self.groups, transactional_id, producer_id, producer_epoch, partitions, group_id)

    async def _call(self, key: str, handler: str, request: Any) -> Any:
        shard = self.groups.shard_of(key)
        return await shard.call(getattr(shard.coordinator, handler), request)

    # ---- InitProducerId -------------------------------------------------------------------

    async def init_producer_id(self, header: RequestHeader, req: Any) -> Any:
        tid = get(req, "transactional_id", None)
        if tid is None:
            return await self.idempotent_init(header, req)
        v = header.api_version
        core = tm.InitProducerIdRequest(tid, ms(req.transaction_timeout), int(get(req, "producer_id", -1)),
                                        int(get(req, "producer_epoch", -1)))
        try:
            if half_named(core.producer_id, core.producer_epoch):
                raise GroupError(E.INVALID_REQUEST, "a producer id needs its epoch and an epoch its id")
            resp = await self._call(tid, "init_producer_id", core)
        except GroupError as exc:
            resp = tm.InitProducerIdResponse(exc.code)
        return build(response_class(header.api_key, v), throttle_time=0,
                     error_code=_epoch_error(resp.error, v, 4), producer_id=resp.producer_id,
                     producer_epoch=resp.producer_epoch)

    # ---- AddPartitionsToTxn ---------------------------------------------------------------

    async def add_partitions_to_txn(self, header: RequestHeader, req: Any) -> Any:
        v = header.api_version
        cls = response_class(header.api_key, v)
        if v < 4:
            topics = req.v3_and_below_topics
            errors = await self._add_partitions(req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                                req.v3_and_below_producer_epoch, topics, False, v)
            return build(cls, throttle_time=0, results_by_topic_v3_and_below=self._topic_results(
                cls, errors, "results_by_topic_v3_and_below", topics))
        result_cls = item(cls, "results_by_transaction")
        results = []
        for txn in req.transactions:
            errors = await self._add_partitions(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                                txn.topics, txn.verify_only, v)
            results.append(build(result_cls, transactional_id=txn.transactional_id,
                                 topic_results=self._topic_results(result_cls, errors, "topic_results", txn.topics,
                                                                   keyed=bool(txn.verify_only))))
        return build(cls, throttle_time=0, error_code=E.NONE, results_by_transaction=tuple(results))

    async def _add_partitions(self, tid: str, pid: int, epoch: int, topics: Any, verify_only: bool,
                              version: int) -> list[tuple[str, int, ErrorCode]]:
        partitions = tuple((t.name, int(p)) for t in topics for p in t.partitions)
        if verify_only:
            # Kafka answers a partition that does not exist before it asks the coordinator.
            # A group coordinator on another node asks for a group as its __consumer_offsets
            # partition (remote_txn.py).
            unknown = unknown_partitions(self.groups.shard_of(tid), [tp for tp in partitions if tp[0] != OFFSETS_TOPIC])
            return [(t, p, unknown.get((t, p)) or _epoch_error(
                        self._verify_offsets_partition(tid, int(pid), int(epoch), p) if t == OFFSETS_TOPIC
                        else self.verify(tid, int(pid), int(epoch), ((t, p),)), version, 2))
                    for t, p in partitions]
        try:
            resp = await self._call(tid, "add_partitions_to_txn",
                                    tm.AddPartitionsToTxnRequest(tid, int(pid), int(epoch), partitions,
                                                                 client_version=txn_version_of(24, version)))
            return [(t, p, _epoch_error(e, version, 2)) for t, p, e in resp.errors]
        except GroupError as exc:
            return [(t, p, _epoch_error(exc.code, version, 2)) for t, p in partitions]

    def _verify_offsets_partition(self, tid: str, pid: int, epoch: int, slot: int) -> ErrorCode:
        """Whether the transaction holds a group whose offsets live in group-metadata
        partition `slot` (the partition a group is to Kafka: its __consumer_offsets one)."""
        error = self.verify(tid, pid, epoch)
        if error is not E.NONE:
            return error
        shard = self.groups.shard_of(tid)
        value = shard.coordinator.transactions.transactions.get(tid)
        held = value is not None and any(self.groups.shard_for(g) == slot for g in value.groups)
        return E.NONE if held else E.INVALID_TXN_STATE

    @staticmethod
    def _topic_results(cls: type, errors: list[tuple[str, int, ErrorCode]], field: str, topics: Any,
                       keyed: bool = False) -> tuple:
        topic_cls = item(cls, field)
        part_cls = item(topic_cls, "results_by_partition")
        # The coordinator's answer names every topic asked for, one naming no partition too,
        # as Kafka answers from the request. A request refused before the coordinator (a
        # partition that does not exist or may not be written) is answered from Kafka's map of
        # partitions: each partition once, no topic without one; so is a verification
        # (`keyed`: v4+ verify_only, which Kafka answers from its map of partitions too).
        refused = keyed or any(e in _REFUSED_BEFORE_COORDINATOR for _, _, e in errors)
        by_topic: dict[str, list] = {} if refused else {t.name: [] for t in topics}
        if refused:
            errors = list({(t, p): (t, p, e) for t, p, e in errors}.values())
        for t, p, e in errors:
            by_topic.setdefault(t, []).append(build(part_cls, partition_index=p, partition_error_code=e))
        return tuple(build(topic_cls, name=t, results_by_partition=tuple(ps)) for t, ps in by_topic.items())

    # ---- AddOffsetsToTxn / EndTxn ---------------------------------------------------------

    async def add_offsets_to_txn(self, header: RequestHeader, req: Any) -> Any:
        return await self._error_only(header, req.transactional_id, "add_offsets_to_txn",
                                      tm.AddOffsetsToTxnRequest(req.transactional_id, int(req.producer_id),
                                                                int(req.producer_epoch), req.group_id))

    async def end_txn(self, header: RequestHeader, req: Any) -> Any:
        v = header.api_version
        core = tm.EndTxnRequest(req.transactional_id, int(req.producer_id), int(req.producer_epoch),
                                bool(req.committed), client_version=txn_version_of(26, v))
        try:
            resp = await self._call(req.transactional_id, "end_txn", core)
        except GroupError as exc:
            resp = tm.EndTxnResponse(exc.code)
        extra = {"producer_id": resp.producer_id, "producer_epoch": resp.producer_epoch} if v >= 5 else {}
        return build(response_class(header.api_key, v), throttle_time=0, error_code=_epoch_error(resp.error, v, 2),
                     **extra)

    async def _error_only(self, header: RequestHeader, tid: str, handler: str, request: Any) -> Any:
        """A request whose answer is one error code (AddOffsetsToTxn, EndTxn)."""
        v = header.api_version
        try:
            error = (await self._call(tid, handler, request)).error
        except GroupError as exc:
            error = exc.code
        return build(response_class(header.api_key, v), throttle_time=0, error_code=_epoch_error(error, v, 2))

    # ---- TxnOffsetCommit ------------------------------------------------------------------

    async def txn_offset_commit(self, header: RequestHeader, req: Any) -> Any:
        v = header.api_version
        shard = self.groups.shard_of(req.group_id)
        # v6 names topics by id (KIP-1319): each becomes its topic's name; an id no topic has
        # stands as a name no topic can have, and its partitions are UNKNOWN_TOPIC_ID.
        named = [(t, name if name is not None else f"<unknown topic id {t.topic_id}>", name is None)
                 for t, name in request_names(req.topics, FIRST_BY_ID if v >= 6 else 0, shard_topics(shard))]
        if shard_topics(shard) is None:
            # Not this node's group (or still loading here): answered at once, as Kafka's
            # group coordinator checks that first. Going on would be wrong, not just slow:
            # a v6 topic id cannot be named without the shard's topics, and if the group's
            # partition is taken over here while the awaits below run, the group would store
            # the offsets under the id written out as a topic name.
            return self._txn_offset_answer(header, named, {}, shard.error, {})
        errors = {(name, p.partition_index): E.UNKNOWN_TOPIC_ID for t, name, unknown in named if unknown
                  for p in t.partitions}
        partitions = tuple(
            m.OffsetCommitPartition(name, p.partition_index, p.committed_offset,
                                    get(p, "committed_leader_epoch", -1), p.committed_metadata)
            for t, name, unknown in named if not unknown for p in t.partitions)
        # 0. Partitions that do not exist are answered first and go no further
        #    (groups/offset_topics.py); with none left nothing else is asked.
        errors.update(unknown_partitions(shard, ((p.topic, p.partition) for p in partitions)))
        partitions = tuple(p for p in partitions if (p.topic, p.partition) not in errors)
        error = E.NONE
        # 1. The transaction must be Ongoing at this epoch and hold the group; from v5 (a
        #    transaction.version 2 client, which sends no AddOffsetsToTxn) the commit adds it.
        if v >= 5 and (partitions or not errors):
            error = await self._add_group_implicitly(req)
        if error is E.NONE and (partitions or not errors):
            if self.remote is not None and self.remote.is_remote(req.transactional_id):
                error = await self.remote.verify_group(req.transactional_id, int(req.producer_id),
                                                       int(req.producer_epoch), req.group_id)
            else:
                error = self.verify(req.transactional_id, int(req.producer_id), int(req.producer_epoch),
                                    group_id=req.group_id)
        if error is E.NONE and (partitions or not errors):
            # 2. The group fences the committer (KIP-447) and keeps the offsets pending.
            core = tm.TxnOffsetCommitRequest(
                req.group_id, req.transactional_id, int(req.producer_id), int(req.producer_epoch), partitions,
                int(get(req, "generation_id", -1)), get(req, "member_id", "") or "", get(req, "group_instance_id"),
                api_version=v)
            try:
                resp = await self._call(req.group_id, "txn_offset_commit", core)
                errors.update({(e.topic, e.partition): e.error for e in resp.partitions})
            except GroupError as exc:
                error = exc.code
        if v >= 5 and error is E.PRODUCER_FENCED:
            error = E.INVALID_PRODUCER_EPOCH    # as Kafka's verification of a TV2 commit answers it
        error = _epoch_error(error, v, 2)
        return self._txn_offset_answer(header, named, errors, error, shard_topics(shard) or {})

    @staticmethod
    def _txn_offset_answer(header: RequestHeader, named: list, errors: dict, error: ErrorCode, known: Any) -> Any:
        """Kafka answers by topic (name, or id from v6): a topic named twice is answered once,
        with both's partitions; a topic that exists and names no partition is not answered
        (an unknown one is, by the broker, even with none)."""
        v = header.api_version
        cls = response_class(header.api_key, v)
        topic_cls = item(cls, "topics")
        part_cls = item(topic_cls, "partitions")
        by_key: dict[Any, list] = {}
        for t, name, unknown in named:
            if not t.partitions and not unknown and name in known:
                continue
            by_key.setdefault(t.topic_id if v >= 6 else name, []).extend(
                build(part_cls, partition_index=p.partition_index,
                      error_code=errors.get((name, p.partition_index), error))
                for p in t.partitions)
        return build(cls, throttle_time=0, topics=tuple(
            build(topic_cls, **{topic_key(10 if v >= 6 else 0): key}, partitions=tuple(parts))
            for key, parts in by_key.items()))

    async def _add_group_implicitly(self, req: Any) -> ErrorCode:
        """TxnOffsetCommit v5+: the group joins the producer's transaction, as AddOffsetsToTxn
        would add it (KIP-890 part 2; Kafka's group coordinator asks the transaction
        coordinator to add it before it takes the offsets)."""
        if self.remote is not None and self.remote.is_remote(req.transactional_id):
            return await self.remote.add_group(req.transactional_id, int(req.producer_id), int(req.producer_epoch),
                                               req.group_id)
        try:
            return (await self._call(req.transactional_id, "add_offsets_to_txn", tm.AddOffsetsToTxnRequest(
                req.transactional_id, int(req.producer_id), int(req.producer_epoch), req.group_id,
                client_version=2))).error
        except GroupError as exc:
            return exc.code

    # ---- DescribeTransactions / ListTransactions ------------------------------------------

    async def describe_transactions(self, header: RequestHeader, req: Any) -> Any:
        from kio.serial.readers import tz_aware_from_i64  # noqa: PLC0415 (kio's own ms -> datetime)

        cls = response_class(header.api_key, header.api_version)
        state_cls = item(cls, "transaction_states")
        topic_cls = item(state_cls, "topics")
        out = []
        for tid in req.transactional_ids:
            try:
                (d,) = await self._call(tid, "describe_transactions", (tid,))
            except GroupError as exc:
                d = tm.DescribedTxn(tid, exc.code)
            by_topic: dict[str, list[int]] = {}
            # A group whose offsets the transaction commits is, to Kafka, its partition of
            # __consumer_offsets.
            count = len(self.groups.shards)
            for t, p in (*d.partitions, *((OFFSETS_TOPIC, offsets_partition(g, count)) for g in d.groups)):
                if p not in by_topic.get(t, ()):
                    by_topic.setdefault(t, []).append(p)
            # No transaction in flight (start -1, as Kafka sends it) or an unknown id (Kafka's
            # default 0): both go as 0, the epoch, because the field is a timestamp that kio (and
            # so our own client and CLI) refuses to read when negative.
            out.append(build(state_cls, error_code=d.error, transactional_id=tid, transaction_state=d.state,
                             transaction_timeout=d.timeout_ms,
                             transaction_start_time=tz_aware_from_i64(max(d.start_ms, 0)),
                             producer_id=d.producer_id, producer_epoch=d.producer_epoch,
                             topics=tuple(build(topic_cls, topic=t, partitions=tuple(ps))
                                          for t, ps in by_topic.items())))
        return build(cls, throttle_time=0, transaction_states=tuple(out))

    async def list_transactions(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        state_cls = item(cls, "transaction_states")
        states = tuple(req.state_filters or ())
        unknown = tuple(dict.fromkeys(s for s in states if s not in KNOWN_STATES))   # each once, as Kafka's set
        core = tm.ListTransactionsRequest(tuple(s for s in states if s in KNOWN_STATES),
                                          tuple(int(p) for p in req.producer_id_filters or ()),
                                          int(get(req, "duration_filter", -1)))
        # v2 (KIP-1152): only ids the pattern matches as a whole; null or "" lists all. A
        # pattern RE2 does not compile (Kafka uses RE2/J) fails the request.
        pattern = get(req, "transactional_id_pattern", None)
        try:
            matcher = full_matcher(pattern) if pattern else None
        except InvalidRegex:
            return build(cls, throttle_time=0, error_code=E.INVALID_REGULAR_EXPRESSION, unknown_state_filters=(),
                         transaction_states=())
        listed: list[tm.ListedTxn] = []
        error = E.NONE
        if not (states and all(s not in KNOWN_STATES for s in states)):
            listed, error = await self.groups.from_every_shard("list_transactions", core)
        return build(cls, throttle_time=0, error_code=error, unknown_state_filters=unknown,
                     transaction_states=tuple(
                         build(state_cls, transactional_id=t.transactional_id, producer_id=t.producer_id,
                               transaction_state=t.state)
                         for t in sorted(listed, key=lambda t: t.transactional_id)
                         if matcher is None or matcher(t.transactional_id)))

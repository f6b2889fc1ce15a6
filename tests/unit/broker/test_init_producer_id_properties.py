"""Hypothesis property of InitProducerId as the broker routes it (broker/txn/txn_api.py): no two
live idempotent producers ever share a producer id, whatever the requests carry.

Several producers -- idempotent ones (no transactional id) and transactional ones, two of
them sharing one transactional id -- send InitProducerId in any order, at any version, each
naming any producer id and epoch: -1/-1, 0/0 (as @platformatic/kafka does), its own current
pair, another producer's, an exhausted epoch, or anything else. Transactional producers may
also start transactions (so a later InitProducerId fences one) and the broker may write the
markers. The request goes through `TxnApi.init_producer_id` -- the broker's own dispatch --
to `ProducerIds` (idempotent) or the transaction coordinator on a manual clock, both
drawing ids from one source as on the broker. After every answer:

- an idempotent producer gets a producer id never handed out before, at epoch 0 (Kafka's
  TransactionCoordinator: without a transactional id the request's id and epoch count for
  nothing), or INVALID_REQUEST when only one of the pair is -1;
- the live (id, epoch) of an idempotent producer is nobody else's, and its id is no other
  live producer's; producers of different transactional ids never share an id.
"""

from __future__ import annotations

import asyncio
import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.broker.data.producer_id_api import ProducerIds
from kgroup.broker.txn.txn_api import TxnApi
from kgroup.core.errors import GroupError
from kgroup.wire import RequestHeader, is_flexible, request_class
from kgroup.wire.kio_build import build

from tests.unit.core.txnctx import TxnContext

INIT_PRODUCER_ID = 22
# Producer index -> its transactional id (None: idempotent). Producers 3 and 4 share "a".
PRODUCERS = (None, None, None, "a", "a", "b")
FIRST_ID = 1000              # TxnContext's producer ids start here, so guesses can hit them


class _Shard:
    """A loaded shard that runs the coordinator of a TxnContext (records applied at once)."""

    loaded = True

    def __init__(self, ctx: TxnContext) -> None:
        self.ctx = ctx
        self.coordinator = ctx.coord

    async def call(self, handler, request):
        done = self.ctx.call(handler, request)
        if done.raised is not None:
            raise GroupError(done.raised)
        return done.response


class _Groups:
    def __init__(self, ctx: TxnContext) -> None:
        self.shard = _Shard(ctx)

    def shard_of(self, key: str) -> _Shard:
        return self.shard


NAMING = st.one_of(
    st.just(("none",)), st.just(("zero",)), st.just(("own",)),
    st.tuples(st.just("other"), st.integers(0, len(PRODUCERS) - 1)),
    st.tuples(st.just("any"), st.integers(-1, FIRST_ID + 8), st.sampled_from([-1, 0, 1, 2, 32766, 32767])),
)
STEPS = st.lists(st.one_of(
    st.tuples(st.just("init"), st.integers(0, len(PRODUCERS) - 1), st.integers(0, 5), NAMING),
    st.tuples(st.just("begin"), st.sampled_from([3, 4, 5])),
    st.tuples(st.just("markers")),
), min_size=1, max_size=30)


def _pair(naming: tuple, own: tuple[int, int] | None, live: dict[int, tuple[int, int]]) -> tuple[int, int]:
    kind = naming[0]
    if kind == "zero":
        return 0, 0
    if kind == "own":
        return own or (-1, -1)
    if kind == "other":
        return live.get(naming[1], (-1, -1))
    if kind == "any":
        return naming[1], naming[2]
    return -1, -1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_two_live_idempotent_producers_never_share_a_producer_id(script):
    ctx = TxnContext()
    ids = ctx.coord.transactions.new_producer_id        # one id source, as on the broker
    idempotent = ProducerIds(ids)

    async def idempotent_init(header, request):
        return idempotent.init_producer_id(header, request)

    api = TxnApi(_Groups(ctx), idempotent_init)
    live: dict[int, tuple[int, int]] = {}
    handed: set[int] = set()

    async def init(i: int, version: int, pid: int, epoch: int):
        header = RequestHeader(INIT_PRODUCER_ID, version, 1, "prop", is_flexible(INIT_PRODUCER_ID, version))
        fields = dict(transactional_id=PRODUCERS[i], transaction_timeout=datetime.timedelta(seconds=60))
        if version >= 3:
            fields.update(producer_id=pid, producer_epoch=epoch)
        return await api.init_producer_id(header, build(request_class(INIT_PRODUCER_ID, version), **fields))

    for step in script:
        if step[0] == "markers":
            ctx.write_markers()
            continue
        if step[0] == "begin":
            i = step[1]
            if i in live:
                ctx.add(PRODUCERS[i], *live[i], ("t", 0))
            continue
        _, i, version, naming = step
        pid, epoch = _pair(naming, live.get(i), live)
        if version < 3:
            pid, epoch = -1, -1                          # v0-2 cannot name a producer
        r = asyncio.run(init(i, version, pid, epoch))
        error, got = int(r.error_code), (int(r.producer_id), int(r.producer_epoch))
        if PRODUCERS[i] is None:
            if (pid == -1) != (epoch == -1):
                assert error == 42 and got == (-1, -1)
                continue
            assert error == 0, (step, error)
            assert got[1] == 0 and got[0] not in handed, (step, got, sorted(handed))
        if error == 0:
            live[i] = got
            handed.add(got[0])
        for a, pair in live.items():
            for b, other in live.items():
                if a == b:
                    continue
                if PRODUCERS[a] is None:
                    assert pair[0] != other[0], (a, b, live)
                elif PRODUCERS[b] is not None and PRODUCERS[a] != PRODUCERS[b]:
                    assert pair[0] != other[0], (a, b, live)

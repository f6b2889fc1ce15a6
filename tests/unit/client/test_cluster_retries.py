"""The cluster layer's decisions when coordinators and leaders move: which error retries
where, how long it backs off, what it asks again. Scripted brokers, a manual clock, no sleep.

``Brokers`` plays a three-broker cluster behind ``ClusterClient``'s ``open_connection``: each
broker answers like Kafka's (NOT_COORDINATOR when it does not coordinate the group,
NOT_LEADER_OR_FOLLOWER for a partition it does not lead), can be down (connection refused),
and can be given error codes to answer first.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace as NS

import pytest

from kgroup.client.admin import AdminClient
from kgroup.client.cluster import (
    Backoff,
    ClusterClient,
    MovedError,
    Recovery,
    Retries,
    Route,
    recovery,
    request_fields,
)
from kgroup.client.errors import (
    BrokerError,
    KafkaConnectionError,
    ProtocolError,
    RequestTimeout,
    UnsupportedApi,
)
from kgroup.error_codes import ErrorCode as E
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.client.versions import CLIENT_APIS

# -- the decision table ------------------------------------------------------------------

COORD, LEADER = Route.COORDINATOR, Route.LEADER


@pytest.mark.parametrize("error, route, expected", [
    (E.COORDINATOR_LOAD_IN_PROGRESS, COORD, Recovery.RETRY),
    (E.NOT_COORDINATOR, COORD, Recovery.FIND_COORDINATOR),
    (E.COORDINATOR_NOT_AVAILABLE, COORD, Recovery.FIND_COORDINATOR),
    (KafkaConnectionError("refused"), COORD, Recovery.FIND_COORDINATOR),
    (RequestTimeout("no answer"), COORD, Recovery.FIND_COORDINATOR),
    (E.ILLEGAL_GENERATION, COORD, Recovery.FAIL),
    (E.GROUP_AUTHORIZATION_FAILED, COORD, Recovery.FAIL),
    (E.NOT_LEADER_OR_FOLLOWER, COORD, Recovery.FAIL),
    (E.NOT_LEADER_OR_FOLLOWER, LEADER, Recovery.REFRESH_METADATA),
    (E.UNKNOWN_TOPIC_OR_PARTITION, LEADER, Recovery.REFRESH_METADATA),
    (E.LEADER_NOT_AVAILABLE, LEADER, Recovery.REFRESH_METADATA),
    (E.REQUEST_TIMED_OUT, LEADER, Recovery.RETRY),
    (E.NOT_ENOUGH_REPLICAS, LEADER, Recovery.RETRY),
    (KafkaConnectionError("refused"), LEADER, Recovery.REFRESH_METADATA),
    (E.NOT_COORDINATOR, LEADER, Recovery.FAIL),
    (E.OFFSET_OUT_OF_RANGE, LEADER, Recovery.FAIL),
    (E.NONE, LEADER, Recovery.FAIL),
    (BrokerError(6, "produce"), LEADER, Recovery.REFRESH_METADATA),
    (UnsupportedApi("no such API"), LEADER, Recovery.FAIL),
    (ProtocolError("garbage"), COORD, Recovery.FAIL),
])
def test_which_error_retries_where(error, route, expected) -> None:
    assert recovery(error, route) is expected


def test_backoff_doubles_and_stays_under_its_cap() -> None:
    delays = Backoff(100, 1_000).delays()
    got = [next(delays) for _ in range(8)]
    assert got == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]
    assert next(Backoff(5_000, 1_000).delays()) == 1.0


def test_retries_stop_before_the_deadline() -> None:
    now = [0.0]
    retries = Retries(Backoff(100, 1_000), 2.0, lambda: now[0])
    waited = []
    while (delay := retries.next_delay()) is not None:
        waited.append(delay)
        now[0] += delay
    assert waited == [0.1, 0.2, 0.4, 0.8]          # the next 1.0 would end past 2.0 s
    assert sum(waited) < 2.0 and retries.remaining() == pytest.approx(0.5)


# -- scripted brokers --------------------------------------------------------------------


class Brokers:
    """Three scripted brokers (node ids 1..3 on ports 9001..9003); see the module comment."""

    def __init__(self) -> None:
        self.nodes = {1: 9001, 2: 9002, 3: 9003}
        self.down: set[int] = set()
        self.coordinator = {"g": 1}
        self.leaders = {("t", 0): 1, ("t", 1): 2}
        self.first: dict[tuple[int, int], list[int]] = {}   # (node, api) -> codes, in order
        self.log: list[tuple[int, int]] = []                # (node, api) of each request
        self.now = 0.0
        self.slept: list[float] = []

    def cluster(self, bootstrap: str = "b:9001", timeout: float = 5.0) -> ClusterClient:
        return ClusterClient(bootstrap, timeout=timeout, backoff=Backoff(100, 1_000),
                       open_connection=self.open, sleep=self.sleep, clock=lambda: self.now)

    async def open(self, host: str, port: int, client_id: str, timeout: float) -> FakeConn:
        node = port - 9000
        if node in self.down or node not in self.nodes:
            raise KafkaConnectionError(f"cannot connect to {host}:{port}: connection refused")
        return FakeConn(self, node, host, port)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def sent(self, api: int) -> list[int]:
        """The nodes that got each request of ``api``, in order."""
        return [n for n, a in self.log if a == api]

    def answer(self, node: int, api: int, req: object) -> object:
        scripted = self.first.get((node, api))
        code = scripted.pop(0) if scripted else 0
        if api == ApiKey.METADATA:
            topics = sorted({t for t, _ in self.leaders})
            return NS(brokers=[NS(node_id=n, host="b", port=p) for n, p in self.nodes.items()],
                      controller_id=1, cluster_id="c",
                      topics=[NS(name=t, error_code=0, topic_id=None, is_internal=False,
                                 partitions=[NS(partition_index=p, leader_id=lead,
                                                replica_nodes=[lead], isr_nodes=[lead],
                                                error_code=0)
                                             for (tt, p), lead in sorted(self.leaders.items())
                                             if tt == t])
                              for t in topics if t in _topic_names(req, topics)]
                      + [NS(name=t, error_code=E.UNKNOWN_TOPIC_OR_PARTITION, topic_id=None,
                            is_internal=False, partitions=[])
                         for t in _topic_names(req, topics) if t not in topics])
        if api == ApiKey.FIND_COORDINATOR:
            node_id = self.coordinator.get("g", -1)
            entry = NS(error_code=code, node_id=node_id, host="b", port=9000 + node_id,
                       error_message=None)
            return NS(coordinators=[entry])
        if api == ApiKey.OFFSET_FETCH:
            if not code and self.coordinator.get("g") != node:
                code = E.NOT_COORDINATOR
            return NS(error_code=code, groups=[])
        if api in (ApiKey.LIST_OFFSETS, ApiKey.PRODUCE):
            topic = req.topics[0] if api == ApiKey.LIST_OFFSETS else req.topic_data[0]
            parts = topic.partitions if api == ApiKey.LIST_OFFSETS else topic.partition_data
            out = []
            for p in parts:
                index = p.partition_index if api == ApiKey.LIST_OFFSETS else p.index
                err = code or (0 if self.leaders.get((topic.name, index)) == node
                               else E.NOT_LEADER_OR_FOLLOWER)
                out.append(NS(partition_index=index, index=index, error_code=err, offset=42,
                              base_offset=7, error_message=None))
            if api == ApiKey.LIST_OFFSETS:
                return NS(topics=[NS(name=topic.name, partitions=out)])
            return NS(responses=[NS(name=topic.name, partition_responses=out)])
        raise AssertionError(f"no script for API {api}")


def _topic_names(req: object, known: list[str]) -> list[str]:
    topics = getattr(req, "topics", None)
    return known if topics is None else [t.name for t in topics]


class FakeConn:
    def __init__(self, brokers: Brokers, node: int, host: str, port: int) -> None:
        self.brokers, self.node, self.host, self.port = brokers, node, host, port
        self.closed = False
        self.address = f"{host}:{port}"

    def choose_version(self, api_key: int, max_version: int | None = None) -> int:
        return CLIENT_APIS[api_key].max_version

    async def request(self, api_key: int, body, version=None, **kw):
        if self.node in self.brokers.down:
            self.closed = True
            raise KafkaConnectionError(f"lost connection to {self.address}")
        req = body(request_class(api_key, self.choose_version(api_key)))
        self.brokers.log.append((self.node, api_key))
        return self.brokers.answer(self.node, api_key, req)

    async def close(self) -> None:
        self.closed = True


def run(coro):
    return asyncio.run(coro)


async def _group_call(cluster: ClusterClient, **kw):
    return await cluster.call_coordinator("g", ApiKey.OFFSET_FETCH, request_fields(groups=[]), **kw)


# -- coordinator moves -------------------------------------------------------------------


def test_not_coordinator_finds_the_coordinator_again_and_resends_there() -> None:
    b = Brokers()
    cluster = b.cluster()

    async def go():
        assert (await _group_call(cluster)).error_code == 0
        b.coordinator["g"] = 3                    # the group moves to broker 3
        resp = await _group_call(cluster)
        return resp

    assert run(go()).error_code == 0
    assert b.sent(ApiKey.OFFSET_FETCH) == [1, 1, 3]
    assert len(b.sent(ApiKey.FIND_COORDINATOR)) == 2    # once at first, once after NOT_COORDINATOR
    assert b.slept == [0.1]


def test_load_in_progress_waits_and_asks_the_same_coordinator() -> None:
    b = Brokers()
    b.first[(1, ApiKey.OFFSET_FETCH)] = [E.COORDINATOR_LOAD_IN_PROGRESS] * 3
    resp = run(_group_call(b.cluster()))
    assert resp.error_code == 0
    assert b.sent(ApiKey.OFFSET_FETCH) == [1, 1, 1, 1]
    assert len(b.sent(ApiKey.FIND_COORDINATOR)) == 1    # not rediscovered: it is loading, not gone
    assert b.slept == [0.1, 0.2, 0.4]


def test_coordinator_not_available_from_find_coordinator_is_waited_out() -> None:
    b = Brokers()
    b.first[(1, ApiKey.FIND_COORDINATOR)] = [E.COORDINATOR_NOT_AVAILABLE] * 2
    assert run(_group_call(b.cluster())).error_code == 0
    assert len(b.sent(ApiKey.FIND_COORDINATOR)) == 3 and b.slept == [0.1, 0.2]


def test_coordinator_broker_going_away_finds_the_new_one() -> None:
    b = Brokers()
    cluster = b.cluster()

    async def go():
        await cluster.connect()                    # learns every broker from the bootstrap
        await _group_call(cluster)
        b.down.add(1)                              # broker 1 dies...
        b.coordinator["g"] = 2                     # ...and broker 2 takes the group over
        return await _group_call(cluster)

    assert run(go()).error_code == 0
    # FindCoordinator went to a live broker (the bootstrap one is down).
    assert b.sent(ApiKey.FIND_COORDINATOR)[-1] != 1
    assert b.sent(ApiKey.OFFSET_FETCH)[-1] == 2


def test_a_coordinator_that_never_comes_back_gives_up_at_the_deadline() -> None:
    b = Brokers()
    b.coordinator["g"] = 3
    b.down.add(3)
    with pytest.raises(KafkaConnectionError):
        run(_group_call(b.cluster(timeout=5.0)))
    assert b.slept and max(b.slept) <= 1.0 and sum(b.slept) < 5.0


def test_a_moved_answer_that_outlasts_the_deadline_raises_its_code() -> None:
    b = Brokers()
    b.first[(1, ApiKey.OFFSET_FETCH)] = [E.COORDINATOR_LOAD_IN_PROGRESS] * 100
    with pytest.raises(MovedError) as caught:
        run(_group_call(b.cluster(timeout=3.0)))
    assert caught.value.code is E.COORDINATOR_LOAD_IN_PROGRESS
    assert sum(b.slept) < 3.0


def test_other_errors_are_not_retried_but_handed_back() -> None:
    b = Brokers()
    b.first[(1, ApiKey.OFFSET_FETCH)] = [E.GROUP_AUTHORIZATION_FAILED]
    assert run(_group_call(b.cluster())).error_code == E.GROUP_AUTHORIZATION_FAILED
    assert b.sent(ApiKey.OFFSET_FETCH) == [1] and b.slept == []


# -- leader moves ------------------------------------------------------------------------


def test_partitions_go_to_their_own_leaders_and_follow_a_move() -> None:
    b = Brokers()
    admin = AdminClient(cluster=b.cluster())

    async def go():
        first = await admin.list_offsets("t", [0, 1])
        b.leaders[("t", 1)] = 3                  # partition 1 moves to broker 3
        second = await admin.list_offsets("t", [0, 1])
        return first, second

    assert run(go()) == ({0: 42, 1: 42}, {0: 42, 1: 42})
    # One request per leader; after the move, NOT_LEADER_OR_FOLLOWER from 2, metadata read
    # again, and broker 3 asked.
    assert b.sent(ApiKey.LIST_OFFSETS) == [1, 2, 1, 2, 1, 3]
    assert len(b.sent(ApiKey.METADATA)) == 2 and b.slept == [0.1]


def test_produce_follows_a_leader_whose_broker_went_away() -> None:
    b = Brokers()
    admin = AdminClient(cluster=b.cluster())

    async def go():
        await admin.produce("t", 1, [(None, b"a")])
        b.down.add(2)
        b.leaders[("t", 1)] = 3
        return await admin.produce("t", 1, [(None, b"b")])

    assert run(go()) == 7
    assert b.sent(ApiKey.PRODUCE) == [2, 3]


def test_a_missing_topic_is_final_at_once() -> None:
    b = Brokers()
    admin = AdminClient(cluster=b.cluster())
    with pytest.raises(BrokerError) as caught:
        run(admin.list_offsets("nope", [0]))
    assert caught.value.code is E.UNKNOWN_TOPIC_OR_PARTITION
    assert not isinstance(caught.value, MovedError) and b.slept == []


def test_a_refused_bootstrap_address_is_passed_over() -> None:
    b = Brokers()
    b.down.add(1)
    cluster = b.cluster("b:9001,b:9002")
    md = run(cluster.metadata())
    assert {br.node_id for br in md.brokers} == {1, 2, 3}
    assert b.sent(ApiKey.METADATA) == [2]


def test_recover_drops_exactly_what_the_error_says_is_stale() -> None:
    b = Brokers()
    cluster = b.cluster()

    async def go():
        await cluster.metadata()
        await cluster.find_coordinator("g")

    run(go())
    assert cluster.recover(E.REQUEST_TIMED_OUT, partitions=[("t", 0)]) is Recovery.RETRY
    assert cluster.cached_leader("t", 0) == 1
    assert cluster.recover(E.NOT_LEADER_OR_FOLLOWER, partitions=[("t", 0)]) \
        is Recovery.REFRESH_METADATA
    assert cluster.cached_leader("t", 0) is None and cluster.cached_leader("t", 1) == 2
    assert cluster.recover(E.COORDINATOR_LOAD_IN_PROGRESS, group="g") is Recovery.RETRY
    assert cluster.coordinator_connection("g") is not None    # still the coordinator
    assert cluster.recover(E.NOT_COORDINATOR, group="g") is Recovery.FIND_COORDINATOR
    assert cluster.coordinator_connection("g") is None
    run(cluster.find_coordinator("g"))
    assert len(b.sent(ApiKey.FIND_COORDINATOR)) == 2

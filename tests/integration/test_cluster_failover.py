"""Coordinator failover on a real 3-node cluster: kill -9 and SIGSTOP of the node that
coordinates five groups of five different clients, under acks=all load.

One cluster, one topic, one producer and the five groups serve the whole module, in either
order: the kill test restarts the node it killed (hand-back), the pause test resumes the node
it stopped and waits for the hand-back, and neither stops the shared producer. What is checked comes from the clients' own callbacks (no rebalance), their
positions (every partition consumed again), their acknowledged commits (still committed),
the producer's acknowledged records (all still in the topic), and the broker's files (the
paused node appended nothing after it lost its partitions).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import time

import pytest

from kgroup.client.admin import AdminClient
from tests.integration.clients import create_topic, wait_for
from tests.integration.cluster_process import ClusterProcess, coordinator_of, group_coordinated_by, metadata
from tests.integration.cluster_workload import AckedProducer, MemberProcess, missing_acknowledged, read_topic
from tests.integration.test_group_events import read_events
from tests.integration.waits import hold

pytestmark = pytest.mark.integration

TOPIC = "orders"
PARTITIONS = 12
VICTIM = 1
KINDS = ["confluent-cooperative", "confluent-consumer", "kafka-python", "aiokafka", "kgroup-consumer"]
# How long the tests wait for every group to consume every partition again after a kill
# or a pause: a generous bound, not the figure (each test prints its own). Here recovery
# takes 2-6 s, most of it the producer's: librdkafka re-queries a partition's leader once a
# second, the first answer right after a kill may still name the dead node, and dropping
# that node from the broker list once unsets the new leader it had just applied. On CI's
# loaded machine it once passed 10 s (the bound this used to be). The recovery time
# itself is a benchmark's to measure (issue 35's failover, beside Kafka).
RECOVERY_S = 30.0
NODE_TIMEOUT_MS = 3000


# The module runs twice: with `fsync = "never"` (acknowledged once flushed to the shared
# files) and with `always` (the default: fsynced before the answer). KGROUP_TEST_FSYNC
# runs it once with a policy of one's choice (e.g. interval:50).
FSYNC = [os.environ["KGROUP_TEST_FSYNC"]] if os.environ.get("KGROUP_TEST_FSYNC") else ["never", "always"]


@pytest.fixture(scope="module", params=FSYNC)
def cluster(tmp_path_factory, request):
    fsync = request.param
    c = ClusterProcess(tmp_path_factory.mktemp(f"failover-{fsync.replace(':', '-')}"),
                       extra={"node_timeout_ms": NODE_TIMEOUT_MS, "fsync": fsync},
                       group={"initial_rebalance_delay_ms": 300}).start()
    yield c
    c.finish()


@pytest.fixture(scope="module")
def workload(cluster):
    create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
    producer = AckedProducer(cluster.bootstrap, TOPIC, PARTITIONS)
    producer.start()
    members = [MemberProcess(kind, cluster.bootstrap, group_coordinated_by(VICTIM, f"g-{kind}"), TOPIC, kind)
               for kind in KINDS]
    try:
        for m in members:
            try:
                wait_for(lambda m=m: m.owned() == set(range(PARTITIONS)), 60, what=f"{m.name} owns every partition")
            except AssertionError as exc:
                raise AssertionError(f"{exc}: {m.describe()}") from None
        yield producer, members
    finally:
        for m in members:
            m.close()
        producer.stop()


def _lagging(members, ends: dict[int, int]) -> list[tuple[str, int, int, int]]:
    """(member, partition, its position, the end it must pass) for every lag left."""
    return [(m.name, p, m.position(p), ends.get(p, 0)) for m in members for p in range(PARTITIONS)
            if m.position(p) <= ends.get(p, 0)]


def _consume_again(members, ends: dict[int, int], within: float, what: str, since: float) -> None:
    try:
        wait_for(lambda: not _lagging(members, ends), within, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; lagging: {_lagging(members, ends)}; "
                             + " | ".join(m.describe() for m in members)) from None
    print(f"{what}: {time.time() - since:.1f} s")


def _assert_no_rebalance(members, since: float) -> None:
    for m in members:
        assert not m.rebalances_after(since), m.describe()
        assert not m.errors(), m.describe()


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    async def go():
        async with AdminClient(bootstrap) as admin:
            return await admin.list_group_offsets(group)
    return {tp[1]: o for tp, o in asyncio.run(go()).items()}


def _victim_coordinating(cluster, members) -> None:
    """Each test starts with the victim up and coordinating every group. If the other test
    failed part-way (the node left down, its groups not handed back yet), this restores that
    instead of failing again for the other test's reason."""
    victim = cluster.nodes[VICTIM]
    if not victim.alive():
        victim.start()
    wait_for(lambda: all(coordinator_of(cluster.bootstrap, m.group) == VICTIM for m in members), 30,
             what="the victim coordinating every group")


def test_kill_9_of_the_coordinator_moves_every_group_without_a_rebalance(cluster, workload) -> None:
    producer, members = workload
    victim = cluster.nodes[VICTIM]
    _victim_coordinating(cluster, members)
    # Let every member commit what it has read at least once.
    mark = time.time()
    wait_for(lambda: all(m.of("committed", after=mark) for m in members), 30, what="a commit by every member")

    killed_at = time.time()
    victim.kill9()
    ends = producer.ends_at(killed_at)
    commits = {m.group: m.last_commit(killed_at) for m in members}
    # Every group reads every partition past what was acknowledged before the kill.
    _consume_again(members, ends, RECOVERY_S, "every group consuming every partition again after the kill",
                   killed_at)
    _assert_no_rebalance(members, killed_at)
    # Metadata lists the live nodes only, and leaders among them.
    md = metadata(cluster.nodes[0].port, TOPIC)
    assert sorted(b.node_id for b in md.brokers) == [n.node_id for n in cluster.nodes if n is not victim]
    assert all(p.leader_id not in (VICTIM, -1) for p in md.topics[0].partitions), md.topics[0].partitions
    for m in members:
        assert coordinator_of(cluster.live_bootstrap(), m.group) != VICTIM
        kept = _committed(cluster.live_bootstrap(), m.group)
        assert all(kept.get(p, -1) >= o for p, o in commits[m.group].items()), (m.name, commits[m.group], kept)
        wait_for(lambda m=m: m.of("committed", after=time.time() - 1.5), 15, what=f"{m.name} commits again")

    # The node comes back: its partitions are handed back, still without a rebalance.
    back_at = time.time()
    victim.start()
    wait_for(lambda: all(coordinator_of(cluster.bootstrap, m.group) == VICTIM for m in members), 30,
             what="the groups' coordinator handed back")
    resumed = producer.ends_at(time.time())
    _consume_again(members, resumed, 2 * RECOVERY_S, "consuming after the hand-back", back_at)
    _assert_no_rebalance(members, back_at)
    assert "took group-metadata partition" in victim.log()
    # The group events tell the story: loaded elsewhere after the kill (from the dead node,
    # with the load time), then handed on and loaded back on the restarted node.
    events = [e for _, e in read_events(cluster.bootstrap)]
    for m in members:
        moves = [(e["kind"], e["node"], e.get("previous_node")) for e in events
                 if e["group"] == m.group and e["kind"].startswith("coordinator_") and e["time_ms"] >= killed_at * 1000]
        assert len(moves) == 3, moves
        (k1, n1, p1), (k2, n2, p2), (k3, n3, p3) = moves
        assert (k1, p1) == ("coordinator_loaded", VICTIM) and n1 != VICTIM
        assert (k2, n2, p2) == ("coordinator_unloaded", n1, VICTIM)
        assert (k3, n3, p3) == ("coordinator_loaded", VICTIM, n1)
        assert all(e["load_ms"] >= 0 for e in events if e["group"] == m.group and e["kind"] == "coordinator_loaded")


def _raw(port: int, api_key: int, version: int, fields: dict) -> bytes:
    from kgroup.wire import encode_request, request_class
    from kgroup.wire.kio_build import build

    return encode_request(api_key, version, 99, "probe", build(request_class(api_key, version), **fields))


def test_a_paused_coordinator_loses_its_groups_and_answers_nothing_for_them(cluster, workload) -> None:
    producer, members = workload
    victim = cluster.nodes[VICTIM]
    _victim_coordinating(cluster, members)
    group = members[2].group
    # A connection to the node, with requests queued while it is stopped: a heartbeat of a
    # group it coordinates and an OffsetFetch. Their answers may only be errors.
    probe = socket.create_connection(("127.0.0.1", victim.port))
    paused_at = time.time()
    victim.pause()
    try:
        probe.sendall(_raw(victim.port, 12, 3, dict(group_id=group, generation_id=1, member_id="m",
                                                    group_instance_id=None)))
        # The groups move once the node timeout passes: FindCoordinator on the live nodes
        # names another node, which loaded the groups. (Members' requests to the stopped
        # node hang, without an error telling them to look elsewhere, until it answers
        # again or their own request timeout passes, as with any broker that stops.)
        others = ",".join(n.bootstrap for n in cluster.nodes if n is not victim)
        wait_for(lambda: all(coordinator_of(others, m.group) != VICTIM for m in members),
                 NODE_TIMEOUT_MS / 1000 + RECOVERY_S, what="the groups moving to another node")
        print(f"groups moved after {time.time() - paused_at:.1f} s")
        hold(max(0.0, paused_at + 15 - time.time()), "the node stays stopped 15 s, past its clients' timeouts")
    finally:
        victim.resume()
    resumed_at = time.time()
    reply = _read_reply(probe)
    assert reply is None or _error_code(reply) in (14, 15, 16), reply  # never a success
    ends = producer.ends_at(resumed_at)
    _consume_again(members, ends, RECOVERY_S, "every group consuming every partition after SIGCONT", resumed_at)
    # A commit is checked against the member's generation (or member epoch): one that
    # succeeds now shows the member kept it across the move.
    for m in members:
        wait_for(lambda m=m: m.of("committed", after=resumed_at), RECOVERY_S, what=f"{m.name} committing")
    _assert_no_rebalance(members, paused_at)
    wait_for(lambda: "expelled" in victim.log() or "lost group-metadata" in victim.log(), 15,
             what="the resumed node noticing it lost its partitions")
    assert _nothing_appended_after_the_seal(cluster.data_dir), "the resumed node wrote to a partition it lost"
    # It gets its partitions back by hand-over, still without a rebalance.
    wait_for(lambda: all(coordinator_of(cluster.bootstrap, m.group) == VICTIM for m in members), 30,
             what="the groups handed back to the resumed node")
    _assert_no_rebalance(members, resumed_at)

    # Nothing acknowledged is lost. The producer keeps running: it is the module's, and the
    # kill test, which random order may run after this one, needs new records to consume.
    checked_at = time.time()
    kept = read_topic(cluster.bootstrap, TOPIC, PARTITIONS)
    assert not missing_acknowledged(producer, kept, before=checked_at)
    assert producer.failed == 0


def _read_reply(sock: socket.socket) -> bytes | None:
    sock.settimeout(10)
    try:
        head = sock.recv(4)
        if len(head) < 4:
            return None                              # closed: no answer at all
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = sock.recv(size - len(body))
            if not chunk:
                return None
            body += chunk
        return body
    except OSError:
        return None
    finally:
        sock.close()


def _error_code(body: bytes) -> int:
    # Heartbeat v3 response: correlation id, throttle time, error code.
    return struct.unpack_from(">h", body, 8)[0]


def _nothing_appended_after_the_seal(data_dir) -> bool:
    """Every segment a node inherited when it took a unit over is no longer than its seal:
    nobody (the stopped node resuming, above all) appended to it afterwards."""
    for seal in data_dir.rglob("seal.json"):
        sealed = json.loads(seal.read_text())["sealed"]
        for name, length in sealed.items():
            segment = seal.parent / name
            if segment.exists() and segment.stat().st_size > length:
                return False
    return True

"""Security in a cluster (issue 32, items 1 and 4): a SASL_SSL listener on every node of a
3-node cluster, which is also the nodes' inter_node_listener (their transaction markers and
verifications as User:admin, a super user); clients bootstrapped on one node's secured
listener are sent to every other node's secured listener (Metadata, FindCoordinator name
each node by its address on the listener the client came in on, as Kafka's listener names
do); SCRAM users and ACLs changed through one node are in force on the others within a
second; a transaction across the three nodes commits; kill -9 of a node keeps it working."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from kgroup.acl_bindings import AclBinding, AclOperation as Op, AclPermission as Perm
from kgroup.acl_bindings import PatternType as Pat, ResourceType as Res
from kgroup.client import AdminClient
from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from kgroup.client.errors import AuthenticationError
from kgroup.client.security import ClientSecurity
from kgroup.error_codes import ErrorCode as E
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.cluster_process import group_coordinated_by
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, SUPER_CN, add_user_offline, make_certs, our_settings
from tests.integration.waits import wait_for

pytestmark = pytest.mark.timeout(180)

MECH = "SCRAM-SHA-256"
TOPIC = "secured-spread"
TXN_TOPIC = "secured-txn"


class SecureCluster:
    """Three nodes sharing a data dir: PLAINTEXT on the --cluster entry, SASL_SSL (SCRAM) as
    listener SECURE, SSL with client certificates required as listener MTLS, the authorizer
    on, User:admin and the operator's certificate super users. The nodes' own requests go
    over SECURE as User:admin from node 0 and over MTLS with the operator's certificate
    from nodes 1 and 2 (inter_node_listener is each node's own choice), so a transaction
    coordinated by node 0 over partitions led by every node uses both."""

    def __init__(self, base) -> None:
        self.certs = make_certs(base / "certs", (SUPER_CN,))
        data = base / "data"
        plain = [free_port() for _ in range(3)]
        self.secure = [free_port() for _ in range(3)]
        mtls = [free_port() for _ in range(3)]
        cluster = ",".join(f"{i}=127.0.0.1:{p}" for i, p in enumerate(plain))
        add_user_offline(data, ADMIN, ADMIN_PASSWORD, MECH)
        cert, key = self.certs.clients[SUPER_CN]
        inter_node = [{"inter_node_listener": "SECURE", "inter_node_username": ADMIN,
                       "inter_node_password": ADMIN_PASSWORD, "inter_node_ssl_cafile": str(self.certs.ca)},
                      *[{"inter_node_listener": "MTLS", "inter_node_ssl_certfile": str(cert),
                         "inter_node_ssl_keyfile": str(key)}] * 2]
        self.nodes = []
        for i in range(3):
            tables = f"""
[[listeners]]
name = "SECURE"
address = "127.0.0.1:{self.secure[i]}"
protocol = "SASL_SSL"
sasl_mechanisms = ["{MECH}"]
ssl_certfile = "{self.certs.server_cert}"
ssl_keyfile = "{self.certs.server_key}"

[[listeners]]
name = "MTLS"
address = "127.0.0.1:{mtls[i]}"
protocol = "SSL"
ssl_certfile = "{self.certs.server_cert}"
ssl_keyfile = "{self.certs.server_key}"
ssl_cafile = "{self.certs.ca}"
ssl_client_auth = "required"

[auth]
authorizer = true
super_users = ["User:{ADMIN}", "User:CN={SUPER_CN},O=kgroup-test"]
connections_max_reauth_ms = 60000
"""
            self.nodes.append(BrokerProcess(data, group={"initial_rebalance_delay_ms": 0}, node_id=i, cluster=cluster,
                                            port=plain[i], name=f"node{i}", tables=tables, extra=inter_node[i]))

    def address(self, node: int) -> str:
        return f"127.0.0.1:{self.secure[node]}"

    def settings(self, user: str = ADMIN, password: str = ADMIN_PASSWORD) -> dict:
        return our_settings("SASL_SSL", MECH, user, password, self.certs)

    def confluent(self, node: int, **more) -> dict:
        opts = {"bootstrap.servers": self.address(node), **self.settings()}
        opts["sasl.mechanisms"] = opts.pop("sasl.mechanism")
        return {**opts, **more}

    async def connect(self, node: int, user: str = ADMIN, password: str = ADMIN_PASSWORD) -> Connection:
        sec = ClientSecurity.from_settings(self.settings(user, password))
        return await Connection.open("127.0.0.1", self.secure[node], "cluster-security", 10, security=sec)


@pytest.fixture(scope="module")
def sc(tmp_path_factory):
    cluster = SecureCluster(tmp_path_factory.mktemp("secure-cluster"))
    before = [n.launch() for n in cluster.nodes]
    try:
        for node, loaded in zip(cluster.nodes, before):
            node.wait_ready(loaded)

        async def create():
            async with AdminClient(cluster.address(1), config=cluster.settings()) as a:
                await a.create_topics({TOPIC: 3, TXN_TOPIC: 3})
        asyncio.run(create())
        yield cluster
    finally:
        for node in cluster.nodes:
            if node.proc is not None:
                node.finish()


def _metadata(topic: str) -> dict:
    return dict(topics=[{"name": topic}], allow_auto_topic_creation=False,
                include_topic_authorized_operations=False)


async def _topic_error(conn: Connection, topic: str) -> int:
    md = await conn.request(ApiKey.METADATA, request_fields(**_metadata(topic)), max_version=12)
    return int(md.topics[0].error_code)


def _produce_and_consume(sc: SecureCluster, bootstrap_node: int, group: str, count: int) -> list[bytes]:
    """`count` records to every partition through confluent-kafka bootstrapped on one
    node's SECURE listener, then consumed back in `group`; what was read."""
    from confluent_kafka import Consumer, Producer

    producer = Producer(sc.confluent(bootstrap_node, acks="all", **{"message.timeout.ms": 20000}))
    sent = [f"{group}-{p}-{i}".encode() for p in range(3) for i in range(count)]
    for value in sent:
        producer.produce(TOPIC, value, partition=int(value.split(b"-")[-2]))
    assert producer.flush(30) == 0
    consumer = Consumer(sc.confluent(bootstrap_node, **{"group.id": group, "auto.offset.reset": "earliest",
                                                        "enable.auto.commit": False}))
    consumer.subscribe([TOPIC])
    got: list[bytes] = []
    deadline = time.monotonic() + 45
    try:
        while time.monotonic() < deadline and not set(sent) <= set(got):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert set(sent) <= set(got)
    return got


def test_clients_on_one_nodes_secured_listener_reach_every_node_on_its_secured_listener(sc):
    from confluent_kafka.admin import AdminClient as ConfluentAdmin

    md = ConfluentAdmin(sc.confluent(1)).list_topics(timeout=30)
    # Every node by its SASL_SSL address, never its PLAINTEXT one; partitions led by all three.
    assert {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()} == {i: sc.address(i) for i in range(3)}
    assert {p.leader for p in md.topics[TOPIC].partitions.values()} == {0, 1, 2}
    group = group_coordinated_by(2, "secured")

    async def coordinator():
        conn = await sc.connect(1)
        try:
            return await conn.request(ApiKey.FIND_COORDINATOR, request_fields(key_type=0, coordinator_keys=[group]),
                                      max_version=4)
        finally:
            await conn.close()
    found = asyncio.run(coordinator()).coordinators[0]
    assert (int(found.error_code), found.node_id, f"{found.host}:{found.port}") == (0, 2, sc.address(2))
    _produce_and_consume(sc, 1, group, 5)


def test_users_and_acls_changed_through_node_0_are_in_force_on_node_2_within_a_second(sc):
    user, password, outsider = f"u-{uuid.uuid4().hex[:6]}", "Pa55-word-1", f"o-{uuid.uuid4().hex[:6]}"
    group = group_coordinated_by(1, "acl-group")

    async def scenario():
        async with AdminClient(sc.address(0), config=sc.settings()) as a:   # node 0 alone
            await a.set_scram_credentials(outsider, MECH, password, 4096)
            await a.set_scram_credentials(user, MECH, password, 4096)
            await a.create_acls([AclBinding(rtype, name, Pat.LITERAL, f"User:{user}", "*", Op.DESCRIBE, Perm.ALLOW)
                                 for rtype, name in ((Res.TOPIC, TOPIC), (Res.GROUP, group))])
        changed = time.monotonic()
        # On every other node, a probe that starts within a second of the change sees it.
        for node in (2, 1):
            while True:
                started = time.monotonic()
                try:
                    conn = await sc.connect(node, user, password)
                    try:
                        if await _topic_error(conn, TOPIC) == E.NONE:
                            # KIP-368 as on a single node: the session has a lifetime to renew before.
                            assert conn._reauth_at is not None
                            break
                    finally:
                        await conn.close()
                except AuthenticationError:
                    pass
                assert started - changed < 1.0, f"the user or the ACL made on node 0 was not in force on node {node}"
        # Without the ACLs: refused on every node (the topic, the group); with them, the group's
        # coordinator named at its secured address; a wrong password: refused on every node.
        for node in range(3):
            for who in (outsider, user):
                conn = await sc.connect(node, who, password)
                try:
                    if who == outsider:
                        assert await _topic_error(conn, TOPIC) == E.TOPIC_AUTHORIZATION_FAILED
                    found = (await conn.request(ApiKey.FIND_COORDINATOR, request_fields(
                        key_type=0, coordinator_keys=[group]), max_version=4)).coordinators[0]
                finally:
                    await conn.close()
                assert (int(found.error_code), found.port) == ((E.GROUP_AUTHORIZATION_FAILED, -1) if who == outsider
                                                               else (E.NONE, sc.secure[1]))
            with pytest.raises(AuthenticationError):
                await sc.connect(node, user, "wrong-" + password)

    asyncio.run(scenario())


def test_a_transaction_across_three_secured_nodes_commits_through_the_inter_node_listener(sc):
    """The transaction coordinator on node 0, the partitions led by nodes 0, 1 and 2, the
    producer bootstrapped on node 1's SECURE listener: node 0's WriteTxnMarkers to nodes 1
    and 2 (over SECURE, as User:admin) and their AddPartitionsToTxn v4 verifications at node
    0 (over MTLS, as the operator's certificate) need ClusterAction, which both principals
    have as super users — as the PLAINTEXT --cluster ports' User:ANONYMOUS has not. A read_committed consumer on another
    node reads exactly the committed records, none of the aborted ones before them."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    txn = group_coordinated_by(0, "secured-txn")
    producer = Producer(sc.confluent(1, **{"transactional.id": txn, "transaction.timeout.ms": 30000,
                                           "message.timeout.ms": 20000}))
    try:
        producer.init_transactions(20)
        batches = {}
        for outcome in ("aborted", "committed"):
            producer.begin_transaction()
            batches[outcome] = [f"{outcome}-{p}-{i}".encode() for p in range(3) for i in range(4)]
            for value in batches[outcome]:
                producer.produce(TXN_TOPIC, value, partition=int(value.split(b"-")[1]))
            if outcome == "aborted":
                producer.abort_transaction(20)
            else:
                producer.commit_transaction(20)
    except KafkaException as exc:
        pytest.fail(f"the transaction across nodes did not complete: {exc}")
    finally:
        producer.flush(1)
    consumer = Consumer(sc.confluent(2, **{"group.id": f"reader-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                           "isolation.level": "read_committed"}))
    consumer.assign([TopicPartition(TXN_TOPIC, p, 0) for p in range(3)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and len(got) < len(batches["committed"]):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        leaders = {p.id: p.leader for p in consumer.list_topics(TXN_TOPIC, timeout=10).topics[TXN_TOPIC]
                   .partitions.values()}
    finally:
        consumer.close()
    assert sorted(got) == sorted(batches["committed"])
    assert set(leaders.values()) == {0, 1, 2}


def test_a_client_without_cluster_action_cannot_write_transaction_markers(sc):
    """WriteTxnMarkers is the nodes' own request: a client principal without ClusterAction
    gets CLUSTER_AUTHORIZATION_FAILED for every partition it names, as from Kafka."""
    user, password = f"m-{uuid.uuid4().hex[:6]}", "Pa55-word-2"
    cls = request_class(ApiKey.WRITE_TXN_MARKERS, 1)
    marker_cls = item(cls, "markers")
    request = build(cls, markers=(build(
        marker_cls, producer_id=1, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
        topics=(build(item(marker_cls, "topics"), name=TXN_TOPIC, partition_indexes=(0, 1, 2)),)),))

    async def scenario():
        async with AdminClient(sc.address(0), config=sc.settings()) as a:
            await a.set_scram_credentials(user, MECH, password, 4096)
        while True:      # the user is known on node 1 within a second
            try:
                conn = await sc.connect(1, user, password)
                break
            except AuthenticationError:
                await asyncio.sleep(0.1)
        try:
            return await conn.request(ApiKey.WRITE_TXN_MARKERS, request, timeout=10)
        finally:
            await conn.close()

    resp = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert sorted((t.name, int(p.partition_index), int(p.error_code))
                  for m in resp.markers for t in m.topics for p in t.partitions) == [
        (TXN_TOPIC, p, E.CLUSTER_AUTHORIZATION_FAILED) for p in range(3)]


def test_kill_9_of_a_node_keeps_the_secured_listener_serving(sc):
    from confluent_kafka.admin import AdminClient as ConfluentAdmin

    sc.nodes[2].kill9()          # the group's coordinator and a partition's leader
    try:
        _produce_and_consume(sc, 1, group_coordinated_by(2, "secured-after-kill"), 3)
        md = ConfluentAdmin(sc.confluent(0)).list_topics(timeout=30)
        assert {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()} == {0: sc.address(0), 1: sc.address(1)}
        assert {p.leader for p in md.topics[TOPIC].partitions.values()} <= {0, 1}
    finally:
        sc.nodes[2].start()
    # The other tests of the module need all three nodes, each leading its partitions and
    # coordinating its groups again.
    async def coordinator(group: str) -> int:
        conn = await sc.connect(0)
        try:
            found = (await conn.request(ApiKey.FIND_COORDINATOR, request_fields(key_type=0, coordinator_keys=[group]),
                                        max_version=4)).coordinators[0]
            return found.node_id if int(found.error_code) == 0 else -1
        finally:
            await conn.close()

    def whole() -> bool:
        md = ConfluentAdmin(sc.confluent(0)).list_topics(timeout=10)
        return ({b.id: f"{b.host}:{b.port}" for b in md.brokers.values()} == {i: sc.address(i) for i in range(3)}
                and all({p.leader for p in md.topics[t].partitions.values()} == {0, 1, 2} for t in (TOPIC, TXN_TOPIC))
                and asyncio.run(coordinator(group_coordinated_by(2, "secured"))) == 2)
    wait_for(whole, 30, what="node 2 back, leading its partitions")

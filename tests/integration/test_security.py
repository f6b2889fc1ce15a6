"""Security over the wire: real clients over SASL_PLAINTEXT, SASL_SSL and mutual TLS; Kafka's
authorization rules, request by request; SCRAM credentials through confluent-kafka's admin
client; the CLI; secrets kept out of logs; ACLs and credentials surviving kill -9; KIP-368
re-authentication."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from kgroup.acl_bindings import AclBinding, AclFilter, AclOperation as Op, AclPermission as Perm
from kgroup.acl_bindings import PatternType as Pat, ResourceType as Res
from kgroup.client import AdminClient, Consumer, Producer
from kgroup.client.cluster import build_request, request_fields
from kgroup.client.connection import Connection
from kgroup.client.errors import AuthenticationError, KafkaConnectionError
from kgroup.client.security import ClientSecurity
from kgroup.error_codes import ErrorCode as E
from kgroup.wire import decode_response, request_class
from kgroup.wire.api_keys import ApiKey
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.clients import ConsumerThread, wait_for
from tests.integration.security_setup import (
    ADMIN,
    ADMIN_PASSWORD,
    SUPER_CN,
    SecureBroker,
    add_user_offline,
    library_options,
    make_certs,
    our_settings,
    secure_broker,
)

pytestmark = pytest.mark.integration

USERS = {"alice": "alice-Pa55", "bob": "bob-Pa55", "mallory": "mallory-Pa55"}
CLIENT_CNS = ("carol",)
KINDS = ["confluent-kafka", "kafka-python", "aiokafka"]


def run(coro):
    return asyncio.run(coro)


def admin(sb: SecureBroker) -> AdminClient:
    return AdminClient(sb.address(sb.sasl_port), config=our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN,
                                                                     ADMIN_PASSWORD))


def acl(principal: str, rtype: Res, name: str, *ops: Op, perm: Perm = Perm.ALLOW,
        pattern: Pat = Pat.LITERAL) -> list[AclBinding]:
    return [AclBinding(rtype, name, pattern, principal, "*", op, perm) for op in ops]


async def _setup(sb: SecureBroker) -> None:
    async with admin(sb) as a:
        for user, password in USERS.items():
            for mech in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
                await a.set_scram_credentials(user, mech, password, 8192)


@pytest.fixture(scope="module")
def sb(tmp_path_factory):
    broker = secure_broker(tmp_path_factory.mktemp("secure"), CLIENT_CNS)
    broker.proc.start()
    try:
        run(_setup(broker))
        yield broker
    finally:
        broker.proc.finish()


def stored_users(sb: SecureBroker) -> set[str]:
    """The users whose SCRAM credentials the broker keeps in its data dir, now."""
    import json
    return set(json.loads((sb.proc.data_dir / "security" / "scram-credentials.json").read_text())["users"])


def grant(sb: SecureBroker, *bindings: AclBinding) -> None:
    async def go():
        async with admin(sb) as a:
            await a.create_acls([b for b in bindings])
    run(go())


def topic_with_records(sb: SecureBroker, topic: str, count: int, partitions: int = 2) -> None:
    async def go():
        async with admin(sb) as a:
            await a.create_topics({topic: partitions})
        settings = {"bootstrap.servers": sb.address(sb.sasl_ssl_port),
                    **our_settings("SASL_SSL", "SCRAM-SHA-256", ADMIN, ADMIN_PASSWORD, sb.certs)}
        async with Producer(settings) as p:
            for i in range(count):
                await p.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
            await p.flush()
    run(go())


def committed(sb: SecureBroker, group: str, require_stable: bool = False) -> dict:
    """The group's committed offsets; `require_stable` waits out a transaction's offsets still
    being committed (KIP-447: the broker answers UNSTABLE_OFFSET_COMMIT and the admin asks again)."""
    async def go():
        async with admin(sb) as a:
            return await a.list_group_offsets(group, require_stable=require_stable)
    return run(go())


def consume_as(sb: SecureBroker, kind: str, principal: str, port: int, options: dict, count: int = 20) -> None:
    """``kind`` reads a new topic in a new group as ``principal`` and commits; checked by what
    the broker stored."""
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    topic_with_records(sb, topic, count)
    grant(sb, *acl(principal, Res.TOPIC, topic, Op.READ, Op.DESCRIBE), *acl(principal, Res.GROUP, group, Op.READ))
    consumer = ConsumerThread(kind, sb.address(port), group, topic, f"{kind}-{principal}", **options)
    consumer.start()
    try:
        wait_for(lambda: len(consumer.tally.consumed) >= count or consumer.tally.error is not None, timeout=60,
                 what=f"{kind} to consume {count} records")
        assert consumer.tally.error is None, consumer.tally.error
        consumer.commit_now()
    finally:
        consumer.stop(commit=False)
    assert consumer.tally.error is None, consumer.tally.error
    assert sorted(v for *_, v in consumer.tally.consumed) == sorted(f"v{i}".encode() for i in range(count))
    assert sum(committed(sb, group).values()) == count


@pytest.mark.parametrize("kind", KINDS)
def test_consume_in_a_group_over_sasl_plaintext_scram_sha_512(sb, kind):
    consume_as(sb, kind, "User:alice", sb.sasl_port,
               library_options(kind, "SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", USERS["alice"]))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
@pytest.mark.parametrize("kind", KINDS)
def test_consume_in_a_group_over_sasl_ssl(sb, kind, mechanism):
    consume_as(sb, kind, "User:bob", sb.sasl_ssl_port,
               library_options(kind, "SASL_SSL", mechanism, "bob", USERS["bob"], sb.certs))


@pytest.mark.parametrize("kind", KINDS)
def test_consume_in_a_group_over_ssl_with_a_client_certificate(sb, kind):
    consume_as(sb, kind, "User:CN=carol,O=kgroup-test", sb.ssl_port,
               library_options(kind, "SSL", certs=sb.certs, client_cn="carol"))


def test_our_consumer_over_every_listener(sb):
    topic = f"ours-{uuid.uuid4().hex[:6]}"
    topic_with_records(sb, topic, 10)
    for principal, port, settings in (
        ("User:alice", sb.sasl_port, our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", USERS["alice"])),
        ("User:bob", sb.sasl_ssl_port, our_settings("SASL_SSL", "PLAIN", "bob", USERS["bob"], sb.certs)),
        ("User:CN=carol,O=kgroup-test", sb.ssl_port, our_settings("SSL", certs=sb.certs, client_cn="carol")),
    ):
        group = f"og-{uuid.uuid4().hex[:6]}"
        grant(sb, *acl(principal, Res.TOPIC, topic, Op.READ), *acl(principal, Res.GROUP, group, Op.READ))

        async def read(settings=settings, group=group, port=port):
            async with Consumer({"bootstrap.servers": sb.address(port), "group.id": group,
                                 "auto.offset.reset": "earliest", "enable.auto.commit": False, **settings}) as c:
                c.subscribe([topic])
                got = []
                async with asyncio.timeout(30):
                    async for r in c:
                        got.append(r.value)
                        if len(got) == 10:
                            break
                await c.commit()
                return got

        assert sorted(run(read())) == sorted(f"v{i}".encode() for i in range(10)), principal
        assert sum(committed(sb, group).values()) == 10

        async def brokers(settings=settings, port=port, group=group):
            async with AdminClient(sb.address(port), config=settings) as a:
                md = await a.metadata(topics=())
                coordinator = await a.find_coordinator(group)
                return [(b.host, b.port) for b in md.brokers], (coordinator.host, coordinator.port)

        # Each listener names itself: Metadata and FindCoordinator give the port connected to.
        assert run(brokers()) == ([("127.0.0.1", port)], ("127.0.0.1", port))


# -- the authorization matrix, request by request ---------------------------------------------

async def _as(sb: SecureBroker, user: str) -> Connection:
    sec = ClientSecurity.from_settings(our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", user, USERS[user]))
    return await Connection.open("127.0.0.1", sb.sasl_port, "matrix", 10, security=sec)


def _join(group: str) -> dict:
    return dict(group_id=group, session_timeout=6000, rebalance_timeout=6000, member_id="",
                group_instance_id=None, protocol_type="consumer",
                protocols=[{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\x00\x00"}])


def _commit(group: str, *topics: str) -> dict:
    return dict(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                topics=[{"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                    "committed_metadata": ""}]} for t in topics])


def _commit_errors(resp) -> dict:
    return {t.name: int(p.error_code) for t in resp.topics for p in t.partitions}


def test_no_read_on_the_group_refuses_join_and_commit(sb):
    topic = f"m1-{uuid.uuid4().hex[:6]}"
    topic_with_records(sb, topic, 1)
    grant(sb, *acl("User:mallory", Res.TOPIC, topic, Op.READ))

    async def go():
        conn = await _as(sb, "mallory")
        try:
            join = await conn.request(ApiKey.JOIN_GROUP, request_fields(**_join("m1-group")), max_version=5)
            commit = await conn.request(ApiKey.OFFSET_COMMIT, request_fields(**_commit("m1-group", topic)))
            return int(join.error_code), _commit_errors(commit)
        finally:
            await conn.close()

    join, commit = run(go())
    assert join == E.GROUP_AUTHORIZATION_FAILED
    assert commit == {topic: E.GROUP_AUTHORIZATION_FAILED}
    assert committed(sb, "m1-group") == {}

    # A real client reports it: confluent-kafka's consumer fails with GROUP_AUTHORIZATION_FAILED.
    from confluent_kafka import Consumer as CKConsumer

    c = CKConsumer({"bootstrap.servers": sb.address(sb.sasl_port), "group.id": "m1-group",
                    **library_options("confluent-kafka", "SASL_PLAINTEXT", "SCRAM-SHA-512", "mallory",
                                      USERS["mallory"])})
    c.subscribe([topic])
    errors = []
    deadline = time.monotonic() + 30
    while not errors and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and msg.error():
            errors.append(msg.error().code())
    c.close()
    from confluent_kafka import KafkaError
    assert errors == [KafkaError.GROUP_AUTHORIZATION_FAILED]


def test_read_on_the_group_but_not_the_topic_cannot_fetch_or_commit_it(sb):
    allowed, secret = f"m2-ok-{uuid.uuid4().hex[:6]}", f"m2-secret-{uuid.uuid4().hex[:6]}"
    topic_with_records(sb, allowed, 3, partitions=1)
    topic_with_records(sb, secret, 3, partitions=1)
    grant(sb, *acl("User:mallory", Res.GROUP, "m2-group", Op.READ), *acl("User:mallory", Res.TOPIC, allowed, Op.READ))

    async def go():
        conn = await _as(sb, "mallory")
        try:
            commit = await conn.request(ApiKey.OFFSET_COMMIT, request_fields(**_commit("m2-group", allowed, secret)))
            fetch = await conn.request(ApiKey.FETCH, request_fields(
                replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                session_epoch=-1, topics=[{"topic": t, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                                      "partition_max_bytes": 1 << 20}]}
                                          for t in (allowed, secret)]), max_version=12)
            return _commit_errors(commit), {t.topic: (int(t.partitions[0].error_code), bytes(t.partitions[0].records or b""))
                                           for t in fetch.responses}
        finally:
            await conn.close()

    commit, fetch = run(go())
    assert commit == {allowed: E.NONE, secret: E.TOPIC_AUTHORIZATION_FAILED}
    assert fetch[secret] == (E.TOPIC_AUTHORIZATION_FAILED, b"")
    assert fetch[allowed][0] == E.NONE and len(fetch[allowed][1]) > 0
    assert committed(sb, "m2-group") == {(allowed, 0): 1}


def test_describe_only_can_describe_but_not_join(sb):
    grant(sb, *acl("User:mallory", Res.GROUP, "m3-group", Op.DESCRIBE))

    async def go():
        conn = await _as(sb, "mallory")
        try:
            described = await conn.request(ApiKey.DESCRIBE_GROUPS, request_fields(groups=["m3-group"],
                                                                           include_authorized_operations=True))
            join = await conn.request(ApiKey.JOIN_GROUP, request_fields(**_join("m3-group")), max_version=5)
            return described.groups[0], int(join.error_code)
        finally:
            await conn.close()

    group, join = run(go())
    assert int(group.error_code) == E.NONE and group.authorized_operations == 1 << Op.DESCRIBE
    assert join == E.GROUP_AUTHORIZATION_FAILED


def test_deny_beats_allow(sb):
    topic = f"m4-{uuid.uuid4().hex[:6]}"
    topic_with_records(sb, topic, 2, partitions=1)
    grant(sb, *acl("User:mallory", Res.TOPIC, topic, Op.ALL),
          *acl("User:mallory", Res.TOPIC, "m4-", Op.READ, perm=Perm.DENY, pattern=Pat.PREFIXED))

    async def go():
        conn = await _as(sb, "mallory")
        try:
            md = await conn.request(ApiKey.METADATA, request_fields(topics=[{"name": topic}], allow_auto_topic_creation=False))
            fetch = await conn.request(ApiKey.FETCH, request_fields(
                replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                session_epoch=-1, topics=[{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                                         "partition_max_bytes": 1 << 20}]}]),
                max_version=12)
            return int(md.topics[0].error_code), int(fetch.responses[0].partitions[0].error_code)
        finally:
            await conn.close()

    described, fetched = run(go())
    assert described == E.NONE                      # ALL still grants DESCRIBE
    assert fetched == E.TOPIC_AUTHORIZATION_FAILED  # but READ is denied
    # And the writes ALL grants go through.
    producer_settings = {"bootstrap.servers": sb.address(sb.sasl_port),
                         **our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", "mallory", USERS["mallory"])}

    async def write():
        async with Producer(producer_settings) as p:
            return await (await p.send(topic, b"allowed"))
    assert run(write()).offset == 2


def test_list_groups_hides_groups_the_principal_may_not_describe_kip231(sb):
    topic_with_records(sb, "m5-topic", 1, partitions=1)
    for group in ("m5-visible", "m5-hidden"):
        async def commit(group=group):
            async with admin(sb) as a:
                await a.cluster.request(await a.cluster.connect(), ApiKey.OFFSET_COMMIT,
                                        request_fields(**_commit(group, "m5-topic")))
        run(commit())
    grant(sb, *acl("User:mallory", Res.GROUP, "m5-visible", Op.DESCRIBE))

    async def listed(user):
        conn = await _as(sb, user) if user != ADMIN else None
        if conn is None:
            async with admin(sb) as a:
                return {g.group_id for g in await a.list_groups()}
        try:
            resp = await conn.request(ApiKey.LIST_GROUPS, request_fields(states_filter=[], types_filter=[]))
            return {g.group_id for g in resp.groups}
        finally:
            await conn.close()

    mine = run(listed("mallory"))
    assert "m5-visible" in mine and "m5-hidden" not in mine
    assert {"m5-visible", "m5-hidden"} <= run(listed(ADMIN))
    grant(sb, *acl("User:mallory", Res.CLUSTER, "kafka-cluster", Op.DESCRIBE))
    assert {"m5-visible", "m5-hidden"} <= run(listed("mallory"))


def test_super_users_can_do_everything_by_password_and_by_certificate(sb):
    operator = our_settings("SSL", certs=sb.certs, client_cn=SUPER_CN)
    for settings, port in ((our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD), sb.sasl_port),
                           (operator, sb.ssl_port)):
        topic, group = f"su-{uuid.uuid4().hex[:6]}", f"su-{uuid.uuid4().hex[:6]}"

        async def everything(settings=settings, port=port, topic=topic, group=group):
            async with AdminClient(sb.address(port), config=settings) as a:
                await a.create_topics({topic: 1})
                await a.produce(topic, 0, [(b"k", b"v")])
                await a.cluster.request(await a.cluster.connect(), ApiKey.OFFSET_COMMIT, request_fields(**_commit(group, topic)))
                assert (await a.describe_group(group)).state == "Empty"
                assert group in {g.group_id for g in await a.list_groups()}
                await a.create_acls(acl("User:nobody", Res.TOPIC, topic, Op.READ))
                assert await a.describe_acls(AclFilter(Res.TOPIC, topic)) == acl("User:nobody", Res.TOPIC, topic, Op.READ)
                await a.delete_acls([AclFilter(Res.TOPIC, topic)])
                await a.delete_groups([group])
                await a.delete_topics([topic])
                return sorted(await a.describe_scram_credentials())

        # Every user the broker keeps (other tests of the module add and delete some): the
        # module's own among them.
        everyone = run(everything())
        assert everyone == sorted(stored_users(sb)) and {ADMIN, *USERS} <= set(everyone)


def test_wrong_password_is_refused_and_the_broker_serves_others(sb):
    async def go():
        with pytest.raises(AuthenticationError, match="invalid credentials"):
            await Connection.open("127.0.0.1", sb.sasl_port, "x", 10, security=ClientSecurity.from_settings(
                our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", "not-her-password")))
        with pytest.raises(AuthenticationError, match="Invalid username or password"):
            await Connection.open("127.0.0.1", sb.sasl_ssl_port, "x", 10, security=ClientSecurity.from_settings(
                our_settings("SASL_SSL", "PLAIN", "alice", "nope", sb.certs)))
        with pytest.raises(KafkaConnectionError, match="TLS"):
            # No client certificate on the mutual-TLS listener.
            await Connection.open("127.0.0.1", sb.ssl_port, "x", 10,
                                  security=ClientSecurity.from_settings(our_settings("SSL", certs=sb.certs)))
        conn = await _as(sb, "alice")
        await conn.close()
    run(go())


# -- SCRAM credentials through confluent-kafka's admin client (KIP-554) ------------------------

def test_confluent_admin_alters_and_describes_scram_credentials(sb):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient as CKAdmin,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    ck = CKAdmin(library_options("confluent-kafka", "SASL_SSL", "SCRAM-SHA-256", ADMIN, ADMIN_PASSWORD, sb.certs)
                 | {"bootstrap.servers": sb.address(sb.sasl_ssl_port)})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000)
    futures = ck.alter_user_scram_credentials([UserScramCredentialUpsertion("erin", info, b"erin-Pa55")])
    futures["erin"].result(10)
    described = ck.describe_user_scram_credentials(["erin"])["erin"].result(10)
    assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 10000)]
    everyone = ck.describe_user_scram_credentials().result(10)
    assert {"erin", ADMIN, *USERS} <= set(everyone)
    # erin can now authenticate with it, over SASL_SSL.
    async def erin_connects():
        conn = await Connection.open("127.0.0.1", sb.sasl_ssl_port, "erin", 10, security=ClientSecurity.from_settings(
            our_settings("SASL_SSL", "SCRAM-SHA-256", "erin", "erin-Pa55", sb.certs)))
        await conn.close()
    run(erin_connects())
    # Too few iterations is refused; deleting removes it.
    bad = ck.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 1), b"x")])
    with pytest.raises(KafkaException, match="iterations"):
        bad["erin"].result(10)
    ck.alter_user_scram_credentials([UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)])["erin"].result(10)
    with pytest.raises(KafkaException, match="RESOURCE_NOT_FOUND|does not exist"):
        ck.describe_user_scram_credentials(["erin"])["erin"].result(10)
    # A non-admin may not touch credentials.
    alice = CKAdmin(library_options("confluent-kafka", "SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", USERS["alice"])
                    | {"bootstrap.servers": sb.address(sb.sasl_port)})
    refused = alice.alter_user_scram_credentials([UserScramCredentialUpsertion("alice", info, b"new")])
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED|[Aa]uthoriz"):
        refused["alice"].result(10)


# -- the CLI ---------------------------------------------------------------------------------

def _kgroup(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return kgroup_inprocess(list(args), stdin)     # the script's own main, without a process start


def test_cli_acls_and_users_with_command_config(sb, tmp_path):
    props = tmp_path / "admin.properties"
    props.write_text("# as kafka-acls.sh takes it\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                     f'    username="{ADMIN}" password="{ADMIN_PASSWORD}";\n'
                     f"ssl.ca.location={sb.certs.ca}\n")
    common = ["--bootstrap-server", sb.address(sb.sasl_ssl_port), "--command-config", str(props)]
    added = _kgroup("acls", "add", *common, "--allow-principal", "User:frank", "--consumer", "--topic", "cli-t",
                    "--group", "cli-g")
    assert added.returncode == 0, added.stderr
    listed = _kgroup("acls", "list", *common, "--topic", "cli-t")
    assert listed.returncode == 0 and "User:frank" in listed.stdout and "READ" in listed.stdout
    assert _kgroup("acls", "remove", *common, "--topic", "cli-t").returncode == 2  # needs --force or a principal
    removed = _kgroup("acls", "remove", *common, "--allow-principal", "User:frank", "--consumer", "--topic", "cli-t",
                      "--group", "cli-g")
    assert removed.returncode == 0 and "Removed 3 ACL(s)" in removed.stdout, removed.stdout + removed.stderr
    user = _kgroup("users", "add", "frank", "--password-stdin", "--mechanism", "SCRAM-SHA-256", *common,
                   stdin="frank-Pa55\n")
    assert user.returncode == 0, user.stderr
    users = _kgroup("users", "list", *common)
    assert "frank\tSCRAM-SHA-256 (iterations 4096)" in users.stdout
    # Deleted again, leaving the module's users as they were for the tests that list them.
    deleted = _kgroup("users", "delete", "frank", *common)
    assert deleted.returncode == 0 and "Deleted SCRAM-SHA-256 credentials of user frank." in deleted.stdout, deleted.stderr
    assert "frank" not in _kgroup("users", "list", *common).stdout
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(props.read_text().replace(ADMIN_PASSWORD, "guess"))
    denied = _kgroup("topics", "list", "--bootstrap-server", sb.address(sb.sasl_ssl_port), "--command-config", str(wrong))
    assert denied.returncode == 1 and denied.stderr.count("\n") == 1 and "Traceback" not in denied.stderr
    assert "authentication as admin" in denied.stderr and "guess" not in denied.stderr


def test_no_secret_in_logs_or_in_users_list(sb):
    offline = _kgroup("users", "list", "--data-dir", str(sb.proc.data_dir))
    stored = (sb.proc.data_dir / "security" / "scram-credentials.json").read_text()
    import json
    keys = [c[k] for u in json.loads(stored)["users"].values() for c in u.values() for k in ("stored_key", "server_key", "salt")]
    secrets = [ADMIN_PASSWORD, *USERS.values(), "erin-Pa55", "frank-Pa55", "not-her-password", "guess"]
    for text in (offline.stdout + offline.stderr, sb.proc.log(), stored):
        for secret in secrets:
            assert secret not in text
    for key in keys:
        assert key not in offline.stdout and key not in sb.proc.log()
    assert "alice\tSCRAM-SHA-256 (iterations 8192), SCRAM-SHA-512 (iterations 8192)" in offline.stdout
    assert (sb.proc.data_dir / "security" / "scram-credentials.json").stat().st_mode & 0o077 == 0


# -- durability and sessions -------------------------------------------------------------------

def _sasl_only(tmp_path: Path, **auth) -> BrokerProcess:
    port = free_port()
    extra = "".join(f"{k} = {v}\n" for k, v in auth.items())
    tables = (f'[[listeners]]\nname = "SASL"\naddress = "127.0.0.1:{port}"\nprotocol = "SASL_PLAINTEXT"\n'
              f'sasl_mechanisms = ["SCRAM-SHA-512"]\n[auth]\nauthorizer = true\nsuper_users = ["User:{ADMIN}"]\n{extra}')
    add_user_offline(tmp_path / "data", ADMIN, ADMIN_PASSWORD)
    return BrokerProcess(tmp_path / "data", group={"initial_rebalance_delay_ms": 0}, tables=tables, port=port,
                         listen=False)


def test_acls_and_credentials_survive_kill_9(tmp_path):
    proc = _sasl_only(tmp_path).start()
    boot = proc.bootstrap
    admin_settings = our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)
    grace = our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", "grace", "grace-Pa55")

    async def setup():
        async with AdminClient(boot, config=admin_settings) as a:
            await a.set_scram_credentials("grace", "SCRAM-SHA-512", "grace-Pa55")
            await a.create_topics({"kept": 1})
            await a.create_acls(acl("User:grace", Res.TOPIC, "kept", Op.DESCRIBE))

    async def grace_sees():
        async with AdminClient(boot, config=grace) as a:
            return sorted((await a.metadata()).topics)

    try:
        run(setup())
        assert run(grace_sees()) == ["kept"]
        proc.kill9()
        proc.start()
        assert run(grace_sees()) == ["kept"]
    finally:
        proc.finish()


def test_sessions_expire_and_clients_re_authenticate_kip368(tmp_path):
    proc = _sasl_only(tmp_path, connections_max_reauth_ms=1500).start()
    boot = proc.bootstrap
    admin_settings = our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)
    try:
        async def setup():
            async with AdminClient(boot, config=admin_settings) as a:
                await a.create_topics({"reauth": 2})
        run(setup())
        consumers = [ConsumerThread(kind, boot, f"reauth-{kind}", "reauth", kind,
                                    **library_options(kind, "SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD))
                     for kind in ("confluent-kafka", "kafka-python")]
        for c in consumers:
            c.start()

        async def produce_for(seconds: float) -> int:
            sent = 0
            async with Producer({"bootstrap.servers": boot, **admin_settings}) as p:
                end = asyncio.get_running_loop().time() + seconds
                while asyncio.get_running_loop().time() < end:
                    await (await p.send("reauth", str(sent).encode()))
                    sent += 1
                    await asyncio.sleep(0.05)
            return sent

        sent = run(produce_for(5.0))  # three session lifetimes, on one producer connection
        for c in consumers:
            wait_for(lambda c=c: len(c.tally.consumed) >= sent or c.tally.error is not None, timeout=60,
                     what=f"{c.kind} to read all {sent}")
            assert c.tally.error is None, c.tally.error
            c.stop(commit=False)

        async def expired_session_closes():
            sec = ClientSecurity.from_settings(admin_settings)
            conn = await Connection.open("127.0.0.1", proc.port, "old-client", 10, security=sec)
            conn._reauth_at = None  # a client that does not re-authenticate
            port = conn._writer.get_extra_info("sockname")[1]
            await asyncio.sleep(1.7)
            with pytest.raises(KafkaConnectionError):
                await conn.request(ApiKey.METADATA, request_fields(topics=[]))
            await conn.close()
            return port
        old_port = run(expired_session_closes())
        closed = [line for line in proc.log().splitlines() if "session expired without re-authentication" in line]
        assert any(f"', {old_port}):" in line for line in closed), closed
        # The clients that re-authenticate: a broker that did not extend their sessions would
        # close each of their connections about every 1.5 s (3+ times each over the 5 s run).
        # Kafka's Java client and kafka-python re-authenticate at a random 85-95% of the
        # lifetime (ours at 85%), 75-225 ms before it ends; a client stalled longer than that
        # on a loaded machine sends its next request late and is closed, as Kafka closes it:
        # an expired session's next request closes the connection unless it is a
        # SaslHandshake, which re-authenticates (Kafka 4.4 itself does this, side by side with
        # kgroup, in tests/reference/test_reauthentication.py). One such miss in the run is
        # tolerated.
        others = [line for line in closed if f"', {old_port}):" not in line]
        assert len(others) <= 1, closed
    finally:
        proc.finish()


# -- Fetch answers on every listener (sendfile where it can, read in through TLS) -------------

LARGE_VALUE = b"z" * 8_000  # 30 of them: an answer whose records are sent from the segment file


def produce_large(bootstrap: str, settings: dict, *topics: str, count: int = 30) -> None:
    """``count`` 8 KB records in partition 0 of each topic (created with one partition)."""
    async def go():
        async with Producer({"bootstrap.servers": bootstrap, **settings}) as p:
            for topic in topics:
                for i in range(count):
                    await p.send(topic, LARGE_VALUE + b"%d" % i, key=b"k%d" % i, partition=0)
            await p.flush()
    run(go())


async def raw_fetch(conn: Connection, *topics: str, version: int = 12) -> bytes:
    """A Fetch of partition 0 of ``topics`` from offset 0: the answer's bytes after its
    correlation id (the same request on any connection must give the same bytes)."""
    request = build_request(request_class(ApiKey.FETCH, version), replica_id=-1, max_wait=0, min_bytes=0,
                            max_bytes=1 << 22, isolation_level=1, session_id=0, session_epoch=-1, topics=[
                                {"topic": t, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                            "partition_max_bytes": 1 << 22}]} for t in topics])
    frame = await conn._roundtrip(ApiKey.FETCH, version, request, 10)
    return frame[4:]


def fetched(version: int, answer: bytes) -> dict:
    """{topic: (error, records)} of a `raw_fetch` answer."""
    response = decode_response(ApiKey.FETCH, version, b"\x00\x00\x00\x00" + answer)[1]
    return {t.topic: (int(t.partitions[0].error_code), bytes(t.partitions[0].records or b""))
            for t in response.responses}


def test_fetch_answers_are_the_same_bytes_on_every_listener_and_a_refused_topic_gets_its_error(sb):
    """The same Fetch as a super user over SASL_PLAINTEXT (records sent with sendfile), over
    SASL_SSL and over mutual TLS (records read in) gives the same bytes; mallory, who may
    read one topic of two, gets TOPIC_AUTHORIZATION_FAILED for the other and the same
    records for hers (the guard's answer is built the copying way)."""
    mine, secret = f"z-ok-{uuid.uuid4().hex[:6]}", f"z-secret-{uuid.uuid4().hex[:6]}"

    async def create():
        async with admin(sb) as a:
            await a.create_topics({mine: 1, secret: 1})
    run(create())
    produce_large(sb.address(sb.sasl_port), our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD),
                  mine, secret)
    grant(sb, *acl("User:mallory", Res.TOPIC, mine, Op.READ))
    listeners = [
        (sb.sasl_port, our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)),
        (sb.sasl_ssl_port, our_settings("SASL_SSL", "SCRAM-SHA-256", ADMIN, ADMIN_PASSWORD, sb.certs)),
        (sb.ssl_port, our_settings("SSL", certs=sb.certs, client_cn=SUPER_CN)),
    ]

    async def go():
        answers = []
        for version in (4, 12):
            for port, settings in listeners:
                conn = await Connection.open("127.0.0.1", port, "fetch-bytes", 10,
                                             security=ClientSecurity.from_settings(settings))
                try:
                    answers.append((version, port, await raw_fetch(conn, mine, secret, version=version)))
                finally:
                    await conn.close()
        conn = await _as(sb, "mallory")
        try:
            return answers, await raw_fetch(conn, mine, secret), await raw_fetch(conn, mine)
        finally:
            await conn.close()

    answers, refused_one, only_mine = run(go())
    for version in (4, 12):
        same = {answer for v, _, answer in answers if v == version}
        assert len(same) == 1, f"v{version}: the listeners' answers differ"
    full = fetched(12, answers[-1][2])
    assert full[mine][0] == E.NONE and full[mine][1].count(LARGE_VALUE) == 30
    assert full[secret][0] == E.NONE and full[secret][1].count(LARGE_VALUE) == 30
    assert fetched(12, refused_one) == {mine: full[mine], secret: (E.TOPIC_AUTHORIZATION_FAILED, b"")}
    assert fetched(12, only_mine) == {mine: full[mine]}


def test_a_tls_consumer_reads_what_a_plaintext_one_reads_without_an_authorizer(tmp_path):
    """No authorizer: both listeners take the plain path; the SSL one reads the records in
    (no sendfile through TLS) and gives the same bytes, and confluent-kafka consumes them."""
    certs = make_certs(tmp_path / "certs", ())
    plain, tls = free_port(), free_port()
    broker = BrokerProcess(tmp_path / "data", port=plain, listen=False, tables=f"""
[[listeners]]
name = "PLAIN"
address = "127.0.0.1:{plain}"
protocol = "PLAINTEXT"

[[listeners]]
name = "TLS"
address = "127.0.0.1:{tls}"
protocol = "SSL"
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"
""")
    broker.start()
    try:
        topic = "large"
        ssl_settings = our_settings("SSL", certs=certs)

        async def create():
            async with AdminClient(f"127.0.0.1:{plain}") as a:
                await a.create_topics({topic: 1})
        run(create())
        produce_large(f"127.0.0.1:{plain}", {}, topic)

        async def both():
            answers = []
            for port, security in ((plain, None), (tls, ClientSecurity.from_settings(ssl_settings))):
                conn = await Connection.open("127.0.0.1", port, "fetch-bytes", 10, security=security)
                try:
                    answers.append(await raw_fetch(conn, topic))
                finally:
                    await conn.close()
            return answers

        over_plain, over_tls = run(both())
        assert over_tls == over_plain and fetched(12, over_tls)[topic][1].count(LARGE_VALUE) == 30

        from confluent_kafka import Consumer as CKConsumer, TopicPartition as CKPartition

        c = CKConsumer({"bootstrap.servers": f"127.0.0.1:{tls}", "group.id": "tls-reader",
                        "enable.auto.commit": False, **library_options("confluent-kafka", "SSL", certs=certs)})
        c.assign([CKPartition(topic, 0, 0)])
        values = []
        deadline = time.monotonic() + 30
        while len(values) < 30 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                values.append(msg.value())
        c.close()
        assert values == [LARGE_VALUE + b"%d" % i for i in range(30)]
    finally:
        broker.finish()


# -- transactions under ACLs -----------------------------------------------------------------

def test_transactions_need_write_on_the_transactional_id_and_read_on_the_group(sb):
    """A confluent-kafka transactional producer as bob: refused without WRITE on its
    transactional id; with it (and WRITE on the topic) it commits records and offsets, which
    needs READ on the group for TxnOffsetCommit and AddOffsetsToTxn."""
    from confluent_kafka import Consumer as CKConsumer
    from confluent_kafka import KafkaException, Producer as CKProducer
    from confluent_kafka import TopicPartition

    topic, group, txn_id = f"tx-{uuid.uuid4().hex[:6]}", f"txg-{uuid.uuid4().hex[:6]}", f"txid-{uuid.uuid4().hex[:6]}"
    topic_with_records(sb, topic, 1, partitions=1)
    bob = library_options("confluent-kafka", "SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", USERS["bob"]) | {
        "bootstrap.servers": sb.address(sb.sasl_port)}
    refused = CKProducer({**bob, "transactional.id": txn_id})
    with pytest.raises(KafkaException, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED|[Aa]uthoriz"):
        refused.init_transactions(20)
    grant(sb, *acl("User:bob", Res.TRANSACTIONAL_ID, txn_id, Op.WRITE), *acl("User:bob", Res.TOPIC, topic, Op.WRITE),
          *acl("User:bob", Res.GROUP, group, Op.READ), *acl("User:bob", Res.TOPIC, topic, Op.READ))
    producer = CKProducer({**bob, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"in-the-transaction")
    producer.send_offsets_to_transaction([TopicPartition(topic, 0, 1)],
                                         CKConsumer({**bob, "group.id": group}).consumer_group_metadata(), 30)
    producer.commit_transaction(30)
    # commit_transaction returns once EndTxn is answered; the commit markers reach the group
    # coordinator after it, so read as a read_committed consumer would (stable offsets).
    assert committed(sb, group, require_stable=True) == {(topic, 0): 1}
    reader = CKConsumer({**bob, "group.id": f"{group}", "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, 0, 1)])
    got = None
    deadline = time.monotonic() + 30
    while got is None and time.monotonic() < deadline:
        msg = reader.poll(0.5)
        if msg is not None and msg.error() is None:
            got = msg.value()
    reader.close()
    del refused, producer  # librdkafka handles: no reconnect attempts after the module's broker stops
    assert got == b"in-the-transaction"


def test_kip932_share_consumer_needs_read_on_the_group_and_the_topic(sb):
    """ShareGroupHeartbeat, ShareFetch and ShareAcknowledge need READ on the share group (and
    DESCRIBE on subscribed topics, READ on fetched ones), ShareGroupDescribe DESCRIBE on it,
    as Kafka's KafkaApis has them."""
    import uuid as _uuid

    from confluent_kafka import ShareConsumer

    from kgroup.client.admin import CONFIG_SET, GROUP_RESOURCE
    from kgroup.wire.api_keys import ApiKey

    topic, group = f"sh-{uuid.uuid4().hex[:6]}", f"sh-g-{uuid.uuid4().hex[:6]}"
    topic_with_records(sb, topic, 6, partitions=1)
    grant(sb, *acl("User:alice", Res.TOPIC, topic, Op.READ, Op.DESCRIBE), *acl("User:alice", Res.GROUP, group, Op.READ),
          *acl("User:mallory", Res.TOPIC, topic, Op.READ, Op.DESCRIBE),          # the topic, not the group
          *acl("User:bob", Res.GROUP, group, Op.READ))                            # the group, not the topic

    async def prepare() -> str:
        async with admin(sb) as a:
            # The records are already there: this share group starts at the beginning.
            await a.alter_configs(GROUP_RESOURCE, group, [("share.auto.offset.reset", CONFIG_SET, "earliest")])
            return str((await a.describe_topic(topic)).topic_id)

    topic_id = run(prepare())

    # Allowed: alice's confluent-kafka ShareConsumer reads every record and accepts it.
    c = ShareConsumer({"bootstrap.servers": sb.address(sb.sasl_port), "group.id": group,
                       **library_options("confluent-kafka", "SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", USERS["alice"])})
    got: list[bytes] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < 6 and time.monotonic() < deadline:
            got += [m.value() for m in c.poll(0.5) if m.error() is None]
        c.commit_sync()
    finally:
        c.close()
    assert sorted(got) == [f"v{i}".encode() for i in range(6)]

    async def offsets() -> dict:
        async with admin(sb) as a:
            return {k: lag for k, (_, lag) in (await a.share_group_offsets(group)).items()}
    # No lag: every record done (the start offset read trails one change, as in Kafka 4.4).
    wait_for(lambda: run(offsets()) == {(topic, 0): 0}, timeout=30, what="the accepted records to be done")

    # Refused: no READ on the group (mallory), or no DESCRIBE/READ on the topic (bob).
    def heartbeat(member: str) -> dict:
        return dict(group_id=group, member_id=member, member_epoch=0, rack_id=None, subscribed_topic_names=[topic])

    def fetch(member: str) -> dict:
        return dict(group_id=group, member_id=member, share_session_epoch=0, max_wait=0, min_bytes=0,
                    max_bytes=1 << 20, max_records=10, batch_size=10, forgotten_topics_data=[],
                    topics=[dict(topic_id=_uuid.UUID(topic_id), partitions=[dict(partition_index=0)])])

    def ack(member: str) -> dict:
        return dict(group_id=group, member_id=member, share_session_epoch=1, topics=[dict(
            topic_id=_uuid.UUID(topic_id), partitions=[dict(partition_index=0, acknowledgement_batches=[
                dict(first_offset=0, last_offset=0, acknowledge_types=[1])])])])

    async def as_user(user: str) -> tuple:
        conn = await _as(sb, user)
        try:
            hb = await conn.request(ApiKey.SHARE_GROUP_HEARTBEAT, request_fields(**heartbeat(f"{user}-m")))
            fe = await conn.request(ApiKey.SHARE_FETCH, request_fields(**fetch(f"{user}-m")))
            ac = await conn.request(ApiKey.SHARE_ACKNOWLEDGE, request_fields(**ack(f"{user}-m")))
            de = await conn.request(ApiKey.SHARE_GROUP_DESCRIBE, request_fields(group_ids=[group],
                                                                         include_authorized_operations=False))
            parts = lambda r: [int(p.error_code) for t in r.responses for p in t.partitions]  # noqa: E731
            return (int(hb.error_code), int(fe.error_code), parts(fe), int(ac.error_code), parts(ac),
                    int(de.groups[0].error_code))
        finally:
            await conn.close()

    mallory = run(as_user("mallory"))
    assert mallory == (E.GROUP_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED, [], E.GROUP_AUTHORIZATION_FAILED,
                       [], E.GROUP_AUTHORIZATION_FAILED), mallory
    bob = run(as_user("bob"))
    assert bob[0] == E.TOPIC_AUTHORIZATION_FAILED, bob                    # may not subscribe to the topic
    assert bob[2] == [E.TOPIC_AUTHORIZATION_FAILED] and bob[4] == [E.TOPIC_AUTHORIZATION_FAILED], bob
    # Nothing the refused requests did changed the group: alice's records stay accepted.
    assert run(offsets()) == {(topic, 0): 0}

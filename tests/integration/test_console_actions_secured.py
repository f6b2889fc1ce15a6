"""The console's actions and record browsing on a broker with SASL and ACLs: done as the signed-in user, with the
ACLs Kafka checks for the API each action sends (ListOffsets: DESCRIBE on the topic;
OffsetCommit: READ on the group and the topic; DeleteGroups: DELETE on the group).
No credentials, a wrong password: 401. A user without the ACL: 403, nothing changed."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import urllib.error
import urllib.request

import pytest

from kgroup.acl_bindings import AclBinding, AclOperation as Op, AclPermission as Perm
from kgroup.acl_bindings import PatternType as Pat, ResourceType as Res
from kgroup.client import AdminClient, Producer
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, add_user_offline, our_settings

pytestmark = pytest.mark.integration

TOPIC, GROUP = "sec-t", "sec-g"
USERS = {"alice": "alice-Pa55", "bob": "bob-Pa55"}


def post(base: str, path: str, body: dict, user: str | None = None, password: str | None = None,
         content_type: str = "application/json") -> tuple[int, dict, dict]:
    headers = {"Content-Type": content_type}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    request = urllib.request.Request(base + path, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"{}")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console-sasl")
    port = free_port()
    tables = (f'[[listeners]]\nname = "SASL"\naddress = "127.0.0.1:{port}"\nprotocol = "SASL_PLAINTEXT"\n'
              f'sasl_mechanisms = ["SCRAM-SHA-512"]\n[auth]\nauthorizer = true\nsuper_users = ["User:{ADMIN}"]\n')
    add_user_offline(tmp / "data", ADMIN, ADMIN_PASSWORD)
    proc = BrokerProcess(tmp / "data", group={"initial_rebalance_delay_ms": 0}, tables=tables, port=port,
                         listen=False, extra={"http_listen": f"127.0.0.1:{free_port()}"}).start()
    proc.base = re.search(r"web console and metrics on (http://\S+/)", proc.log()).group(1)
    proc.settings = our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)
    try:
        yield proc
    finally:
        proc.finish()


def as_admin(proc, work):
    async def go():
        async with AdminClient(proc.bootstrap, config=proc.settings) as a:
            return await work(a)
    return asyncio.run(go())


def grant(proc, principal: str, rtype: Res, name: str, *ops: Op) -> None:
    as_admin(proc, lambda a: a.create_acls([AclBinding(rtype, name, Pat.LITERAL, principal, "*", op, Perm.ALLOW)
                                            for op in ops]))


def test_actions_are_done_as_the_signed_in_user_with_kafkas_acls(secured):
    async def setup(a: AdminClient) -> None:
        for user, password in USERS.items():
            await a.set_scram_credentials(user, "SCRAM-SHA-512", password, 8192)
        await a.create_topics({TOPIC: 2})
        async with Producer({"bootstrap.servers": secured.bootstrap, **secured.settings}) as p:
            for i in range(10):
                await p.send(TOPIC, f"v{i}".encode(), partition=i % 2)
            await p.flush()
        await a.alter_group_offsets(GROUP, {(TOPIC, 0): 5, (TOPIC, 1): 5})
    as_admin(secured, setup)

    def committed() -> dict:
        return as_admin(secured, lambda a: a.list_group_offsets(GROUP))

    # Records are read as the signed-in user too: READ on the topic, as for any consumer.
    browse = f"api/topics/{TOPIC}/records"
    assert post(secured.base, browse, {"partition": 0})[0] == 401
    status, _, body = post(secured.base, browse, {"partition": 0}, "bob", USERS["bob"])
    assert status == 403 and "TOPIC_AUTHORIZATION_FAILED" in body["error"], body
    status, _, body = post(secured.base, browse, {"partition": 1, "offset": 2}, ADMIN, ADMIN_PASSWORD)
    assert status == 200 and [(r["offset"], r["value"]) for r in body["records"]] == [(2, "v5"), (3, "v7"), (4, "v9")]

    reset = {"to": "earliest", "execute": True}
    path = f"api/groups/{GROUP}/reset-offsets"
    # Not signed in, a wrong password, not JSON: refused before anything is looked at.
    status, headers, _ = post(secured.base, path, reset)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert post(secured.base, path, reset, "alice", "wrong")[0] == 401
    assert post(secured.base, path, reset, "alice", USERS["alice"], content_type="text/plain")[0] == 415
    # bob has no ACL: ListOffsets is refused on the topic, nothing committed.
    status, _, body = post(secured.base, path, reset, "bob", USERS["bob"])
    assert status == 403 and "TOPIC_AUTHORIZATION_FAILED" in body["error"], body
    # alice may describe the topic but not read the group: the commit is refused.
    grant(secured, "User:alice", Res.TOPIC, TOPIC, Op.DESCRIBE, Op.READ)
    status, _, body = post(secured.base, path, reset, "alice", USERS["alice"])
    assert status == 403 and "GROUP_AUTHORIZATION_FAILED" in body["error"], body
    assert committed() == {(TOPIC, 0): 5, (TOPIC, 1): 5}
    # With READ on the group, as kafka-consumer-groups --reset-offsets needs: done.
    grant(secured, "User:alice", Res.GROUP, GROUP, Op.READ)
    status, _, body = post(secured.base, path, reset, "alice", USERS["alice"])
    assert status == 200 and body["executed"] and [p["new"] for p in body["plan"]] == [0, 0], body
    assert committed() == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    # Deleting the group needs DELETE on it.
    status, _, body = post(secured.base, f"api/groups/{GROUP}/delete", {}, "alice", USERS["alice"])
    assert status == 403 and "GROUP_AUTHORIZATION_FAILED" in body["error"], body
    grant(secured, "User:alice", Res.GROUP, GROUP, Op.DELETE)
    status, _, body = post(secured.base, f"api/groups/{GROUP}/delete", {}, "alice", USERS["alice"])
    assert status == 200 and body["deleted"], body
    assert committed() == {}

"""Delegation tokens (KIP-48) with Kafka 4.4's own tools and Java clients against kgroup: the
`kafka-delegation-tokens` tool creates, describes, renews and expires a token on a
SASL_PLAINTEXT/SCRAM listener; Kafka's Java producer and consumer (EndToEndLatency, one JVM)
authenticate with the token (tokenauth=true) and produce and consume as its owner; the token
survives kill -9; once expired it no longer authenticates. `kgroup tokens` does the same."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess

import pytest

from kgroup.cli.main import main as cli_main
from kgroup.conformance.raw import RawClient
from kgroup.conformance.sasl import scram_login
from kgroup.testing.reference import require_reference, run_java
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.security_setup import add_user_offline

pytestmark = pytest.mark.integration

TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
END_TO_END = "org.apache.kafka.tools.EndToEndLatency"
ALICE, ALICE_PASSWORD = "alice", "alice-Pa55word"


def _jaas(user: str, password: str, token: bool = False) -> str:
    extra = ' tokenauth="true"' if token else ""
    return (f'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{user}" password="{password}"{extra};\n')


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    require_reference()
    tmp = tmp_path_factory.mktemp("tokens")
    port = free_port()
    tables = f"""
[[listeners]]
name = "SASL"
address = "127.0.0.1:{port}"
protocol = "SASL_PLAINTEXT"
sasl_mechanisms = ["SCRAM-SHA-512"]

[auth]
delegation_token_secret_key = "a-secret-of-the-test"
"""
    add_user_offline(tmp / "data", ALICE, ALICE_PASSWORD, "SCRAM-SHA-512")
    proc = BrokerProcess(tmp / "data", tables=tables, port=port, listen=False,
                         group={"initial_rebalance_delay_ms": 0})
    proc.start()
    try:
        yield proc
    finally:
        proc.finish()


def _tool(broker, config, *args: str) -> str:
    done = run_java(TOKENS, "--bootstrap-server", broker.bootstrap, "--command-config", str(config), *args,
                    timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _token_logs_in(broker, token_id: str, hmac_b64: str) -> int:
    async def login() -> int:
        raw = await RawClient.open(broker.bootstrap, "token-probe")
        try:
            return await scram_login(raw, token_id, hmac_b64, "SCRAM-SHA-512", tokenauth=True)
        finally:
            await raw.close()
    return asyncio.run(login())


def test_kafka_tools_and_java_clients_use_a_token_that_survives_kill9_until_it_expires(broker, tmp_path):
    alice = tmp_path / "alice.properties"
    alice.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n" + _jaas(ALICE, ALICE_PASSWORD))
    # 1. kafka-delegation-tokens --create as alice, renewable by User:admin.
    out = _tool(broker, alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:admin")
    row = next(line for line in out.splitlines() if "User:alice" in line).split()
    token_id, hmac_b64 = row[0], row[1]
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", token_id) and base64.b64decode(hmac_b64), out
    # 2. The token survives kill -9 (the file is written before the answer).
    broker.kill9()
    broker.start()
    # (Without --owner-principal the tool asks for an empty owner list: no tokens, in Kafka too.)
    out = _tool(broker, alice, "--describe", "--owner-principal", "User:alice")
    assert token_id in out and "User:admin" in out, out
    # 3. Kafka's Java producer and consumer authenticate with the token, as alice.
    token = tmp_path / "token.properties"
    token.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     + _jaas(token_id, hmac_b64, token=True))
    done = run_java(END_TO_END, broker.bootstrap, "tokens-e2e", "3", "all", "64", str(token), timeout=90)
    assert done.returncode == 0 and "Avg latency" in done.stdout, done.stdout + done.stderr
    # 4. Renew, then expire now: the token no longer authenticates.
    out = _tool(broker, alice, "--renew", "--renew-time-period", "-1", "--hmac", hmac_b64)
    assert "Completed renew operation" in out, out
    assert _token_logs_in(broker, token_id, hmac_b64) == 0
    out = _tool(broker, alice, "--expire", "--expiry-time-period", "-1", "--hmac", hmac_b64)
    assert "Completed expire operation" in out, out
    assert _token_logs_in(broker, token_id, hmac_b64) == 58   # SASL_AUTHENTICATION_FAILED


def test_kgroup_tokens_create_describe_renew_expire(broker, tmp_path, capsys):
    def _kgroup(*args: str) -> subprocess.CompletedProcess:
        # In this process (kgroup.cli.main), as the `kgroup` command runs it, without a
        # Python start per command.
        code = cli_main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    props = tmp_path / "alice.properties"
    props.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     f"sasl.username={ALICE}\nsasl.password={ALICE_PASSWORD}\n")
    b = ["--bootstrap-server", broker.bootstrap, "--command-config", str(props)]
    done = _kgroup("tokens", "create", "--renewer-principal", "User:admin", "--format", "json", *b)
    assert done.returncode == 0, done.stderr
    (token,) = json.loads(done.stdout)["tokens"]
    assert token["owner"] == token["requester"] == "User:alice" and token["renewers"] == ["User:admin"]
    assert token["expiry_ms"] - token["issue_ms"] == 86_400_000 and token["max_ms"] - token["issue_ms"] == 604_800_000
    done = _kgroup("tokens", "describe", *b)
    assert done.returncode == 0 and token["token_id"] in done.stdout and token["hmac"] in done.stdout, done.stderr
    done = _kgroup("tokens", "renew", "--hmac", token["hmac"], "--renew-time-period", "60000", *b)
    assert done.returncode == 0 and done.stdout.startswith("Renewed: the token now expires at"), done.stderr
    done = _kgroup("tokens", "expire", "--hmac", token["hmac"], *b)
    assert done.returncode == 0 and done.stdout.startswith("Expired"), done.stderr
    # One line, Kafka's error and what to do.
    done = _kgroup("tokens", "renew", "--hmac", token["hmac"], *b)
    assert done.returncode == 1 and "DELEGATION_TOKEN_NOT_FOUND" in done.stderr and len(done.stderr.splitlines()) == 1
    done = _kgroup("tokens", "create", "--owner-principal", "User:admin", *b)   # no authorizer: allowed
    assert done.returncode == 0 and "User:admin" in done.stdout, done.stderr

"""KIP-368 (SASL re-authentication), differential: kgroup and Apache Kafka 4.4, each with
`connections.max.reauth.ms` = 1500 and one SCRAM-SHA-256 user on a SASL_PLAINTEXT listener,
get the same three clients over raw connections, side by side:

- A authenticates (ApiVersions, SaslHandshake v1, SaslAuthenticate v2 twice), never
  re-authenticates, and sends a Metadata request 0.5 s after its session ended: the broker
  closes the connection without an answer.
- B authenticates, runs SaslHandshake and SaslAuthenticate again on the same connection
  before its session ends (at 60% of the lifetime), and sends a Metadata request after the
  first session would have ended but within the second: it is answered.
- C lets its session end like A, then sends SaslHandshake and SaslAuthenticate instead of
  another request: the handshake starts a re-authentication (the session is not checked
  for it), which succeeds, and the Metadata request after it is answered.

This is what kgroup's own test (tests/integration/test_security.py,
test_sessions_expire_and_clients_re_authenticate_kip368) relies on, checked against Kafka
itself rather than read from its source. The judged request is Metadata, one only an
authenticated session may send.

Named normalization: `lifetime_ok` — the session_lifetime_ms of every successful
SaslAuthenticate (A's, B's two, C's two) is compared only as `0 < lifetime <= 1500` (a
broker may give less than connections.max.reauth.ms, when a credential ends sooner).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Iterator

import pytest

from kgroup.conformance.messages import request
from kgroup.conformance.raw import ConnectionClosed, RawClient
from kgroup.conformance.sasl import scram_login
from kgroup.testing.ports import free_port
from kgroup.testing.reference import ReferenceKafka, require_reference
from tests.integration.broker_process import BrokerProcess
from tests.integration.security_setup import add_user_offline

pytestmark = pytest.mark.integration

REAUTH_MS = 1500
USER, PASSWORD = "reauth-user", "reauth-Pa55"
MECHANISM = "SCRAM-SHA-256"
SASL = "SASL"
# When each client acts, in session lifetimes after its first authentication.
EXPIRED_AT = 2.0 / 1.5        # A's Metadata, C's second SaslHandshake: 0.5 s after the end
REAUTH_AT = 0.6               # B's second SaslHandshake
SERVED_AT = 1.15              # B's Metadata: after the first session's end, within the second
EXPECTED = {"lifetime_ok": True, "reauth_error": 0, "expired_request": "closed",
            "reauthenticated_request": "answered", "re_authenticated_after_expiry_request": "answered"}


@pytest.fixture(scope="module")
def kafka_sasl() -> Iterator[tuple[str, int]]:
    """Kafka 4.4 of this module's own: no other reference test limits its sessions."""
    require_reference()
    host = "127.0.0.1"
    sasl_port = free_port(host)
    kafka = ReferenceKafka({"connections.max.reauth.ms": REAUTH_MS}, users={USER: PASSWORD},
                           extra_listeners={SASL: (host, sasl_port, "SASL_PLAINTEXT")})
    # Advertised at the port it listens on: the ports set here are the ones `start` uses.
    kafka.port, kafka.controller_port = free_port(host), free_port(host)
    kafka.extra_ports = {SASL: sasl_port}
    with kafka:
        yield kafka.host, kafka.listener_port(SASL)


@pytest.fixture(scope="module")
def kgroup_sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """`kgroup serve` with only a SASL_PLAINTEXT listener and the same user and limit."""
    data = tmp_path_factory.mktemp("kgroup-reauth") / "data"
    port = free_port()
    add_user_offline(data, USER, PASSWORD, MECHANISM)
    tables = (f'[[listeners]]\nname = "{SASL}"\naddress = "127.0.0.1:{port}"\nprotocol = "SASL_PLAINTEXT"\n'
              f'sasl_mechanisms = ["{MECHANISM}"]\n[auth]\nconnections_max_reauth_ms = {REAUTH_MS}\n')
    broker = BrokerProcess(data, tables=tables, port=port, listen=False).start()
    try:
        yield "127.0.0.1", port
    finally:
        broker.finish()


class _Answers:
    """Hands `scram_login` the answers it asks for, keeping the last (the SaslAuthenticate
    that carries the session lifetime)."""

    last: Any = None

    async def ask(self, raw: RawClient, what: str, req: Any) -> Any:
        self.last = await raw.call(req)
        return self.last


async def _login(raw: RawClient) -> tuple[int, int]:
    """(error code, session_lifetime_ms) of authenticating `raw` as USER."""
    answers = _Answers()
    error = await scram_login(raw, USER, PASSWORD, MECHANISM, t=answers)
    lifetime = answers.last.session_lifetime if error == 0 else None
    return error, int(lifetime.total_seconds() * 1000) if lifetime is not None else 0


async def _metadata(raw: RawClient) -> str:
    """"answered" or "closed" (the broker closed the connection instead of answering)."""
    try:
        await raw.call(request("Metadata", 12, topics=[], allow_auto_topic_creation=False), timeout=5)
    except (ConnectionClosed, ConnectionError):
        return "closed"
    return "answered"


async def _sleep_until(start: float, lifetimes: float) -> None:
    await asyncio.sleep(max(0.0, start + lifetimes * REAUTH_MS / 1000 - time.monotonic()))


async def _authenticated(address: str, name: str) -> tuple[RawClient, int, float]:
    """A connection of client `name` that has sent ApiVersions and authenticated: (it, its
    session lifetime, the monotonic time its session started as the client saw it)."""
    raw = await RawClient.open(address, f"kip368-{name}", timeout=5)
    try:
        await raw.call(request("ApiVersions", 3, client_software_name="kgroup-test", client_software_version="1"))
        error, lifetime = await _login(raw)
    except BaseException:
        await raw.close()
        raise
    if error:
        await raw.close()
        raise AssertionError(f"{address}: client {name} could not authenticate (error {error})")
    return raw, lifetime, time.monotonic()


async def _client_a(address: str) -> tuple[list[int], str]:
    """Never re-authenticates: Metadata after its session ended."""
    raw, lifetime, start = await _authenticated(address, "a")
    try:
        await _sleep_until(start, EXPIRED_AT)
        return [lifetime], await _metadata(raw)
    finally:
        await raw.close()


async def _client_b(address: str) -> tuple[list[int], int, str]:
    """Re-authenticates before its session ends: Metadata after the first session's end."""
    raw, first, start = await _authenticated(address, "b")
    try:
        await _sleep_until(start, REAUTH_AT)
        error, second = await _login(raw)
        if error:
            return [first], error, "not sent"
        await _sleep_until(start, SERVED_AT)
        return [first, second], error, await _metadata(raw)
    finally:
        await raw.close()


async def _client_c(address: str) -> tuple[list[int], str]:
    """Re-authenticates only after its session ended, then sends Metadata ("closed" when the
    re-authentication is, "refused" when it fails)."""
    raw, first, start = await _authenticated(address, "c")
    try:
        await _sleep_until(start, EXPIRED_AT)
        try:
            error, second = await _login(raw)
        except (ConnectionClosed, ConnectionError):
            return [first], "closed"
        return ([first, second], await _metadata(raw)) if error == 0 else ([first], "refused")
    finally:
        await raw.close()


async def observe(host: str, port: int) -> dict[str, Any]:
    address = f"{host}:{port}"
    (a_lifetimes, expired), (b_lifetimes, reauth_error, served), (c_lifetimes, late) = await asyncio.gather(
        _client_a(address), _client_b(address), _client_c(address))
    return {"lifetime_ok": all(0 < lifetime <= REAUTH_MS for lifetime in a_lifetimes + b_lifetimes + c_lifetimes),
            "reauth_error": reauth_error, "expired_request": expired, "reauthenticated_request": served,
            "re_authenticated_after_expiry_request": late}


def test_kip368_an_expired_session_is_closed_and_a_re_authenticated_one_is_served_on_both_brokers(
        kafka_sasl, kgroup_sasl):
    ours = asyncio.run(observe(*kgroup_sasl))
    kafkas = asyncio.run(observe(*kafka_sasl))
    assert ours == kafkas, f"kgroup: {ours}\nKafka 4.4: {kafkas}"
    assert kafkas == EXPECTED, f"kgroup: {ours}\nKafka 4.4: {kafkas}"

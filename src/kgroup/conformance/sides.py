"""Starting the two brokers of a comparison, each behind a recording proxy.

- `reference_side()`: Apache Kafka 4.4 (`ReferenceKafka`) with the comparable settings and an
  extra listener RECORDED advertised at the proxy. Its PLAINTEXT listener stays direct, so
  the same reference serves tests that need no recording.
- `kgroup_side()`: `kgroup serve` with the same group settings
  (`reference.COMPARABLE_GROUP_SETTINGS`), advertising its proxy.
- `narrow_versions(pair)`: the API versions both brokers and kio serve, handed to both
  proxies so clients choose the same versions on both (see `proxy`).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable

from kgroup.conformance import observe
from kgroup.conformance.proxy import RecordingProxy
from kgroup.conformance.raw import RawClient
from kgroup.conformance.sasl import USERS
from kgroup.conformance.target import Pair, Side
from kgroup.testing.reference import COMPARABLE_GROUP_SETTINGS, RETENTION_CHECK_MS, ReferenceKafka
from kgroup.wire.schemas import load_request_schema, load_response_schema

RECORDED = "RECORDED"


# kgroup's side of a comparison applies time retention as rarely as the reference does (see
# RETENTION_CHECK_MS: the scenarios' records carry 1970 timestamps).
COMPARABLE_SETTINGS: dict[str, Any] = {"log_retention_check_interval_ms": RETENTION_CHECK_MS}


def reference_side(settings: dict[str, Any] | None = None, **options: Any) -> Side:
    """Kafka 4.4 started behind a recording proxy (the caller closes it with `close_side`)."""
    proxy = RecordingProxy(name="kafka-proxy").start()
    kafka = ReferenceKafka(settings, extra_listeners={RECORDED: (proxy.host, proxy.port)}, **options)
    return _behind(proxy, kafka, "kafka", lambda: (kafka.host, kafka.listener_port(RECORDED)))


def kgroup_side(settings: dict[str, Any] | None = None, group: dict[str, Any] | None = None) -> Side:
    """`kgroup serve` with the comparable group settings, behind a recording proxy."""
    from kgroup.testing import Broker  # noqa: PLC0415

    proxy = RecordingProxy(name="kgroup-proxy").start()
    broker = Broker(settings={"advertised": proxy.address, **COMPARABLE_SETTINGS, **(settings or {})},
                    group={**COMPARABLE_GROUP_SETTINGS, **(group or {})})
    return _behind(proxy, broker, "kgroup", lambda: broker.bootstrap)


def _behind(proxy: RecordingProxy, handle: Any, name: str, upstream: Callable[[], Any],
            prepare: Callable[[], None] | None = None) -> Side:
    """Start a side's broker (after ``prepare``) and point its proxy at ``upstream()``; a
    broker that cannot start is closed, and its proxy with it."""
    try:
        if prepare is not None:
            prepare()
        handle.start()
    except BaseException:
        proxy.close()
        handle.close()
        raise
    proxy.set_upstream(upstream())
    return Side(name, proxy, handle.bootstrap, handle)


# The secured pair: SCRAM users on both brokers (admin is a super user, alice has no ACL),
# a SASL_PLAINTEXT listener for clients, an authorizer, and two group settings the main
# pair cannot have without slowing every scenario: an initial rebalance delay and a group
# size limit (both broker-wide in Kafka).
# The secured pair signs delegation tokens (KIP-48) with this key: tokens are on at both.
TOKEN_SECRET_KEY = "kgroup-conformance-token-key"
SECURED_GROUP = {"initial_rebalance_delay_ms": 1_500, "max_group_size": 2}


def reference_secured_side() -> Side:
    """Kafka 4.4 with SCRAM on its recorded listener and the StandardAuthorizer."""
    from kgroup.core.config import GroupConfig  # noqa: PLC0415

    proxy = RecordingProxy(name="kafka-secured-proxy").start()
    settings = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # The internal PLAINTEXT listener (inter-broker traffic, the harness's direct
        # connection) is ANONYMOUS: a super user, as an operator's internal listener is.
        "super.users": "User:admin;User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": False,
        "delegation.token.secret.key": TOKEN_SECRET_KEY,
    }
    kafka = ReferenceKafka(settings, group=GroupConfig(**{**COMPARABLE_GROUP_SETTINGS, **SECURED_GROUP}),
                           extra_listeners={RECORDED: (proxy.host, proxy.port, "SASL_PLAINTEXT")}, users=USERS)
    return _behind(proxy, kafka, "kafka", lambda: (kafka.host, kafka.listener_port(RECORDED)))


def kgroup_secured_side() -> Side:
    """`kgroup serve` with the same users, a SASL_PLAINTEXT listener and the authorizer."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from kgroup.testing import Broker  # noqa: PLC0415
    from kgroup.testing.process import free_port  # noqa: PLC0415

    proxy = RecordingProxy(name="kgroup-secured-proxy").start()
    broker = Broker(settings=COMPARABLE_SETTINGS, group={**COMPARABLE_GROUP_SETTINGS, **SECURED_GROUP})
    sasl_port = free_port(proxy.host)
    config = broker.dir / "kgroup.toml"
    # [[listeners]] and [auth] are tables: written after the settings the handle wrote.
    config.write_text(config.read_text() + f"""
[[listeners]]
name = "SASL"
address = "{proxy.host}:{sasl_port}"
advertised = "{proxy.address}"
protocol = "SASL_PLAINTEXT"

[auth]
authorizer = true
super_users = ["User:admin"]
delegation_token_secret_key = "{TOKEN_SECRET_KEY}"
""")

    def add_users() -> None:
        for user, password in USERS.items():
            done = subprocess.run([sys.executable, "-m", "kgroup", "users", "add", user, "--password-stdin",
                                   "--data-dir", str(broker.data_dir), "--mechanism", "SCRAM-SHA-256",
                                   "--mechanism", "SCRAM-SHA-512"],
                                  input=password + "\n", capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise RuntimeError(f"kgroup users add {user}: {done.stderr}")

    return _behind(proxy, broker, "kgroup", lambda: (proxy.host, sasl_port), add_users)


def start_secured_pair() -> Pair:
    """The secured pair (see USERS), both sides started at once; `close_pair` stops it."""
    return _start_both(reference_secured_side, kgroup_secured_side, warm=False)


def close_side(side: Side) -> None:
    side.proxy.close()
    if side.handle is not None:
        side.handle.close()


def kio_knows(api_key: int, version: int) -> bool:
    try:
        load_request_schema(api_key, version)
        load_response_schema(api_key, version)
    except Exception:  # noqa: BLE001 (kio's UnknownAPIKey / UnknownEntity)
        return False
    return True


async def advertised(address: str) -> tuple[dict[int, tuple[int, int]], set[str]]:
    """The ranges and the feature names a broker advertises (ApiVersions v3)."""
    from kgroup.wire.codec import request_class  # noqa: PLC0415

    client = await RawClient.open(address, "kgroup-conformance")
    try:
        cls = request_class(18, 3)
        response = await client.call(cls(client_software_name="kgroup-conformance", client_software_version="1"))
        features = {f.name for f in response.supported_features} | {f.name for f in response.finalized_features}
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}, features
    finally:
        await client.close()


def common_versions(kafka: dict[int, tuple[int, int]], kgroup: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Per API key both serve: the range both serve, cut to the versions kio can read."""
    out = {}
    for key in sorted(set(kafka) & set(kgroup)):
        lo = max(kafka[key][0], kgroup[key][0])
        hi = min(kafka[key][1], kgroup[key][1])
        known = [v for v in range(lo, hi + 1) if kio_knows(key, v)]
        if known:
            out[key] = (min(known), max(known))
    return out


def narrow_versions(pair: Pair) -> dict[str, dict[int, tuple[int, int]]]:
    """Ask both brokers for their ranges; give both proxies the common ones. Returns what
    each advertised (the wire checks and the report use it)."""
    answers = {side.name: asyncio.run(advertised(side.direct)) for side in (pair.kafka, pair.kgroup)}
    ranges = {name: answer[0] for name, answer in answers.items()}
    common = common_versions(ranges["kafka"], ranges["kgroup"])
    features = answers["kafka"][1] & answers["kgroup"][1]
    for side in (pair.kafka, pair.kgroup):
        side.proxy.versions = common
        side.proxy.features = features
    pair.advertised = ranges
    return ranges


def start_pair() -> Pair:
    """Both sides started at once (and narrowed, and warmed); `close_pair` stops them."""
    return _start_both(reference_side, kgroup_side)


def _start_both(kafka_side: Any, our_side: Any, warm: bool = True) -> Pair:
    started: dict[str, Any] = {}

    def start(name: str, how: Any) -> None:
        try:
            started[name] = how()
        except BaseException as exc:  # noqa: BLE001 (re-raised below)
            started[name] = exc

    threads = [threading.Thread(target=start, args=("kafka", kafka_side)),
               threading.Thread(target=start, args=("kgroup", our_side))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [v for v in started.values() if isinstance(v, BaseException)]
    if failed:
        for v in started.values():
            if isinstance(v, Side):
                close_side(v)
        raise failed[0]
    return pair_of(started["kafka"], started["kgroup"], warm)


def pair_of(kafka: Side, kgroup: Side, warm: bool = True) -> Pair:
    """The pair of two running sides, narrowed (and warmed)."""
    pair = Pair(kafka, kgroup)
    narrow_versions(pair)
    if warm:
        warm_up(kafka)
    return pair


def warm_up(side: Side, timeout: float = 60.0) -> None:
    """Have the broker create its internal topics for groups, transactions and share-group
    state, and Kafka fetch its first block of producer ids, now, once, rather than in the
    first scenario that needs them (Kafka answers COORDINATOR_LOAD_IN_PROGRESS, or the share
    coordinator NOT_COORDINATOR, until then: the wire checks of the share-state APIs saw
    that when no share scenario had run before them on the same reference)."""
    async def go() -> None:
        client = await RawClient.open(side.direct, "kgroup-conformance")
        try:
            await observe.coordinator(client, "kgroup-conformance-warm-up", 0, timeout)
            await observe.coordinator(client, "kgroup-conformance-warm-up", 1, timeout)
            await observe.coordinator(client, "kgroup-conformance-warm-up:AAAAAAAAAAAAAAAAAAAAAA:0", 2, timeout)
            await observe.producer_ids_ready(client, timeout)
        finally:
            await client.close()
    asyncio.run(go())


def close_pair(pair: Pair) -> None:
    for side in (pair.kgroup, pair.kafka):
        close_side(side)

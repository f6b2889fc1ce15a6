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
from typing import Any

from kio.index import load_request_schema, load_response_schema

from kgroup.conformance import observe
from kgroup.conformance.proxy import RecordingProxy
from kgroup.conformance.raw import RawClient
from kgroup.conformance.target import Pair, Side
from kgroup.testing.reference import COMPARABLE_GROUP_SETTINGS, ReferenceKafka

RECORDED = "RECORDED"


def reference_side(settings: dict[str, Any] | None = None, **options: Any) -> Side:
    """Kafka 4.4 started behind a recording proxy (the caller closes it with `close_side`)."""
    proxy = RecordingProxy(name="kafka-proxy").start()
    kafka = ReferenceKafka(settings, extra_listeners={RECORDED: (proxy.host, proxy.port)}, **options)
    try:
        kafka.start()
    except BaseException:
        proxy.close()
        kafka.close()
        raise
    proxy.set_upstream((kafka.host, kafka.listener_port(RECORDED)))
    return Side("kafka", proxy, kafka.bootstrap, kafka)


def kgroup_side(settings: dict[str, Any] | None = None, group: dict[str, Any] | None = None) -> Side:
    """`kgroup serve` with the comparable group settings, behind a recording proxy."""
    from kgroup.testing import Broker  # noqa: PLC0415

    proxy = RecordingProxy(name="kgroup-proxy").start()
    broker = Broker(settings={"advertised": proxy.address, **(settings or {})},
                    group={**COMPARABLE_GROUP_SETTINGS, **(group or {})})
    try:
        broker.start()
    except BaseException:
        proxy.close()
        broker.close()
        raise
    proxy.set_upstream(broker.bootstrap)
    return Side("kgroup", proxy, broker.bootstrap, broker)


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
    started: dict[str, Any] = {}

    def start(name: str, how: Any) -> None:
        try:
            started[name] = how()
        except BaseException as exc:  # noqa: BLE001 (re-raised below)
            started[name] = exc

    threads = [threading.Thread(target=start, args=("kafka", reference_side)),
               threading.Thread(target=start, args=("kgroup", kgroup_side))]
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
    return pair_of(started["kafka"], started["kgroup"])


def pair_of(kafka: Side, kgroup: Side) -> Pair:
    """The pair of two running sides, narrowed and warmed."""
    pair = Pair(kafka, kgroup)
    narrow_versions(pair)
    warm_up(kafka)
    return pair


def warm_up(side: Side, timeout: float = 60.0) -> None:
    """Have the broker create its internal topics for groups and transactions now, once,
    rather than in the first scenario that needs them."""
    async def go() -> None:
        client = await RawClient.open(side.direct, "kgroup-conformance")
        try:
            await observe.coordinator(client, "kgroup-conformance-warm-up", 0, timeout)
            await observe.coordinator(client, "kgroup-conformance-warm-up", 1, timeout)
        finally:
            await client.close()
    asyncio.run(go())


def close_pair(pair: Pair) -> None:
    for side in (pair.kgroup, pair.kafka):
        close_side(side)

"""KIP-714 client telemetry without a broker: subscriptions and their selectors, OTLP payloads
decoded in every codec, and a client instance's push timing under a manual clock."""

from __future__ import annotations

import gzip
import uuid

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kgroup.broker.observe.client_metrics_configs import ClientMetricsConfigs, ClientMetricsError, MetricsSubscription
from kgroup.broker.observe.client_telemetry import ClientTelemetry, TelemetryRefused
from kgroup.broker.observe.otlp_metrics import BadPayload, decode
from kgroup.error_codes import ErrorCode as E
from kgroup.wire.record_batch import Compression

POLL_IDLE = "org.apache.kafka.consumer.poll.idle.ratio.avg"
REBALANCES = "org.apache.kafka.consumer.coordinator.rebalance.total"
CLIENT = {"client_id": "app-1", "client_source_address": "10.0.0.7", "client_software_name": "apache-kafka-java",
          "client_software_version": "4.4.0", "client_source_port": "50123"}


def payload(values: dict[str, float], *, tags: dict[str, str] | None = None) -> bytes:
    data = metrics_pb2.MetricsData()
    rm = data.resource_metrics.add()
    rm.resource.attributes.append(KeyValue(key="client_id", value=AnyValue(string_value="app-1")))
    sm = rm.scope_metrics.add()
    for name, value in values.items():
        m = sm.metrics.add(name=name)
        if name.endswith(".total"):
            p = m.sum.data_points.add(as_double=value)
        else:
            p = m.gauge.data_points.add(as_double=value)
        for k, v in (tags or {}).items():
            p.attributes.append(KeyValue(key=k, value=AnyValue(string_value=v)))
    return data.SerializeToString()


def compress(codec: Compression, raw: bytes) -> bytes:
    import cramjam
    return {Compression.NONE: lambda b: b, Compression.GZIP: gzip.compress, Compression.SNAPPY: lambda b: bytes(cramjam.snappy.compress_raw(b)),
            Compression.LZ4: lambda b: bytes(cramjam.lz4.compress(b)),
            Compression.ZSTD: lambda b: bytes(cramjam.zstd.compress(b))}[codec](raw)


# ---- decoding -------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", list(Compression))
def test_a_push_decodes_in_every_codec_a_client_may_use(codec):
    resource, points = decode(codec, compress(codec, payload({POLL_IDLE: 0.25, REBALANCES: 3})))
    assert resource == (("client_id", "app-1"),)
    assert {p.name: p.value for p in points} == {POLL_IDLE: 0.25, REBALANCES: 3.0}


@pytest.mark.parametrize("codec, body", [(Compression.NONE, b"\xff\xff\xff"), (Compression.GZIP, b"not gzip"),
                                         (Compression.ZSTD, b"not zstd"), (Compression.LZ4, b"nope")])
def test_a_payload_that_does_not_decode_is_refused(codec, body):
    with pytest.raises(BadPayload):
        decode(codec, body)


def test_histograms_give_their_sum_and_count():
    data = metrics_pb2.MetricsData()
    m = data.resource_metrics.add().scope_metrics.add().metrics.add(name="h")
    m.histogram.data_points.add(sum=12.5, count=5)
    _, points = decode(0, data.SerializeToString())
    assert {p.name: p.value for p in points} == {"h.sum": 12.5, "h.count": 5.0}


# ---- subscriptions and selectors --------------------------------------------------------------

def sub(**configs: str) -> MetricsSubscription:
    return MetricsSubscription.of("s", configs)


def test_selectors_must_all_match_in_full():
    assert sub().matches(CLIENT)                                        # no selector: every client
    assert sub(match="client_id=app-.*").matches(CLIENT)
    assert not sub(match="client_id=app").matches(CLIENT)              # a full match, not a search
    assert sub(match="client_id=app-1,client_software_name=apache-kafka-.*").matches(CLIENT)
    assert not sub(match="client_id=app-1,client_source_port=1").matches(CLIENT)
    assert sub(match="client_source_address=10\\.0\\.0\\..*").matches(CLIENT)
    assert not sub(match="client_software_version=4.*").matches({**CLIENT, "client_software_version": None})


@pytest.mark.parametrize("configs, code, text", [
    ({"interval.ms": "99"}, E.INVALID_REQUEST,
     "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ({"interval.ms": "soon"}, E.INVALID_CONFIG, "Invalid value soon for configuration interval.ms: Not a number of type INT"),
    ({"colour": "x"}, E.INVALID_REQUEST, "Unknown client metrics configuration: colour"),
    ({"match": "client_name=x"}, E.INVALID_CONFIG, "Illegal client matching pattern: client_name=x"),
    ({"match": "client_id=(a"}, E.INVALID_CONFIG, "Illegal client matching pattern: client_id=(a"),
    ({"match": "client_id=a=b"}, E.INVALID_CONFIG, "Illegal client matching pattern: client_id=a=b"),
])
def test_refused_subscriptions_get_kafkas_texts(tmp_path, configs, code, text):
    store = ClientMetricsConfigs(tmp_path)
    with pytest.raises(ClientMetricsError) as refused:
        store.alter("s", tuple((k, 0, v) for k, v in configs.items()), incremental=True, validate_only=False)
    assert (refused.value.code, refused.value.message) == (code, text)
    assert store.names() == []


def test_subscriptions_are_durable_and_removed_with_their_last_key(tmp_path):
    store = ClientMetricsConfigs(tmp_path)
    store.alter("s", (("metrics", 0, "a. , b."), ("interval.ms", 0, "1000")), incremental=True, validate_only=False)
    again = ClientMetricsConfigs(tmp_path)
    assert again.configs == {"s": {"metrics": "a.,b.", "interval.ms": "1000"}}
    assert [(k, v, source) for k, v, source, _, _ in again.describe("s")] == [
        ("interval.ms", "1000", 7), ("match", "", 5), ("metrics", "a.,b.", 7)]
    again.alter("s", (("metrics", 1, None), ("interval.ms", 1, None)), incremental=True, validate_only=False)
    assert ClientMetricsConfigs(tmp_path).names() == []


# ---- a client instance under a manual clock ------------------------------------------------

def telemetry(tmp_path, **configs: str) -> ClientTelemetry:
    store = ClientMetricsConfigs(tmp_path)
    store.alter("s", tuple((k, 0, v) for k, v in configs.items()), incremental=True, validate_only=False)
    return ClientTelemetry(store, max_bytes=10_000)


def test_a_client_pushes_on_its_interval_and_its_values_are_kept(tmp_path):
    t = telemetry(tmp_path, metrics="org.apache.kafka.consumer.", **{"interval.ms": "1000", "match": "client_id=app-.*"})
    c = t.get_subscriptions(None, CLIENT, now_ms=10_000)
    assert (c.metrics, c.interval_ms) == (("org.apache.kafka.consumer.",), 1000)
    with pytest.raises(TelemetryRefused) as early:
        t.get_subscriptions(c.instance_id, CLIENT, now_ms=10_500)
    assert early.value.code == E.THROTTLING_QUOTA_EXCEEDED
    t.push(c.instance_id, c.subscription_id, False, 4, compress(Compression.ZSTD, payload({POLL_IDLE: 0.5})),
           CLIENT, now_ms=10_100)                 # the first push after a get: at once
    with pytest.raises(TelemetryRefused) as throttled:
        t.push(c.instance_id, c.subscription_id, False, 0, b"", CLIENT, now_ms=10_600)
    assert throttled.value.code == E.THROTTLING_QUOTA_EXCEEDED
    t.push(c.instance_id, c.subscription_id, False, 0, payload({POLL_IDLE: 0.75, REBALANCES: 2}), CLIENT,
           now_ms=11_100)
    assert c.key_metrics() == {"poll-idle-ratio-avg": 0.75, "rebalance-total": 2.0}
    assert t.for_member("app-1", "/10.0.0.7") is c and t.for_member("app-1", "/10.0.0.8") is None
    t.push(c.instance_id, c.subscription_id, True, 0, b"", CLIENT, now_ms=11_200)   # terminating: at once
    with pytest.raises(TelemetryRefused) as after:
        t.push(c.instance_id, c.subscription_id, False, 0, b"", CLIENT, now_ms=20_000)
    assert after.value.code == E.INVALID_REQUEST


@pytest.mark.parametrize("change, code", [
    (dict(subscription=1), E.UNKNOWN_SUBSCRIPTION_ID), (dict(compression=7), E.UNSUPPORTED_COMPRESSION_TYPE),
    (dict(payload=b"x" * 10_001), E.TELEMETRY_TOO_LARGE), (dict(payload=b"\xff\xff"), E.INVALID_RECORD)])
def test_a_bad_push_gets_kafkas_error(tmp_path, change, code):
    t = telemetry(tmp_path, metrics="*")
    c = t.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0 + 300_000)
    push = {"subscription": c.subscription_id, "compression": 0, "payload": b"", **change}
    with pytest.raises(TelemetryRefused) as refused:
        t.push(c.instance_id, push["subscription"], False, push["compression"], push["payload"], CLIENT, 300_001)
    assert refused.value.code == code


def test_a_changed_subscription_gives_a_new_subscription_id_at_once(tmp_path):
    t = telemetry(tmp_path, metrics="a.", **{"interval.ms": "60000"})
    c = t.get_subscriptions(None, CLIENT, now_ms=100_000)
    t.configs.alter("s", (("interval.ms", 0, "30000"),), incremental=True, validate_only=False)
    changed = t.get_subscriptions(c.instance_id, CLIENT, now_ms=100_001)     # not throttled: re-evaluated
    assert changed.subscription_id != c.subscription_id and changed.interval_ms == 30_000
    other = t.get_subscriptions(None, {**CLIENT, "client_id": "x"}, now_ms=100_002)
    assert other.metrics == ("a.",)        # no selector: every client


def test_silent_instances_are_forgotten_and_their_values_counted_out(tmp_path):
    t = telemetry(tmp_path, metrics="*", **{"interval.ms": "1000"})
    c = t.get_subscriptions(None, CLIENT, now_ms=1_000_000)
    t.push(c.instance_id, c.subscription_id, False, 0, payload({POLL_IDLE: 0.1, REBALANCES: 1}), CLIENT, 1_000_001)
    assert (len(t.pushing()), t.points) == (1, 2)
    t.expire(1_000_001 + 60_000)
    assert len(t.pushing()) == 1                     # 60 s (the floor of 3 intervals) not yet past
    t.expire(1_000_001 + 60_001)
    assert (t.pushing(), t.points) == ([], 0)


def test_kip714_software_selectors_match_what_the_clients_api_versions_named(tmp_path):
    """A `match` on client_software_name/version selects the clients whose ApiVersions v3+
    (KIP-511) gave that software, by client id and address, as Kafka matches them."""
    import asyncio

    from kio.schema.api_versions.v3.request import ApiVersionsRequest
    from kio.schema.get_telemetry_subscriptions.v0.request import GetTelemetrySubscriptionsRequest

    from kgroup.broker.apis import ApiVersions
    from kgroup.broker.observe.telemetry_api import TelemetryApi
    from kgroup.wire import RequestHeader

    t = telemetry(tmp_path, metrics="org.apache.kafka.consumer.",
                  match="client_software_name=apache-kafka-java,client_software_version=4\\..*")
    versions = ApiVersions((), on_software=t.note_software)
    api = TelemetryApi(t, clock=lambda: 1_000_000)

    async def subscribed(client_id: str, host: str, software: tuple[str, str] | None) -> tuple[str, ...]:
        if software is not None:
            await versions.api_versions(RequestHeader(18, 3, 1, client_id, False),
                                        ApiVersionsRequest(client_software_name=software[0],
                                                           client_software_version=software[1]), host)
        answer = await api.get_telemetry_subscriptions(
            RequestHeader(71, 0, 2, client_id, False), GetTelemetrySubscriptionsRequest(client_instance_id=None), host)
        return tuple(answer.requested_metrics)

    async def go() -> None:
        assert await subscribed("java-1", "/10.0.0.7", ("apache-kafka-java", "4.4.0")) == ("org.apache.kafka.consumer.",)
        assert await subscribed("rdkafka-1", "/10.0.0.7", ("librdkafka", "2.16.0")) == ()
        assert await subscribed("java-old", "/10.0.0.7", ("apache-kafka-java", "3.9.0")) == ()
        assert await subscribed("java-1", "/10.0.0.8", None) == ()          # another host: not the same client
    asyncio.run(go())

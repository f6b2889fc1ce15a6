"""Pushed client metrics (KIP-714's PushTelemetry payload) decoded to plain data points.

The payload is an OTLP `MetricsData` protobuf (opentelemetry-proto's generated classes),
compressed with the codec the client named (none, gzip, snappy, lz4 or zstd: the record
batches' codecs, wire/record_batch.py). Each gauge or sum data point becomes one `Point`
(name, attributes, value); a histogram or summary point gives its sum and count as
`name.sum` / `name.count`. Anything undecodable raises `BadPayload`, which the telemetry
service answers with INVALID_RECORD, as Kafka does when its receiver cannot export a push.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.wire.record_batch import Compression, CorruptRecord, UnsupportedCompression, decompress

# A compressed payload may not inflate past this (Kafka's telemetry.max.bytes is 1 MiB on the
# wire; metrics compress well, but not a thousandfold).
MAX_INFLATED = 64 << 20


class BadPayload(Exception):
    """The payload is not compressed as said, or not an OTLP MetricsData."""


@dataclass(frozen=True, slots=True)
class Point:
    name: str
    attributes: tuple[tuple[str, str], ...]
    value: float
    time_unix_nano: int = 0


def inflate(compression: int, payload: bytes) -> bytes:
    if compression == Compression.NONE:
        return payload
    try:
        return decompress(Compression(compression), payload, MAX_INFLATED)
    except (ValueError, CorruptRecord, UnsupportedCompression) as exc:
        raise BadPayload(f"cannot decompress the metrics: {exc}") from None


def _attributes(kvs) -> tuple[tuple[str, str], ...]:
    out = []
    for kv in kvs:
        v = kv.value
        kind = v.WhichOneof("value")
        out.append((kv.key, "" if kind is None else str(getattr(v, kind))))
    return tuple(sorted(out))


def _number(point) -> float:
    kind = point.WhichOneof("value")
    return float(point.as_double if kind == "as_double" else point.as_int)


def decode(compression: int, payload: bytes) -> tuple[tuple[tuple[str, str], ...], list[Point]]:
    """(resource attributes, data points) of one push."""
    from opentelemetry.proto.metrics.v1 import metrics_pb2  # noqa: PLC0415 (protobuf only when pushed to)
    from google.protobuf.message import DecodeError  # noqa: PLC0415

    data = metrics_pb2.MetricsData()
    raw = inflate(compression, payload)
    try:
        data.ParseFromString(raw)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise BadPayload(f"not an OTLP MetricsData: {exc}") from None
    resource: tuple[tuple[str, str], ...] = ()
    points: list[Point] = []
    for rm in data.resource_metrics:
        resource = resource or _attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points += _points(metric)
    return resource, points


def _points(metric) -> list[Point]:
    kind = metric.WhichOneof("data")
    name = metric.name
    if kind in ("gauge", "sum"):
        return [Point(name, _attributes(p.attributes), _number(p), p.time_unix_nano)
                for p in getattr(metric, kind).data_points]
    if kind in ("histogram", "summary", "exponential_histogram"):
        out = []
        for p in getattr(metric, kind).data_points:
            attrs = _attributes(p.attributes)
            out += [Point(name + ".sum", attrs, float(p.sum), p.time_unix_nano),
                    Point(name + ".count", attrs, float(p.count), p.time_unix_nano)]
        return out
    return []

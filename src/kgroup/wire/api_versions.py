"""ApiVersions negotiation: our advertised ranges and the too-new-version fallback.

A client opens with ApiVersions at the newest version it knows. If that is newer than ours
(kafka-python 3.0 sends v4 first, a future client v5), Kafka answers UNSUPPORTED_VERSION in
the ApiVersions **v0** body format, with response header v0, listing only ApiVersions' own
range (KIP-511: the one thing the client needs; the other ranges come with the retry); the
client then retries with the highest ApiVersions version both sides know. The body of such a request may be
unparseable, so the broker only needs the correlation id from ``peek_request_header``.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta, i64

from .codec import response_class
from .api_keys import ApiKey
from .versions import ApiRange

UNSUPPORTED_VERSION = 35
NONE = 0

_ZERO_THROTTLE = i32Timedelta.parse(timedelta(0))
_V0 = struct.Struct(">ihi")  # correlation id, error code, array length
_ENTRY = struct.Struct(">hhh")


def api_versions_response(
    request_version: int,
    error: int | None = None,
    *,
    ranges: Iterable[ApiRange],
    throttle_time_ms: int = 0,
    features: Any = None,
) -> Any:
    """kio ApiVersionsResponse at ``request_version`` listing ``ranges`` (the served ones).

    ``error`` is a Kafka error code (default NONE). ``features`` (v3+; anything with
    ``supported`` (name, min, max) triples, ``finalized`` (name, level) pairs and ``epoch``)
    adds the feature levels (KIP-584); without it none are listed (epoch -1).
    """
    cls = response_class(ApiKey.API_VERSIONS, request_version)
    entry_cls = cls.__dataclass_fields__["api_keys"].type.__args__[0]
    entries = tuple(
        entry_cls(
            api_key=i16(r.api_key),
            min_version=i16(r.min_version),
            max_version=i16(r.max_version),
        )
        for r in ranges
    )
    kwargs: dict[str, Any] = {
        "error_code": ErrorCode(error if error is not None else NONE),
        "api_keys": entries,
    }
    if features is not None and "supported_features" in cls.__dataclass_fields__:
        kwargs.update(_feature_fields(cls, request_version, features))
    if "throttle_time" in cls.__dataclass_fields__:
        kwargs["throttle_time"] = (
            _ZERO_THROTTLE
            if throttle_time_ms == 0
            else i32Timedelta.parse(timedelta(milliseconds=throttle_time_ms))
        )
    return cls(**kwargs)


def _feature_fields(cls: type, request_version: int, features: Any) -> dict[str, Any]:
    hints = {name: f.type for name, f in cls.__dataclass_fields__.items()}
    supported_cls = hints["supported_features"].__args__[0]
    finalized_cls = hints["finalized_features"].__args__[0]
    return {
        # v3 cannot carry a supported minimum of 0 (KAFKA-17011): such features are left out.
        "supported_features": tuple(
            supported_cls(name=name, min_version=i16(low), max_version=i16(high))
            for name, low, high in features.supported if request_version >= 4 or low > 0),
        "finalized_features_epoch": i64(features.epoch),
        "finalized_features": tuple(
            finalized_cls(name=name, max_version_level=i16(level), min_version_level=i16(level))
            for name, level in features.finalized),
    }


# ApiVersionsRequest.isValid (KIP-511): a client software name and version (v3+) match this.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
INVALID_REQUEST = 42
REBOOTSTRAP_REQUIRED = 129


def api_versions_answer(request_version: int, request: Any, *, ranges: Iterable[ApiRange],
                        features: Any = None, cluster_id: str | None = None, node_id: int = -1) -> Any:
    """The answer to an ApiVersions request: our ranges (and, v3+, `features`' levels), or
    (v3+) INVALID_REQUEST with no ranges when the client software name or version is not of
    the form Kafka accepts. v5 (KIP-1242): a client that names the cluster and node it means
    to reach (both, or neither: one alone is INVALID_REQUEST) and reached another is told
    REBOOTSTRAP_REQUIRED, with no ranges, as Kafka 4.4 answers."""
    if request_version >= 3 and not all(
            _SOFTWARE.fullmatch(getattr(request, field, "") or "")
            for field in ("client_software_name", "client_software_version")):
        return api_versions_response(request_version, INVALID_REQUEST, ranges=())
    if request_version >= 5:
        asked_cluster, asked_node = request.cluster_id, int(request.node_id)
        if (asked_cluster is None) != (asked_node < 0):
            return api_versions_response(request_version, INVALID_REQUEST, ranges=())
        if asked_cluster is not None and (asked_cluster, asked_node) != (cluster_id, node_id):
            return api_versions_response(request_version, REBOOTSTRAP_REQUIRED, ranges=())
    return api_versions_response(request_version, ranges=ranges, features=features)


def encode_api_versions_fallback(
    correlation_id: int,
    *,
    ranges: Iterable[ApiRange],
) -> bytes:
    """Size-prefixed ApiVersions v0 reply with UNSUPPORTED_VERSION listing, of ``ranges``,
    ApiVersions' own range only, as Kafka 4.4 does (KIP-511).

    Send it when an ApiVersions request's version is newer than ours.
    """
    ranges = tuple(r for r in ranges if r.api_key == ApiKey.API_VERSIONS)
    body = _V0.pack(correlation_id, UNSUPPORTED_VERSION, len(ranges)) + b"".join(
        _ENTRY.pack(r.api_key, r.min_version, r.max_version) for r in ranges
    )
    return struct.pack(">i", len(body)) + body

"""UpdateFeatures (KIP-584, KIP-778's upgrade types): `kafka-features upgrade|downgrade|disable`
and Admin.updateFeatures change the finalized feature levels (admin/features.py holds them and
says which rules Kafka 4.4 applies). DescribeFeatures is ApiVersions v3+: the broker's
ApiVersions answer lists the levels (broker/apis.py)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from kgroup.broker.admin.features import GATES, UPGRADE, FeatureLevels, UpdateRefused
from kgroup.broker.apis import Handler, Routes
from kgroup.error_codes import ErrorCode
from kgroup.storage import StorageError
from kgroup.wire import RequestHeader
from kgroup.wire.codec import response_class
from kgroup.wire.error_responses import error_response
from kgroup.wire.kio_build import build, item

# Kafka answers a successful update's result with ApiError.NONE's text, the error's name.
_NONE_TEXT = "NONE"


class FeaturesApi:
    def __init__(self, features: FeatureLevels) -> None:
        self.features = features

    async def update_features(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        # v0 has AllowDowngrade instead of an upgrade type; Kafka 4.4 answers a v0 downgrade
        # as an upgrade either way (asked of the reference broker), so v0 updates are upgrades.
        updates = tuple((u.feature, int(u.max_version_level), int(getattr(u, "upgrade_type", UPGRADE)))
                        for u in req.feature_updates)
        try:
            self.features.update(updates, validate_only=bool(getattr(req, "validate_only", False)))
        except UpdateRefused as exc:
            return build(cls, error_code=ErrorCode.INVALID_UPDATE_VERSION, error_message=str(exc), results=())
        except StorageError as exc:
            return build(cls, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(exc), results=())
        if "results" not in cls.__dataclass_fields__:
            return build(cls, error_code=ErrorCode.NONE, error_message=None)   # v2: no per-feature results
        result_cls = item(cls, "results")
        return build(cls, error_code=ErrorCode.NONE, error_message=None, results=tuple(
            build(result_cls, feature=name, error_code=ErrorCode.NONE, error_message=_NONE_TEXT)
            for name, _, _ in updates))


def gated(routes: Routes, features: FeatureLevels) -> Routes:
    """`routes` with the handler of each API a feature level turns on (features.GATES)
    answering UNSUPPORTED_VERSION while that feature is below the level, as Kafka 4.4 does."""
    handlers = dict(routes.handlers)
    for key in GATES:
        handler = handlers.get(int(key))
        if handler is not None:
            handlers[int(key)] = _gate(handler, features, int(key))
    return dataclasses.replace(routes, handlers=handlers)


def _gate(handler: Handler, features: FeatureLevels, key: int) -> Handler:
    @functools.wraps(handler)
    async def serve(header: RequestHeader, request: Any, *more: Any) -> Any:
        if not features.enabled(key):
            cls = response_class(key, header.api_version)
            if "error_code" in cls.__dataclass_fields__:
                # A heartbeat's or a fetch's: the error alone, every other field at its zero
                # (member id null, epoch 0), as Kafka's getErrorResponse answers.
                return build(cls, error_code=ErrorCode.UNSUPPORTED_VERSION)
            return error_response(key, header.api_version, request, ErrorCode.UNSUPPORTED_VERSION)
        return await handler(header, request, *more)
    return serve

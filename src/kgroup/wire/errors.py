"""Exceptions raised by the wire layer.

Every failure the wire layer detects in bytes that came from a peer is one of these, so the
broker can decide with one ``except WireError`` whether to answer (UnsupportedVersion,
record errors) or close the connection (FramingError, MalformedRequest). Kafka error codes
that go with an exception are plain ints on the class (``error_code``); the Kafka error-code
enum itself lives in ``kgroup.core.errors``.
"""

from __future__ import annotations


class WireError(Exception):
    """Base of every exception raised by ``kgroup.wire``."""


class FramingError(WireError):
    """The length-prefixed framing is broken (negative or impossible size)."""


class FrameTooLarge(FramingError):
    """A frame announced a size beyond the configured maximum."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class MalformedRequest(WireError):
    """A request header or body could not be decoded (truncated, garbage, trailing bytes).

    ``api_key``, ``api_version`` and ``correlation_id`` are set when the first 8 bytes of
    the frame were readable, else None. Kafka closes the connection in this case.
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class UnsupportedVersion(WireError):
    """The request's API key is unknown to us, disabled, or its version is out of range.

    For ApiVersions the broker answers with ``encode_api_versions_fallback(correlation_id)``;
    for any other API Kafka closes the connection.
    """

    error_code = 35  # UNSUPPORTED_VERSION

    def __init__(self, api_key: int, version: int, correlation_id: int) -> None:
        super().__init__(
            f"unsupported api_key={api_key} version={version} "
            f"(correlation_id={correlation_id})"
        )
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id


class MalformedResponse(WireError):
    """A response frame (client side) could not be decoded."""


class RecordError(WireError):
    """Base of record-batch validation failures; ``error_code`` is the Kafka code."""

    error_code = 2


class CorruptRecord(RecordError):
    """Batch framing or checksum is wrong (CORRUPT_MESSAGE = 2)."""

    error_code = 2  # CORRUPT_MESSAGE


class InvalidRecord(RecordError):
    """A well-formed batch that breaks a rule (INVALID_RECORD = 87), e.g. wrong magic."""

    error_code = 87  # INVALID_RECORD


class UnsupportedCompression(RecordError):
    """The batch uses a codec whose library is not importable (UNSUPPORTED_COMPRESSION_TYPE)."""

    error_code = 76  # UNSUPPORTED_COMPRESSION_TYPE

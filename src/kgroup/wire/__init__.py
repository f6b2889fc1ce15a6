"""Wire layer: framing, request/response codecs over kio, ApiVersions, record batches.

Sans-I/O: nothing here touches a socket. See the module docstrings for details.
"""

from .api_versions import api_versions_response, encode_api_versions_fallback
from .codec import (
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
    request_class,
    response_class,
)
from .errors import (
    CorruptRecord,
    FrameTooLarge,
    FramingError,
    InvalidRecord,
    MalformedRequest,
    MalformedResponse,
    RecordError,
    UnsupportedCompression,
    UnsupportedVersion,
    WireError,
)
from .framing import DEFAULT_MAX_FRAME_SIZE, FrameSplitter, encode_frame, not_kafka
from .api_keys import ApiKey
from .versions import (
    ApiRange,
    all_versions,
    is_flexible,
    request_header_version,
    response_header_version,
)

__all__ = [
    "ApiKey",
    "ApiRange",
    "CorruptRecord",
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameSplitter",
    "FrameTooLarge",
    "FramingError",
    "InvalidRecord",
    "MalformedRequest",
    "MalformedResponse",
    "RecordError",
    "RequestHeader",
    "UnsupportedCompression",
    "UnsupportedVersion",
    "WireError",
    "not_kafka",
    "all_versions",
    "api_versions_response",
    "decode_request",
    "decode_response",
    "encode_api_versions_fallback",
    "encode_frame",
    "encode_request",
    "encode_response",
    "is_flexible",
    "peek_request_header",
    "request_class",
    "request_header_version",
    "response_class",
    "response_header_version",
]

"""Version ranges and header versions: what the codec needs to know about an API version.

`ApiRange` is one API's inclusive version range. Which ranges the broker serves is said by
its concerns' tables (kgroup/broker/*/apis.py, compiled by kgroup/broker/apis.py), which
ranges kgroup's own client speaks by kgroup/client/versions.py; the codec is told which
ranges to accept (`decode_request(frame, served)`).

Flexible versions (request header v2, response header v1) come from kio's schema classes.
ApiVersions responses always use response header v0, even when flexible.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from .schemas import load_request_schema

from .api_keys import ApiKey


@dataclass(frozen=True, slots=True)
class ApiRange:
    """One API's inclusive version range."""

    api_key: ApiKey
    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version

    @property
    def name(self) -> str:
        return self.api_key.kafka_name

    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)


def all_versions(ranges: Iterable[ApiRange]) -> tuple[tuple[int, int], ...]:
    """Every (api_key, version) pair of these ranges."""
    return tuple((r.api_key, v) for r in ranges for v in r.versions())



@cache
def is_flexible(api_key: int, version: int) -> bool:
    """Whether this (api_key, version) uses the flexible (compact, tagged) encoding."""
    return bool(load_request_schema(api_key, version).__flexible__)


def request_header_version(api_key: int, version: int) -> int:
    """Request header version: 2 for flexible versions, else 1."""
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """Response header version: 1 for flexible versions, else 0; ApiVersions is always 0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0

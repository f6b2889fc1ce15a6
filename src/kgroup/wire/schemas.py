"""Which schema class encodes (api_key, version): kio's, or one generated for Kafka 4.4.

kio 0.6.5 ships a class per message version, generated from an older Kafka than the 4.4 we
serve and test against. ``tools/kiogen.py`` (``make schema``) turns Kafka 4.4's JSON specs
into classes of the same format for the versions kio lacks or has differently, in
``kgroup.wire.schema``; its ``index`` lists them. kio's readers and writers introspect the
class (fields, metadata, type hints), so they handle ours like their own.

``load_request_schema`` / ``load_response_schema`` mirror ``kio.index``'s: ours first (a
corrected version replaces kio's), then kio's; they raise kio's ``UnknownAPIKey`` /
``UnknownEntity`` the same way. ``known_versions(api_key)`` is every version either knows.
"""

from __future__ import annotations

from functools import cache
from pkgutil import resolve_name
from typing import Any

from kio.index import UnknownAPIKey, UnknownEntity
from kio.index import load_request_schema as _kio_request
from kio.index import load_response_schema as _kio_response
from kio.schema.index import api_key_map as _kio_names
from kio.schema.index import schema_name_map as _kio_versions
from kio.static.constants import EntityType

from .schema.index import API_NAMES as _OUR_NAMES
from .schema.index import SCHEMAS as _OURS

__all__ = [
    "UnknownAPIKey",
    "UnknownEntity",
    "api_name",
    "generated",
    "known_versions",
    "load_request_schema",
    "load_response_schema",
]


def api_name(api_key: int) -> str:
    """kio's module name of an API (``txn_offset_commit``); UnknownAPIKey if neither knows it."""
    name = _kio_names.get(api_key) or _OUR_NAMES.get(api_key)
    if name is None:
        raise UnknownAPIKey(f"Failed mapping the given API key: {api_key!r}")
    return name


@cache
def _ours(api_key: int, version: int, kind: str) -> type[Any] | None:
    entry = _OURS.get((api_key, version), {}).get(kind)
    return None if entry is None else resolve_name(entry[0])


@cache
def load_request_schema(api_key: int, version: int) -> type[Any]:
    """The request class of (api_key, version): generated for Kafka 4.4, else kio's."""
    return _ours(api_key, version, "request") or _kio_request(api_key, version)


@cache
def load_response_schema(api_key: int, version: int) -> type[Any]:
    """The response class of (api_key, version): generated for Kafka 4.4, else kio's."""
    return _ours(api_key, version, "response") or _kio_response(api_key, version)


@cache
def known_versions(api_key: int) -> tuple[int, ...]:
    """Every version of ``api_key`` with a request class here or in kio, ascending."""
    theirs = _kio_versions.get(_kio_names.get(api_key, ""), {})
    versions = {v for v, kinds in theirs.items() if EntityType.request in kinds}
    versions |= {v for (k, v), kinds in _OURS.items() if k == api_key and "request" in kinds}
    return tuple(sorted(versions))


def generated() -> dict[tuple[int, int], dict[str, str]]:
    """(api_key, version) -> {kind: why} for every generated class ("missing" from kio, or
    "differs": kio's class disagrees with Kafka 4.4's spec on the wire)."""
    return {key: {kind: why for kind, (_, why) in kinds.items()} for key, kinds in _OURS.items()}

"""Which schema class encodes (api_key, version): kio's, or one built from Kafka 4.4's spec.

kio 0.6.5 ships a class per message version, generated from an older Kafka than the 4.4 we
serve and test against. For the versions it lacks or has differently, kgroup carries Kafka
4.4's own JSON message specs (``kgroup/wire/specs/*.json``, package data) and builds the
class from the spec on first use (``spec_classes.build``: the class kio's generator would
have written, so kio's readers and writers, which introspect fields, metadata and types,
handle it like their own). ``specs/index.json`` lists which (api_key, version) come from
which spec; it too is read on first use (so ``make schema`` runs even where it is missing).
To add a message version kio lacks: ``make schema`` (tools/kiogen.py copies its spec from
kafka-clients' jar and rewrites the index); nothing else.

``load_request_schema`` / ``load_response_schema`` mirror ``kio.index``'s: ours first (a
corrected version replaces kio's), then kio's; they raise kio's ``UnknownAPIKey`` /
``UnknownEntity`` the same way. ``known_versions(api_key)`` is every version either knows.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from kio.index import UnknownAPIKey, UnknownEntity
from kio.index import load_request_schema as _kio_request
from kio.index import load_response_schema as _kio_response
from kio.schema.index import api_key_map as _kio_names
from kio.schema.index import schema_name_map as _kio_versions
from kio.static.constants import EntityType

from .spec_classes import build, parse_spec

__all__ = [
    "UnknownAPIKey",
    "UnknownEntity",
    "api_name",
    "generated",
    "known_versions",
    "load_request_schema",
    "load_response_schema",
]


SPECS = "kgroup.wire.specs"


@cache
def _index() -> tuple[dict[int, str], dict[tuple[int, int], dict[str, tuple[str, str]]]]:
    """(api_key -> kio-style module name, (api_key, version) -> {kind: (spec file, why)})."""
    names: dict[int, str] = {}
    ours: dict[tuple[int, int], dict[str, tuple[str, str]]] = {}
    for row in json.loads(files(SPECS).joinpath("index.json").read_text(encoding="utf-8"))["schemas"]:
        names[row["api_key"]] = row["api"]
        ours.setdefault((row["api_key"], row["version"]), {})[row["kind"]] = (row["spec"], row["why"])
    return names, ours


def api_name(api_key: int) -> str:
    """kio's module name of an API (``txn_offset_commit``); UnknownAPIKey if neither knows it."""
    name = _kio_names.get(api_key) or _index()[0].get(api_key)
    if name is None:
        raise UnknownAPIKey(f"Failed mapping the given API key: {api_key!r}")
    return name


@cache
def _spec(file: str) -> dict[str, Any]:
    return parse_spec(files(SPECS).joinpath(file).read_text(encoding="utf-8"))


@cache
def _ours(api_key: int, version: int, kind: str) -> type[Any] | None:
    entry = _index()[1].get((api_key, version), {}).get(kind)
    return None if entry is None else build(_spec(entry[0]), version)


@cache
def load_request_schema(api_key: int, version: int) -> type[Any]:
    """The request class of (api_key, version): built from Kafka 4.4's spec, else kio's."""
    return _ours(api_key, version, "request") or _kio_request(api_key, version)


@cache
def load_response_schema(api_key: int, version: int) -> type[Any]:
    """The response class of (api_key, version): built from Kafka 4.4's spec, else kio's."""
    return _ours(api_key, version, "response") or _kio_response(api_key, version)


@cache
def known_versions(api_key: int) -> tuple[int, ...]:
    """Every version of ``api_key`` with a request class here or in kio, ascending."""
    theirs = _kio_versions.get(_kio_names.get(api_key, ""), {})
    versions = {v for v, kinds in theirs.items() if EntityType.request in kinds}
    versions |= {v for (k, v), kinds in _index()[1].items() if k == api_key and "request" in kinds}
    return tuple(sorted(versions))


def generated() -> dict[tuple[int, int], dict[str, str]]:
    """(api_key, version) -> {kind: why} for every class built from a spec ("missing" from kio,
    or "differs": kio's class disagrees with Kafka 4.4's spec on the wire)."""
    return {key: {kind: why for kind, (_, why) in kinds.items()} for key, kinds in _index()[1].items()}

"""Compact JSON, as the group log's record values and the `__kgroup_events` stream write it.

Why orjson: a consumer group's join writes the new target of every member whose assignment
moved, each a JSON list of partitions, and the standard library's encoder was 19% of the
broker's CPU in a 10,000-member join (py-spy); orjson encodes those lists 10-20x faster and
decodes them 4-7x faster (which the log's replay at start-up pays). Its bytes are the
standard library's `separators=(",", ":")` output for what these values hold (lists, ints,
ASCII strings, None); a non-ASCII string comes out as UTF-8 rather than a \\u escape, which
every JSON reader, ours included, reads as the same string. What orjson refuses (an int
past 64 bits, a non-string key; NaN on reading) goes to the standard library, so nothing
that encoded or decoded before fails now.
"""

from __future__ import annotations

import json

import orjson

_SORTED = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode


def dumps(value: object, sort_keys: bool = False) -> bytes:
    """`value` as compact UTF-8 JSON (keys in order with ``sort_keys``)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else 0)
    except TypeError:
        return (_SORTED if sort_keys else _COMPACT)(value).encode()


def loads(raw: bytes | str) -> object:
    """The value of the JSON text ``raw``; ValueError when it is not JSON."""
    try:
        return orjson.loads(raw)
    except ValueError:
        return json.loads(raw)

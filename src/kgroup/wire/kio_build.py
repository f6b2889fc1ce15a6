"""Building kio messages for whichever version a client speaks.

Each Kafka version of a message is its own kio class with its own fields. Handlers build
responses by name with `build(cls, **fields)`: fields the version lacks are dropped, fields
it has but we did not give keep their schema default, milliseconds become the timedelta
kio wants, and error codes become kio's enum. `item(cls, "field")` finds the class of a
nested entity (the element type of a tuple field) so nested records are built the same way.
Reading requests goes the other way with `get(obj, name, default)` for fields an old version
lacks.
"""

from __future__ import annotations

import dataclasses
import typing
from datetime import datetime, timedelta, timezone
from functools import cache, lru_cache
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.primitive import i32Timedelta, i64Timedelta

_MISSING = dataclasses.MISSING


@cache
def _fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: (hints.get(f.name), f) for f in dataclasses.fields(cls)}


@cache
def item(cls: type, field_name: str) -> type:
    """The entity class of the tuple field `field_name` of `cls`."""
    hint = _fields(cls)[field_name][0]
    for arg in typing.get_args(hint):
        if isinstance(arg, type) and dataclasses.is_dataclass(arg):
            return arg
        for inner in typing.get_args(arg):  # tuple[...] | None
            if isinstance(inner, type) and dataclasses.is_dataclass(inner):
                return inner
    raise TypeError(f"{cls.__name__}.{field_name} is not a tuple of entities")


def has(cls: type, field_name: str) -> bool:
    return field_name in _fields(cls)


def hint(cls: type, field_name: str) -> Any:
    """The type of field `field_name` of `cls`, as its annotation says (resolved once per
    class: `typing.get_type_hints` on every request was 3% of a consumer join's CPU)."""
    return _fields(cls)[field_name][0]


def _convert(hint: Any, value: Any) -> Any:
    if hint is i32Timedelta or hint is i64Timedelta:
        if isinstance(value, int):
            return timedelta(milliseconds=value)
    elif hint is KioErrorCode and not isinstance(value, KioErrorCode):
        try:
            return KioErrorCode(int(value))
        except ValueError:
            # A code newer than kio's list (Kafka 4.4's 134-136): kio writes any `.value`.
            return value
    return value


@cache
def kio_error(code: int) -> Any:
    """kio's error code for `code` exactly as `build` converts it (for a hot path that makes
    its kio entity directly)."""
    return _convert(KioErrorCode, code)


@lru_cache(maxsize=256)
def duration(milliseconds: int) -> timedelta:
    """The timedelta kio holds for a whole number of milliseconds, as `build` converts it."""
    return timedelta(milliseconds=milliseconds)


def build(cls: type, **values: Any) -> Any:
    """An instance of kio class `cls` from the given fields (see the module docstring)."""
    kwargs = {}
    for name, (hint, f) in _fields(cls).items():
        if name in values:
            kwargs[name] = _convert(hint, values[name])
        elif f.default is not _MISSING or f.default_factory is not _MISSING:
            continue
        elif hint is i32Timedelta or hint is i64Timedelta:
            kwargs[name] = timedelta(0)
        elif hint is KioErrorCode:
            kwargs[name] = KioErrorCode(0)
        else:
            kwargs[name] = _zero(hint)
    return cls(**kwargs)


def build_request(cls: type, **fields: Any) -> Any:
    """An instance of kio request class ``cls``; nested entities may be given as dicts
    (lists of dicts), and fields this version lacks are dropped."""
    values: dict[str, Any] = {}
    for name, value in fields.items():
        if not has(cls, name):
            continue
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], Mapping):
            sub = item(cls, name)
            value = tuple(build_request(sub, **v) for v in value)
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return build(cls, **values)


def _zero(hint: Any) -> Any:
    """A neutral value for a required field the caller left out."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        return ()
    args = typing.get_args(hint)
    if type(None) in args:
        return None
    base = hint
    while hasattr(base, "__supertype__"):
        base = base.__supertype__
    if isinstance(base, type) and issubclass(base, datetime):
        return datetime.fromtimestamp(0, timezone.utc)     # a required time: the epoch
    if isinstance(base, type):
        for candidate in (bool, int, str, bytes, float):
            if issubclass(base, candidate):
                return candidate()
        if base.__name__ == "UUID" or "uuid" in base.__module__.lower():
            import uuid
            return uuid.UUID(int=0)
    return None


def replace_fields(obj: Any, **values: Any) -> Any:
    """A copy of kio entity ``obj`` with some fields changed; fields its version lacks are
    skipped, values converted as ``build`` does."""
    fields = _fields(type(obj))
    return dataclasses.replace(obj, **{k: _convert(fields[k][0], v) for k, v in values.items() if k in fields})


def get(obj: Any, name: str, default: Any = None) -> Any:
    """A request field, or `default` when this version of the request lacks it."""
    return getattr(obj, name, default)


def ms(value: Any) -> int:
    """Milliseconds from a kio duration field (timedelta) or a plain int."""
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)

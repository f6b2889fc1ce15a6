"""Build sample instances of kio schema classes by introspecting their dataclass fields.

hypothesis' ``st.from_type`` can build kio entities, but it is slow on the big schemas and
draws values (NaN-free floats, odd timedeltas) that are beside the point here. A sample
fills every field with a small non-default value, so every field and tag is exercised.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import (
    Records,
    TZAware,
    f64,
    i8,
    u16,
    i16,
    i32,
    i32Timedelta,
    i64,
    i64Timedelta,
)

SAMPLE_UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def _primitive(t: type, name: str) -> Any:
    if t is bool:
        return True
    if t is ErrorCode:
        return ErrorCode.none
    if isinstance(t, type):
        if issubclass(t, Records):
            return Records(b"recs")
        if issubclass(t, i32Timedelta):
            return i32Timedelta.parse(datetime.timedelta(milliseconds=1500))
        if issubclass(t, i64Timedelta):
            return i64Timedelta.parse(datetime.timedelta(milliseconds=2500))
        if issubclass(t, TZAware):
            return TZAware.parse(datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC))
        if issubclass(t, f64):
            return f64(1.5)
        if issubclass(t, i8):
            return t(3)
        if issubclass(t, u16):
            return t(8080)
        if issubclass(t, i16):
            return t(4)
        if issubclass(t, i32):
            return t(5)
        if issubclass(t, i64):
            return t(6)
        if issubclass(t, str):
            return t(f"{name}-x")
        if issubclass(t, bytes):
            return t(b"\x00\x01b")
        if t is uuid.UUID:
            return SAMPLE_UUID
    raise TypeError(f"no sample for {t!r} ({name})")


def sample_value(t: Any, name: str) -> Any:
    origin = typing.get_origin(t)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [a for a in typing.get_args(t) if a is not types.NoneType]
        return sample_value(inner, name)
    if origin is tuple:
        inner = typing.get_args(t)[0]
        return (sample_value(inner, name),)
    if dataclasses.is_dataclass(t):
        return sample(t)
    return _primitive(t, name)


def sample(cls: type[Any]) -> Any:
    """An instance of kio class ``cls`` with every field set to a small sample value."""
    kwargs = {f.name: sample_value(f.type, f.name) for f in dataclasses.fields(cls)}
    return cls(**kwargs)


def minimal(cls: type[Any]) -> Any:
    """An instance with only the required fields set (tuples empty, optionals None)."""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        origin = typing.get_origin(f.type)
        if origin in (types.UnionType, typing.Union):
            kwargs[f.name] = None
        elif origin is tuple:
            kwargs[f.name] = ()
        else:
            kwargs[f.name] = sample_value(f.type, f.name)
    return cls(**kwargs)

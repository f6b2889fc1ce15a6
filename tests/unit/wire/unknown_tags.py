"""Requests carrying tagged fields their schema does not know, as a newer client sends them.

``frame_with_unknown_tags(data, api_key, version, correlation_id, client_id, request)``
encodes ``request`` like ``encode_request`` does, but every flexible struct in it — the
request header, the body, each nested entity — may carry extra tagged fields with tags its
class does not declare (drawn with hypothesis' ``data``). It works by deriving, per kio
class, a dataclass with the same fields plus a few ``bytes`` fields tagged with unknown
numbers, and letting kio's writer encode that: the bytes are what Kafka's writer would send
for a schema that has those fields. With ``everywhere=True`` the header and the body each carry
at least one (a nested entity still may or may not).
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from typing import Any

from hypothesis import strategies as st
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

MAX_TAG = 2**31 - 1          # Kafka reads tags as an int from an unsigned varint


def _unwrap(hint: Any) -> tuple[Any, bool, bool]:
    nullable = False
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not types.NoneType]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0]
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], True, nullable
    return hint, False, nullable


class _Extender:
    """Per original class one derived class (with its drawn unknown tags) for one example."""

    def __init__(self, data: st.DataObject, required: frozenset[type] = frozenset()) -> None:
        self.data = data
        self.required = required      # classes that get at least one unknown tag
        self.classes: dict[type, tuple[type, tuple[int, ...]]] = {}

    def cls(self, cls: type) -> tuple[type, tuple[int, ...]]:
        if cls in self.classes:
            return self.classes[cls]
        hints = typing.get_type_hints(cls)
        known = {int(f.metadata["tag"]) for f in dataclasses.fields(cls) if "tag" in f.metadata}
        extra: tuple[int, ...] = ()
        if cls.__flexible__:
            extra = tuple(self.data.draw(st.lists(
                st.one_of(st.integers(0, 40), st.integers(0, MAX_TAG)).filter(lambda t: t not in known),
                min_size=1 if cls in self.required else 0, max_size=3, unique=True),
                label=f"unknown tags of {cls.__name__}"))
        fields = []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            element, array, nullable = _unwrap(hint)
            if dataclasses.is_dataclass(element):
                derived = self.cls(element)[0]
                hint = tuple[derived, ...] if array else derived
                if nullable:
                    hint = hint | None
            kwargs: dict[str, Any] = {"metadata": f.metadata}
            if f.default is not dataclasses.MISSING:
                kwargs["default"] = self.value(f.default, quiet=True)
            elif f.default_factory is not dataclasses.MISSING:
                kwargs["default_factory"] = f.default_factory
            fields.append((f.name, hint, dataclasses.field(**kwargs)))
        for tag in extra:
            fields.append((f"unknown_{tag}", bytes,
                           dataclasses.field(metadata={"kafka_type": "bytes", "tag": tag}, default=b"")))
        namespace = {k: getattr(cls, k) for k in ("__type__", "__version__", "__flexible__", "__api_key__",
                                                  "__header_schema__") if hasattr(cls, k)}
        # The same name: kio special-cases "RequestHeader" (its client_id stays a legacy string).
        derived = dataclasses.make_dataclass(cls.__name__, fields, namespace=namespace,
                                             frozen=True, slots=True, kw_only=True)
        self.classes[cls] = (derived, extra)
        return derived, extra

    def value(self, value: Any, quiet: bool = False) -> Any:
        """``value`` as an instance of its derived class; the unknown fields drawn (empty, and
        so not written, when ``quiet``)."""
        if value is None or not dataclasses.is_dataclass(value):
            return value
        derived, extra = self.cls(type(value))
        kwargs = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if isinstance(v, tuple):
                v = tuple(self.value(x, quiet) for x in v)
            else:
                v = self.value(v, quiet)
            kwargs[f.name] = v
        # An empty value is the field's default, which is not written: a class that must
        # carry its unknown tags gets at least a byte in each.
        least = 1 if type(value) in self.required else 0
        for tag in extra:
            kwargs[f"unknown_{tag}"] = b"" if quiet else self.data.draw(
                st.binary(min_size=least, max_size=6), label=f"tag {tag}")
        return derived(**kwargs)


def uvarint(n: int) -> bytes:
    """An unsigned varint, as Kafka writes one."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def encode(cls: type, value: Any) -> bytes:
    chunks: list[bytes] = []

    class Sink:
        def write(self, b: bytes) -> int:
            chunks.append(bytes(b))
            return len(b)

    entity_writer(cls)(Sink(), value)
    return b"".join(chunks)


def frame_with_unknown_tags(data: st.DataObject, api_key: int, version: int, correlation_id: int,
                            client_id: str | None, request: Any, *, everywhere: bool = False) -> bytes:
    """A size-prefixed request frame like ``encode_request``'s, with unknown tagged fields
    (with ``everywhere``, at least one in the header and one in the body)."""
    header_cls = request.__header_schema__
    extender = _Extender(data, frozenset({header_cls, type(request)}) if everywhere else frozenset())
    header = header_cls(request_api_key=i16(api_key), request_api_version=i16(version),
                        correlation_id=i32(correlation_id), client_id=client_id)
    header = extender.value(header)
    body = extender.value(request)
    payload = encode(type(header), header) + encode(type(body), body)
    return struct.pack(">i", len(payload)) + payload

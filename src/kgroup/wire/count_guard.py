"""A cheap walk of a request body that lets kio's native reader run only where it is safe.

Why: kio's native reader (Rust) reserves room for an array's declared count before it reads
one element. A 51-byte Fetch frame declaring ~2**35 entries made the Rust allocator abort the
whole broker process — no exception, every client gone. ``kafka_reader`` (Kafka's rules in
Python) refuses such a count before allocating, but it is 5-25x slower on the hot APIs
(Produce, Fetch, OffsetCommit). kio's native reader itself bounds a string's, a byte
array's and a tagged-field count by the bytes left (it raises; tests/unit/wire/
test_count_guard.py runs each case in a child process), so only array counts can abort it.

How: ``guard(cls)`` compiles, once per request class, a Python function that walks a body
the way kio and Kafka read it, reading only lengths and counts: a run of fixed-size fields
is one ``pos += n``, an array of fixed-size elements one multiplication, a string, byte
array or records field a length and a jump. Every array count, length and tagged-field
count must fit in the bytes remaining (Kafka's own rule for arrays: ``Tried to allocate a
collection of size N, but there are only M bytes remaining``), and the walk must end inside
the frame. Anything it does not expect — a count over the bytes left, a varint over five
bytes, a nullable-struct marker other than -1/1, an unknown tag (kio raises on it; Kafka
skips it), a known tagged field whose value does not end where its size says — raises
``CountsUnsafe``. The codec then reads the frame with ``kafka_reader``, which gives Kafka's
answer (a decoded request, or Kafka's error), so the guard never has to be right about
what Kafka refuses, only never wrong about what is safe: where it passes, every count kio
will see is backed by bytes of the frame, so nothing kio allocates exceeds the frame's size
times a constant. Only classes with an array field are guarded (``None`` otherwise).
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.static.constants import EntityType

from .kafka_reader import unwrap, has_arrays

__all__ = ["CountsUnsafe", "guard"]

Walker = Callable[[Any, int, int], int]   # (buffer, offset, end) -> offset after the value


class CountsUnsafe(ValueError):
    """Not shown safe for kio's native reader: read with Kafka's rules instead."""


_FIXED_SIZE = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
    "float64": 8, "uuid": 16, "error_code": 2, "timedelta_i32": 4, "timedelta_i64": 8,
    "datetime_i64": 8,
}
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from


def _uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most five bytes (Kafka's and kio's limit), unmasked: a value
    of 2**31 or more is refused by every comparison with the bytes left."""
    value = 0
    for shift in (0, 7, 14, 21, 28):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
    raise CountsUnsafe("varint over five bytes")


def _tags(known: dict[int, Walker]) -> Walker:
    """The tagged fields of a flexible struct, when there are any (the rare path)."""
    def walk(buf: Any, pos: int, end: int) -> int:
        n, pos = _uvarint(buf, pos)
        if n > end - pos:
            raise CountsUnsafe(f"{n} tagged fields in {end - pos} bytes")
        for _ in range(n):
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
            if size > end - pos:
                raise CountsUnsafe(f"tagged field of {size} bytes in {end - pos}")
            field = known.get(tag)
            if field is None:
                raise CountsUnsafe(f"unknown tag {tag}")
            start = pos
            pos = field(buf, pos, end)
            if pos != start + size:
                raise CountsUnsafe(f"tagged field {tag} does not fill its {size} bytes")
        return pos

    return walk


def _fixed_size(cls: type) -> int | None:
    """The size of every encoding of ``cls`` if it is the same for all (a non-flexible
    struct of fixed-size fields only), else None."""
    if cls.__flexible__:
        return None
    hints = typing.get_type_hints(cls)
    size = 0
    for f in dataclasses.fields(cls):
        element, array, nullable = unwrap(hints[f.name])
        one = None if array or dataclasses.is_dataclass(element) else _FIXED_SIZE.get(f.metadata["kafka_type"])
        if one is None:
            return None
        size += one
    return size


class _Emitter:
    """Writes the source of one walker: straight-line code, one loop per array level."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.skip = 0                  # fixed-size bytes passed but not yet added to pos
        self.names = itertools.count()
        self.scope: dict[str, Any] = {"_uvarint": _uvarint, "_I16": _I16, "_I32": _I32,
                                      "CountsUnsafe": CountsUnsafe}

    def line(self, ind: int, text: str) -> None:
        self.flush(ind)
        self.lines.append("    " * ind + text)

    def flush(self, ind: int) -> None:
        if self.skip:
            self.lines.append("    " * ind + f"pos += {self.skip}")
            self.skip = 0

    def count(self, ind: int, flexible: bool, wide: bool) -> str:
        """Reads a length or count into a fresh name (-1: null) and refuses one over the
        bytes left; ``wide``: int32 when not flexible (arrays, bytes), else int16."""
        c = f"c{next(self.names)}"
        if flexible:
            self.line(ind, f"{c} = buf[pos]")
            self.line(ind, f"if {c} < 0x80:")
            self.line(ind + 1, "pos += 1")
            self.line(ind, "else:")
            self.line(ind + 1, f"{c}, pos = _uvarint(buf, pos)")
            self.line(ind, f"{c} -= 1")
        elif wide:
            self.line(ind, f"{c} = _I32(buf, pos)[0]")
            self.line(ind, "pos += 4")
        else:
            self.line(ind, f"{c} = _I16(buf, pos)[0]")
            self.line(ind, "pos += 2")
        self.line(ind, f"if {c} > end - pos or {c} < -1:")
        self.line(ind + 1, f"raise CountsUnsafe('a count of ' + str({c}) + ' with ' + str(end - pos) + ' bytes left')")
        return c

    def entity(self, cls: type, ind: int) -> None:
        hints = typing.get_type_hints(cls)
        header = getattr(cls, "__type__", None) is EntityType.header
        known: dict[int, Walker] = {}
        for f in dataclasses.fields(cls):
            legacy = header and f.name == "client_id"
            if "tag" in f.metadata:
                known[int(f.metadata["tag"])] = _field_walker(cls, f.name, hints[f.name], legacy)
            else:
                self.field(cls, f, hints[f.name], legacy, ind)
        if cls.__flexible__:
            tags = f"tags{next(self.names)}"
            self.scope[tags] = _tags(known)
            self.line(ind, "if buf[pos] == 0:")
            self.line(ind + 1, "pos += 1")
            self.line(ind, "else:")
            self.line(ind + 1, f"pos = {tags}(buf, pos, end)")

    def field(self, cls: type, f: dataclasses.Field, hint: Any, legacy: bool, ind: int) -> None:
        flexible = bool(cls.__flexible__) and not legacy
        element, array, nullable = unwrap(hint)
        if array:
            c = self.count(ind, flexible, wide=True)
            size = (_fixed_size(element) if dataclasses.is_dataclass(element)
                    else _FIXED_SIZE.get(f.metadata["kafka_type"]))
            if size is not None:
                self.line(ind, f"if {c} > 0:")
                self.line(ind + 1, f"pos += {c} * {size}")
            else:
                self.line(ind, f"for _ in range({c}):")
                self.one(cls, f, element, flexible, ind + 1)
                self.flush(ind + 1)
            return
        if dataclasses.is_dataclass(element) and nullable:
            m = f"m{next(self.names)}"
            self.line(ind, f"{m} = buf[pos]")
            self.line(ind, "pos += 1")
            self.line(ind, f"if {m} == 1:")
            self.entity(element, ind + 1)
            self.flush(ind + 1)
            self.line(ind, f"elif {m} != 0xFF:")
            self.line(ind + 1, f"raise CountsUnsafe('nullable struct marker ' + str({m}))")
            return
        self.one(cls, f, element, flexible, ind)

    def one(self, cls: type, f: dataclasses.Field, element: Any, flexible: bool, ind: int) -> None:
        """One value of the field's element type (a struct, or a primitive)."""
        if dataclasses.is_dataclass(element):
            self.entity(element, ind)
            return
        kafka_type = f.metadata["kafka_type"]
        if kafka_type in ("string", "bytes", "records"):
            c = self.count(ind, flexible, wide=kafka_type != "string")
            self.line(ind, f"if {c} > 0:")
            self.line(ind + 1, f"pos += {c}")
        else:
            self.skip += _FIXED_SIZE[kafka_type]


def _compile(name: str, emit: Callable[[_Emitter], None], top: bool = False) -> Any:
    """The walker ``emit`` writes; ``top``: ``(buf, pos)``, which also refuses a body that
    ends past the frame."""
    e = _Emitter()
    emit(e)
    e.flush(1)
    if top:
        lines = [f"def {name}(buf, pos):", "    end = len(buf)", *e.lines,
                 "    if pos > end:", "        raise CountsUnsafe('the body ends past the frame')"]
    else:
        lines = [f"def {name}(buf, pos, end):", *e.lines]
    source = "\n".join([*lines, "    return pos"])
    exec(compile(source, f"<count_guard {name}>", "exec"), e.scope)
    return e.scope[name]


def _field_walker(cls: type, name: str, hint: Any, legacy: bool) -> Walker:
    """A walker of one (tagged) field's value."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return _compile(f"walk_{name}", lambda e: e.field(cls, f, hint, legacy, 1))


@cache
def guard(cls: type) -> Callable[[Any, int], int] | None:
    """For a request class with an array field, a function ``(frame, body offset) -> end of
    the body`` that raises ``CountsUnsafe`` (or IndexError / struct.error past the end) unless
    every count in the body fits in the bytes that follow it; None for a class without
    arrays, which kio's native reader reads safely as it is."""
    if not has_arrays(cls):
        return None
    return _compile(f"walk_{cls.__name__}", lambda e: e.entity(cls, 1), top=True)

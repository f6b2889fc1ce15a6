"""Reading kio entities exactly as Apache Kafka 4.4's generated readers do.

kio's native reader (``kio.serial.entity_reader``, Rust) is fast and right for every
well-formed message, but it is stricter and looser than Kafka in a few places:

- an unknown tagged field raises ``KeyError`` — Kafka keeps it aside and reads on (tagged
  fields exist so that old readers skip new ones; KIP-482);
- a boolean byte other than 0/1, a nullable-struct marker other than -1/1, or a string that is
  not valid UTF-8 raise — Kafka reads ``!= 0``, ``< 0`` and decodes with replacement;
- it reads a null count for an array that is not nullable as None — Kafka rejects it;
- it applies none of Kafka's allocation limits: an array longer than the bytes left or than
  1,000,000 elements, more tagged fields than bytes left or than 10,000, a string longer
  than 32,767 bytes.

This module reads the same kio classes with Kafka's rules (checked against the bytecode of
Kafka 4.4's ``*Data.read`` methods), returning the same objects kio returns. It is slower
(plain Python), so the codec uses it only where kio's answer is not Kafka's: when kio raises,
and when ``kio_check`` finds in kio's result what Kafka refuses (a null array that is not
nullable; in frames large enough to hold them, an array or string over Kafka's limits). A
large frame of a message with tagged fields is read here directly (``has_tagged_fields``):
kio accepts any number of repeats of a known tag, Kafka no more than 10,000 tagged fields.
Every failure is a ``KafkaDecodeError`` carrying Kafka's message for it.

Reading follows the generated code: fixed-size fields read as they are; a string's length
(int16, or unsigned varint minus one when flexible) below zero is null (an error where the
field is not nullable), above 0x7fff an error; bytes and records likewise without the 0x7fff
bound; an array's count (int32, or uvarint minus one) below zero is null, above the bytes
left or above 1,000,000 an error; a nullable struct starts with a marker byte (negative:
null); a flexible struct ends with tagged fields — a count (negative, above the bytes left,
or above 10,000: an error), then (tag, size, value) each: a tag the class knows is read with
its field's reader from where it starts (Kafka ignores the size there), an unknown one is
skipped by its size. Varints follow Kafka's ByteUtils: at most five bytes, an int32 result.
"""

from __future__ import annotations

import dataclasses
import struct
from contextlib import contextmanager
from contextvars import ContextVar
import typing
from collections.abc import Callable
from datetime import timedelta
from functools import cache
from types import NoneType, UnionType
from typing import Any, Union

from kio.schema.errors import ErrorCode
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial.readers import tz_aware_from_i64
from kio.static.constants import EntityType

__all__ = [
    "KafkaDecodeError",
    "LIMITS_NEED_BYTES",
    "MAX_COLLECTION",
    "MAX_TAGGED_FIELDS",
    "MAX_STRING",
    "has_arrays",
    "has_tagged_fields",
    "kio_check",
    "read_entity",
    "reading_null_as_empty",
    "unwrap",
]

MAX_COLLECTION = 1_000_000
MAX_TAGGED_FIELDS = 10_000
MAX_STRING = 0x7FFF
LIMITS_NEED_BYTES = 2 * MAX_TAGGED_FIELDS
"""Below this many bytes no message can break a limit kio leaves unchecked: more than 10,000
tagged fields that are all there take over 20,000 bytes (a tag and a size each), a string
over 32,767 bytes or an array over 1,000,000 elements more still. Where kio succeeds on a
shorter frame, Kafka does too, with the same values."""


class KafkaDecodeError(ValueError):
    """Bytes Kafka 4.4's reader rejects; the message is Kafka's."""


Reader = Callable[[Any, int], tuple[Any, int]]   # (buffer, offset) -> (value, new offset)

# Set by a client that reads a broker's answer leniently (``reading_null_as_empty``); read
# only where a null meets a field that is not nullable, so the usual path never looks.
_NULL_AS_EMPTY: ContextVar[bool] = ContextVar("kgroup_null_as_empty", default=False)


@contextmanager
def reading_null_as_empty():
    """Within: a null where the field is not nullable reads as empty (b"", "", ()) instead of
    raising. For a client reading answers only — librdkafka's mock cluster writes a null
    SyncGroup ``assignment`` and a null LeaveGroup ``members`` in its error answers, and the
    error code in front of them is what the client needs. Never for requests: a broker
    answers Kafka's way (``KafkaDecodeError``)."""
    token = _NULL_AS_EMPTY.set(True)
    try:
        yield
    finally:
        _NULL_AS_EMPTY.reset(token)

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
_UUID = struct.Struct(">16s")


def _underflow() -> KafkaDecodeError:
    return KafkaDecodeError("java.nio.BufferUnderflowException")


def _fixed(s: struct.Struct, convert: Callable[[Any], Any] | None = None) -> Reader:
    size = s.size
    unpack = s.unpack_from

    def read(buf: Any, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise _underflow()
        (v,) = unpack(buf, pos)
        return (v if convert is None else convert(v)), pos + size

    return read


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """Kafka's ByteUtils.readUnsignedVarint: up to five bytes, the result an int32."""
    if pos < len(buf) and buf[pos] < 0x80:
        return buf[pos], pos + 1
    value = 0
    for i in range(5):
        if pos >= len(buf):
            raise _underflow()
        b = buf[pos]
        pos += 1
        if i == 4 and b & 0x80:
            raise KafkaDecodeError("Varint is too long, the most significant bit in the 5th byte is set")
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            break
    value &= 0xFFFFFFFF
    return (value - (1 << 32) if value & 0x80000000 else value), pos


def _int32(v: int) -> int:
    """Java int arithmetic: wrap to 32 bits."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _compact_length(buf: Any, pos: int) -> tuple[int, int]:
    """A flexible length: unsigned varint minus one (Java int arithmetic)."""
    if pos < len(buf) and buf[pos] < 0x80:
        return buf[pos] - 1, pos + 1
    n, pos = read_uvarint(buf, pos)
    return _int32(n - 1), pos


def _length(flexible: bool) -> Reader:
    """A string's length: int16, or (flexible) uvarint minus one."""
    return _compact_length if flexible else _fixed(_I16)


def _count(flexible: bool) -> Reader:
    """A bytes/records/array length: int32, or (flexible) uvarint minus one."""
    if flexible:
        return _length(True)
    return _fixed(_I32)


def _take(buf: Any, pos: int, n: int) -> bytes:
    """Kafka's readArray(n): no more than what remains."""
    remaining = len(buf) - pos
    if n > remaining:
        raise KafkaDecodeError(f"Error reading byte array of {n} byte(s): only {remaining} byte(s) available")
    if n < 0:
        raise KafkaDecodeError(f"java.lang.NegativeArraySizeException: {n}")
    return bytes(buf[pos:pos + n])


def _sized(name: str, count: Reader, nullable: bool,
           body: Callable[[Any, int, int], tuple[Any, int]]) -> Reader:
    """A field that starts with its length or count: negative is null (an error where the
    field is not nullable, or empty within ``reading_null_as_empty``), otherwise
    ``body(buf, pos, n)`` reads the rest."""
    def read(buf: Any, pos: int) -> tuple[Any, int]:
        n, pos = count(buf, pos)
        if n < 0:
            if nullable:
                return None, pos
            if _NULL_AS_EMPTY.get():
                return body(buf, pos, 0)
            raise KafkaDecodeError(f"non-nullable field {name} was serialized as null")
        return body(buf, pos, n)

    return read


def _string(name: str, flexible: bool, nullable: bool) -> Reader:
    def body(buf: Any, pos: int, n: int) -> tuple[str, int]:
        if n > MAX_STRING:
            raise KafkaDecodeError(f"string field {name} had invalid length {n}")
        return _take(buf, pos, n).decode("utf-8", "replace"), pos + n

    return _sized(name, _length(flexible), nullable, body)


def _bytes(name: str, flexible: bool, nullable: bool) -> Reader:
    def body(buf: Any, pos: int, n: int) -> tuple[bytes, int]:
        return _take(buf, pos, n), pos + n     # records too: kio returns them as bytes

    return _sized(name, _count(flexible), nullable, body)


def _array(name: str, flexible: bool, nullable: bool, element: Reader) -> Reader:
    def body(buf: Any, pos: int, n: int) -> tuple[tuple[Any, ...], int]:
        remaining = len(buf) - pos
        if n > remaining:
            raise KafkaDecodeError(f"Tried to allocate a collection of size {n}, "
                                   f"but there are only {remaining} bytes remaining.")
        if n > MAX_COLLECTION:
            raise KafkaDecodeError(f"Tried to read a collection of size {n}, "
                                   f"which exceeds the maximum allowed size of {MAX_COLLECTION}.")
        items = []
        append = items.append
        for _ in range(n):
            v, pos = element(buf, pos)
            append(v)
        return tuple(items), pos

    return _sized(name, _count(flexible), nullable, body)


def _nullable_struct(inner: Reader) -> Reader:
    def read(buf: Any, pos: int) -> tuple[Any, int]:
        if pos >= len(buf):
            raise _underflow()
        if buf[pos] >= 0x80:             # a negative marker byte: null
            return None, pos + 1
        return inner(buf, pos + 1)

    return read


def _bool(buf: Any, pos: int) -> tuple[bool, int]:
    if pos >= len(buf):
        raise _underflow()
    return buf[pos] != 0, pos + 1


def _uuid(raw: bytes) -> Any:
    import uuid

    return None if raw == bytes(16) else uuid.UUID(bytes=raw)


def _error_code(v: int) -> ErrorCode | int:
    try:
        return ErrorCode(v)
    except ValueError:
        return v            # a code newer than kio: Kafka reads any int16, so do we


_PRIMITIVES: dict[str, Reader] = {
    "bool": _bool,
    "int8": _fixed(_I8),
    "int16": _fixed(_I16),
    "uint16": _fixed(_U16),
    "int32": _fixed(_I32),
    "uint32": _fixed(_U32),
    "int64": _fixed(_I64),
    "float64": _fixed(_F64),
    "uuid": _fixed(_UUID, _uuid),
    "error_code": _fixed(_I16, _error_code),
    "timedelta_i32": _fixed(_I32, lambda ms: timedelta(milliseconds=ms)),
    "timedelta_i64": _fixed(_I64, lambda ms: timedelta(milliseconds=ms)),
    "datetime_i64": _fixed(_I64, tz_aware_from_i64),
}
_NULLABLE_DATETIME = _fixed(_I64, lambda ms: None if ms == -1 else tz_aware_from_i64(ms))


def unwrap(hint: Any) -> tuple[Any, bool, bool]:
    """(element type, is array, is nullable) of a kio field's type hint."""
    nullable = False
    if typing.get_origin(hint) in (UnionType, Union):
        args = [a for a in typing.get_args(hint) if a is not NoneType]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0]
    if typing.get_origin(hint) is tuple:
        element = typing.get_args(hint)[0]
        if typing.get_origin(element) in (UnionType, Union):
            element = next(a for a in typing.get_args(element) if a is not NoneType)
        return element, True, nullable
    return hint, False, nullable


def _field_reader(cls: type, f: dataclasses.Field, hint: Any, legacy_string: bool) -> Reader:
    flexible = bool(cls.__flexible__) and not legacy_string
    element, array, nullable = unwrap(hint)
    name = f.name
    if dataclasses.is_dataclass(element):
        item = entity_reader(element)
        if array:
            return _array(name, flexible, nullable, item)
        return _nullable_struct(item) if nullable else item
    kafka_type = f.metadata["kafka_type"]
    if kafka_type == "string":
        one = _string(name if not array else f"{name} element", flexible, nullable and not array)
    elif kafka_type in ("bytes", "records"):
        one = _bytes(name, flexible, nullable)
    elif kafka_type == "datetime_i64" and nullable and not array:
        one = _NULLABLE_DATETIME
    else:
        one = _PRIMITIVES[kafka_type]
    if array:
        return _array(name, flexible, nullable, one)
    return one


@cache
def entity_reader(cls: type) -> Reader:
    """A reader of kio entity class ``cls`` with Kafka 4.4's rules (see the module docstring)."""
    hints = typing.get_type_hints(cls)
    # Request header v2: the client id stays a legacy (int16-length) string though the
    # header is flexible, as kio's and Kafka's readers read it.
    header = getattr(cls, "__type__", None) is EntityType.header
    regular: list[tuple[str, Reader]] = []
    tagged: dict[int, tuple[str, Reader]] = {}
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        legacy = header and f.name == "client_id"
        if "tag" in f.metadata:
            tagged[int(f.metadata["tag"])] = (f.name, _field_reader(cls, f, hints[f.name], legacy))
            defaults[f.name] = get_tagged_field_default(f)
        else:
            regular.append((f.name, _field_reader(cls, f, hints[f.name], legacy)))
    flexible = bool(cls.__flexible__)

    def read(buf: Any, pos: int) -> tuple[Any, int]:
        values: dict[str, Any] = {}
        for name, reader in regular:
            values[name], pos = reader(buf, pos)
        if flexible:
            if defaults:
                values.update(defaults)
            if pos < len(buf) and buf[pos] == 0:      # no tagged field: the usual case
                return cls(**values), pos + 1
            n, pos = read_uvarint(buf, pos)
            remaining = len(buf) - pos
            if n < 0:
                raise KafkaDecodeError(f"Invalid negative number of tagged fields {n}")
            if n > remaining:
                raise KafkaDecodeError(f"Tried to read {n} tagged fields, but there are only "
                                       f"{remaining} bytes remaining.")
            if n > MAX_TAGGED_FIELDS:
                raise KafkaDecodeError(f"Tried to read {n} tagged fields, which exceeds the "
                                       f"maximum allowed count of {MAX_TAGGED_FIELDS}.")
            for _ in range(n):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                known = tagged.get(tag)
                if known is not None:
                    values[known[0]], pos = known[1](buf, pos)
                else:
                    _take(buf, pos, size)           # Kafka keeps it as an unknown field
                    pos += size
        return cls(**values), pos

    return read


@cache
def kio_check(cls: type, big: bool = False) -> Callable[[Any], bool] | None:
    """A test of an entity kio decoded as ``cls``: True where Kafka would have refused the
    bytes — an array that is not nullable came out None (kio reads a null count as None)
    or, with ``big`` (a frame of LIMITS_NEED_BYTES or more), an array holds more than
    1,000,000 elements or a string more than 32,767 UTF-8 bytes. None when nothing in
    ``cls`` can fail it, so callers skip the test; it walks only the entities that hold
    arrays (or strings, when big), never their elements' scalars."""
    hints = typing.get_type_hints(cls)
    not_null: list[str] = []                                    # arrays, not nullable
    counted: list[str] = []                                     # arrays (big)
    strings: list[tuple[str, bool]] = []                        # (name, is array) (big)
    nested: list[tuple[str, bool, Callable[[Any], bool]]] = []   # (name, is array, check)
    for f in dataclasses.fields(cls):
        element, array, nullable = unwrap(hints[f.name])
        if array and not nullable:
            not_null.append(f.name)
        if big and array:
            counted.append(f.name)
        if big and f.metadata.get("kafka_type") == "string":
            strings.append((f.name, array))
        if dataclasses.is_dataclass(element):
            inner = kio_check(element, big)
            if inner is not None:
                nested.append((f.name, array, inner))
    if not (not_null or counted or strings or nested):
        return None

    def too_long(text: str | None) -> bool:
        # Cheap first: a str of n characters has n to 4n UTF-8 bytes.
        return text is not None and len(text) > MAX_STRING // 4 and len(text.encode()) > MAX_STRING

    def check(obj: Any) -> bool:
        for name in not_null:
            if getattr(obj, name) is None:
                return True
        for name in counted:
            value = getattr(obj, name)
            if value is not None and len(value) > MAX_COLLECTION:
                return True
        for name, array in strings:
            value = getattr(obj, name)
            if array:
                if value is not None and any(too_long(v) for v in value):
                    return True
            elif too_long(value):
                return True
        for name, array, inner in nested:
            value = getattr(obj, name)
            if value is None:
                continue
            if array:
                for item in value:
                    if inner(item):
                        return True
            elif inner(value):
                return True
        return False

    return check


@cache
def has_tagged_fields(cls: type) -> bool:
    """Whether ``cls`` or an entity in it declares a tagged field. kio accepts any number of
    known tags; Kafka no more than 10,000 — which only a frame of LIMITS_NEED_BYTES or more
    can hold, so there such a class is read with Kafka's rules."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if "tag" in f.metadata:
            return True
        element = unwrap(hints[f.name])[0]
        if dataclasses.is_dataclass(element) and has_tagged_fields(element):
            return True
    return False


def has_arrays(cls: type) -> bool:
    """Whether ``cls`` or an entity in it has an array field. kio's native readers reserve
    room for an array's declared count before reading one element: a 51-byte frame that
    declares 2**35 entries made the process abort ("memory allocation of 193654555296 bytes
    failed"; Rust aborts, no exception). Such a class reaches kio only after ``count_guard``
    has found every count backed by bytes of the frame; otherwise it is read here, where a
    count the remaining bytes cannot hold is refused before anything is allocated."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        element, array, _ = unwrap(hints[f.name])
        if array or (dataclasses.is_dataclass(element) and has_arrays(element)):
            return True
    return False


def read_entity(cls: type, buf: Any, offset: int = 0) -> tuple[Any, int]:
    """``(entity, bytes read)`` from ``buf`` at ``offset``, as kio's readers return it."""
    value, end = entity_reader(cls)(buf, offset)
    return value, end - offset

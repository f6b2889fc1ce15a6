"""Kafka's primitive types inside the opaque bytes groups trade: member metadata and
assignments (ConsumerProtocol, and the task and leader-election protocols).

Big-endian, not flexible: int16 / int32, strings with an int16 length, nullable bytes and
arrays with an int32 length. ``Reader`` raises the ``error`` class it was given (a
``ProtocolBytesError``) for anything truncated or malformed, naming the field.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")


class ProtocolBytesError(ValueError):
    """The bytes are not what the protocol says they should be."""


class Reader:
    """Reads big-endian Kafka primitives from a buffer, raising ``error``."""

    __slots__ = ("buf", "pos", "what", "error")

    def __init__(self, data: bytes, what: str,
                 error: type[ProtocolBytesError] = ProtocolBytesError) -> None:
        self.error = error
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise error(f"{what}: expected bytes, got {type(data).__name__}")
        self.buf = bytes(data)
        self.pos = 0
        self.what = what

    @property
    def at_end(self) -> bool:
        return self.pos == len(self.buf)

    def _need(self, n: int, field: str) -> None:
        if self.pos + n > len(self.buf):
            raise self.error(
                f"{self.what}: truncated reading {field} at byte {self.pos} "
                f"(need {n}, have {len(self.buf) - self.pos})"
            )

    def int8(self, field: str) -> int:
        self._need(1, field)
        value = self.buf[self.pos]
        self.pos += 1
        return value - 256 if value > 127 else value

    def int16(self, field: str) -> int:
        self._need(2, field)
        (value,) = I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return value

    def int32(self, field: str) -> int:
        self._need(4, field)
        (value,) = I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return value

    def string(self, field: str, nullable: bool = False) -> str | None:
        length = self.int16(field)
        if length < 0:
            if nullable and length == -1:
                return None
            raise self.error(f"{self.what}: {field} has invalid length {length}")
        self._need(length, field)
        raw = self.buf[self.pos:self.pos + length]
        self.pos += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"{self.what}: {field} is not UTF-8") from exc

    def nullable_bytes(self, field: str) -> bytes | None:
        length = self.int32(field)
        if length < 0:
            if length == -1:
                return None
            raise self.error(f"{self.what}: {field} has invalid length {length}")
        self._need(length, field)
        raw = self.buf[self.pos:self.pos + length]
        self.pos += length
        return raw

    def array_length(self, field: str, min_item_size: int) -> int:
        count = self.int32(field)
        if count < 0:
            raise self.error(f"{self.what}: {field} has invalid length {count}")
        # Why: a garbage length must fail here, not after allocating a huge list.
        if count * min_item_size > len(self.buf) - self.pos:
            raise self.error(
                f"{self.what}: {field} claims {count} items but only "
                f"{len(self.buf) - self.pos} bytes remain"
            )
        return count

    def strings(self, field: str) -> tuple[str, ...]:
        count = self.array_length(field, 2)
        return tuple(self.string(field) for _ in range(count))  # type: ignore[misc]

    def int32_array(self, field: str) -> tuple[int, ...]:
        count = self.array_length(field, 4)
        values = struct.unpack_from(f">{count}i", self.buf, self.pos)
        self.pos += 4 * count
        return values


def write_string(value: str | None, out: list[bytes], nullable: bool = False,
                 error: type[ProtocolBytesError] = ProtocolBytesError) -> None:
    if value is None:
        if not nullable:
            raise error("null is not allowed for this string")
        out.append(I16.pack(-1))
        return
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise error(f"string too long ({len(raw)} bytes)")
    out.append(I16.pack(len(raw)))
    out.append(raw)


def write_strings(values: Iterable[str], out: list[bytes],
                  error: type[ProtocolBytesError] = ProtocolBytesError) -> None:
    values = list(values)
    out.append(I32.pack(len(values)))
    for value in values:
        write_string(value, out, error=error)


def write_bytes(value: bytes | None, out: list[bytes]) -> None:
    if value is None:
        out.append(I32.pack(-1))
    else:
        out.append(I32.pack(len(value)))
        out.append(bytes(value))

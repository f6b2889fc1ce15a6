"""Sans-I/O splitting of a byte stream into Kafka frames.

How this works: every Kafka request and response is ``int32 size`` (big-endian) followed by
``size`` bytes. ``FrameSplitter.feed(data)`` appends bytes to an internal buffer and returns
every frame completed so far (payloads without the size prefix). The size is checked as
soon as its 4 bytes arrive, so an oversize or negative frame is rejected before its body is
buffered; after a FramingError the splitter is unusable and the connection must be closed.
"""

from __future__ import annotations

import struct

from .errors import FramingError, FrameTooLarge

DEFAULT_MAX_FRAME_SIZE = 104_857_600  # socket.request.max.bytes, 100 MiB

_SIZE = struct.Struct(">i")


class FrameSplitter:
    """Accumulates bytes and yields complete frame payloads."""

    __slots__ = ("_buf", "_max", "_need", "_broken")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._max = max_frame_size
        self._need: int | None = None  # body size of the frame in progress, once known
        self._broken: FramingError | None = None

    @property
    def limit(self) -> int:
        """The largest frame accepted; may be changed between feeds (a SASL listener
        allows less before authentication)."""
        return self._max

    @limit.setter
    def limit(self, value: int) -> None:
        self._max = value

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes from the peer; return the frames they complete, in order.

        Raises FrameTooLarge / FramingError for a size past the limit or negative.
        """
        if self._broken is not None:
            raise self._broken
        # Frames are cut from the bytes as they came when nothing is held back (one copy per
        # frame, none at all for a chunk that is exactly one frame); only a partial frame's
        # bytes wait in the buffer.
        if self._buf:
            self._buf += data
            buf: bytes | bytearray = self._buf
        else:
            buf = data if isinstance(data, bytes) else bytes(data)
        frames: list[bytes] = []
        view = memoryview(buf)
        pos = 0
        end = len(buf)
        try:
            while True:
                if self._need is None:
                    if end - pos < 4:
                        break
                    (size,) = _SIZE.unpack_from(buf, pos)
                    if size < 0:
                        self._broken = FramingError(f"negative frame size {size}")
                        raise self._broken
                    if size > self._max:
                        self._broken = FrameTooLarge(size, self._max)
                        raise self._broken
                    pos += 4
                    self._need = size
                if end - pos < self._need:
                    break
                if pos == 0 and self._need == end and type(buf) is bytes:
                    frames.append(buf)
                else:
                    frames.append(view[pos : pos + self._need].tobytes())
                pos += self._need
                self._need = None
        finally:
            view.release()
        if buf is self._buf:
            if pos:
                del self._buf[:pos]
        elif pos < end:
            self._buf += buf[pos:]
        return frames


_HTTP_METHODS = (b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC", b"CONN", b"TRAC", b"PRI ")


def not_kafka(first_bytes: bytes) -> str | None:
    """What a connection that opened with ``first_bytes`` speaks instead of Kafka, if it is
    recognisably something else: "an HTTP request (GET / HTTP/1.1)" or "a TLS handshake".

    Read as a Kafka frame size, such openings are 369 MB (TLS) to 1.4 GB (HTTP): without this
    a browser or a TLS client on the Kafka port would be reported as an oversize frame.
    """
    if first_bytes[:4] in _HTTP_METHODS:
        line = first_bytes.split(b"\r\n", 1)[0][:80].decode("ascii", "replace")
        return f"an HTTP request ({line})"
    if len(first_bytes) >= 3 and first_bytes[0] == 0x16 and first_bytes[1] == 0x03 and first_bytes[2] <= 0x04:
        return "a TLS handshake (a client configured for SSL/TLS on a plaintext port)"
    return None


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``payload`` with its 4-byte big-endian size."""
    return _SIZE.pack(len(payload)) + bytes(payload)

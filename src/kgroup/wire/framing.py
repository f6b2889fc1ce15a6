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

    __slots__ = ("_parts", "_held", "_max", "_need", "_broken")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        # The bytes of a frame in progress, as they came: a large frame (a 1 MB Produce
        # arrives in several reads) is copied once, when its last piece comes, not once per
        # piece into a growing buffer and once more out of it.
        self._parts: list[bytes | memoryview] = []
        self._held = 0                 # bytes in _parts
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
        return self._held

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes from the peer; return the frames they complete, in order.

        Raises FrameTooLarge / FramingError for a size past the limit or negative.
        """
        if self._broken is not None:
            raise self._broken
        if type(data) is not bytes:
            data = bytes(data)      # a caller's buffer may change after the call; ours are kept
        if self._parts:
            self._parts.append(data)
            self._held += len(data)
            if self._need is not None and self._held < self._need:
                return []           # the body is still incomplete: nothing copied yet
            buf = b"".join(self._parts)
            self._parts = []
            self._held = 0
        else:
            buf = data
        # Frames are cut from the bytes as they came: one copy per frame, none at all for a
        # piece that is exactly one frame (or that completes one begun in earlier pieces).
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
                if pos == 0 and self._need == end:
                    frames.append(buf)
                else:
                    frames.append(view[pos : pos + self._need].tobytes())
                pos += self._need
                self._need = None
        finally:
            view.release()
        if pos < end:
            # The start of a frame: kept as a view of the piece (bytes, never changed), so
            # only the join at its end copies it.
            self._parts.append(memoryview(buf)[pos:] if pos else buf)
            self._held = end - pos
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

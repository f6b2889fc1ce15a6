"""RecordsSlice: a byte range of a segment file, to be sent to a socket without a copy.

How this works: a fetch answer refers to the batches it returns by (file descriptor, byte
position, byte count) instead of reading them; the broker hands the range to the kernel
with sendfile (`loop.sendfile`), or reads it (`read`) where it cannot (TLS). The descriptor
is the slice's own `dup` of the segment's, so retention, a hand-over or a closing log may
close theirs meanwhile: the bytes stay readable until `close`. The range holds whole
batches the log had already written (flushed) to the file, below the segment's size, which
nothing rewrites in place.
"""

from __future__ import annotations

import io
import os

from kgroup.storage.errors import CorruptDataError, StorageError


class RecordsSlice:
    """Bytes [position, position + size) of an open file; owns its descriptor."""

    __slots__ = ("fd", "position", "size", "end_offset")

    def __init__(self, fd: int, position: int, size: int, end_offset: int) -> None:
        self.fd = fd
        self.position = position
        self.size = size
        # The offset after the last record of the last batch in the slice.
        self.end_offset = end_offset

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """The bytes of the slice."""
        try:
            data = os.pread(self.fd, self.size, self.position)
        except OSError as exc:
            raise StorageError(f"cannot read records at byte {self.position}: {exc}") from exc
        if len(data) != self.size:
            raise CorruptDataError(f"short read of {len(data)}/{self.size} bytes at byte {self.position}")
        return data

    def file(self) -> io.FileIO:
        """A file object over the descriptor (for `loop.sendfile`); closing it leaves the
        descriptor open."""
        return io.FileIO(self.fd, "rb", closefd=False)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        # An answer dropped unsent (a closed connection) must not leak its descriptor.
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass

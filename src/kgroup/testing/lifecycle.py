"""The life cycle a test's server handle (`Broker`, `ReferenceKafka`) shares: a data dir of
its own or the caller's, restart on the same data, close, and `with` blocks."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Self


class ServerHandle:
    """A subclass provides `start(timeout)`, `stop()` and `alive()`, and calls `_take_dir`
    first in its `__init__`."""

    dir: Path
    _own_dir: bool

    def _take_dir(self, directory: str | Path | None, prefix: str) -> None:
        """Use `directory`, or (None) a temp dir of this handle's own, removed at `close`."""
        self._own_dir = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix=prefix)) if directory is None else Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def start(self, timeout: float) -> Self:
        raise NotImplementedError

    def stop(self) -> int | None:
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    def restart(self, timeout: float | None = None) -> Self:
        """Stop, then start again on the same data (within `timeout` seconds, or the
        handle's default for `start`)."""
        self.stop()
        return self.start() if timeout is None else self.start(timeout)  # type: ignore[call-arg]

    def close(self) -> None:
        """Stop and, if this handle made the data dir, remove it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start() if not self.alive() else self  # type: ignore[call-arg]

    def __exit__(self, *exc: object) -> None:
        self.close()

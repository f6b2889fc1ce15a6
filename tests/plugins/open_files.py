"""Files tests left open in their own `tmp_path`, closed after their module and listed at the end.

Storage objects (segment logs, lock and lease files, epoch tables) hold raw descriptors
and have no finalizer, so a test that drops one without `close()` -- often on purpose, to
stand for `kill -9` -- keeps its files open for the rest of the worker's life. Hundreds of
them pile up in one pytest-xdist worker, and past descriptor 1023 anything that still uses
`select()` breaks far from the cause: py4j's callback server, which runs Spark's
`foreachBatch`, cannot accept a connection, and a Spark test times out.

So at the end of each module, every descriptor still open on a path inside the
`tmp_path` of one of its tests is closed, after a garbage collection has let objects with
a finalizer close theirs (closing one of those here would free its number for reuse, and
the finalizer would later close another test's file). Nothing outside those directories
is touched: session and module fixtures keep their files elsewhere, and a test's
`tmp_path` is its own. The summary names the modules that left files behind, for whoever
next tidies them.
"""

from __future__ import annotations

import gc
import os
from collections import Counter

import pytest

FD_DIR = "/proc/self/fd"


def _open_files() -> dict[int, str]:
    out: dict[int, str] = {}
    try:
        names = os.listdir(FD_DIR)
    except OSError:                 # not Linux: nothing to watch
        return out
    for name in names:
        try:
            out[int(name)] = os.readlink(f"{FD_DIR}/{name}")
        except (OSError, ValueError):
            pass
    return out


KEY = "files_left_open"


class OpenFiles:
    def __init__(self) -> None:
        self.closed: Counter[str] = Counter()
        self.dirs: list[str] = []            # the tmp_paths of this module's tests so far

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem):
        yield                       # the test's fixtures are finalized by now
        tmp = getattr(item, "funcargs", {}).get("tmp_path")
        if tmp is not None:
            self.dirs.append(str(tmp).rstrip("/") + "/")
        module = item.nodeid.split("::", 1)[0]
        if nextitem is not None and nextitem.nodeid.split("::", 1)[0] == module:
            return                  # once per module: the collection below is not free
        dirs, self.dirs = tuple(self.dirs), []
        if not dirs or not any(target.startswith(dirs) for target in _open_files().values()):
            return
        # Objects with a finalizer (Python file objects, sockets) close their descriptor
        # when collected. Collect them first: closing such a descriptor here would free the
        # number for reuse, and the finalizer would later close another test's file.
        gc.collect()
        closed = 0
        for fd, target in _open_files().items():
            if not target.startswith(dirs):
                continue
            try:
                os.close(fd)
            except OSError:
                continue
            closed += 1
        if closed:
            # On the teardown report, so that pytest-xdist carries it to the controller.
            item.user_properties.append((KEY, closed))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties if report.when == "teardown" else ():
            if key == KEY:
                self.closed[report.nodeid.split("::", 1)[0]] += value

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.closed:
            return
        terminalreporter.write_sep("-", f"{sum(self.closed.values())} files left open in tests' "
                                        "tmp_path, closed after them")
        for module, n in self.closed.most_common(10):
            terminalreporter.write_line(f"{n:6d}  {module}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(OpenFiles(), "kgroup-open-files")

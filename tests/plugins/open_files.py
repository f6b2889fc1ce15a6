"""Files a test left open in its own `tmp_path`, closed after it and listed at the end.

Storage objects (segment logs, lock and lease files, epoch tables) hold raw descriptors
and have no finalizer, so a test that drops one without `close()` -- often on purpose, to
stand for `kill -9` -- keeps its files open for the rest of the worker's life. Hundreds of
them pile up in one pytest-xdist worker, and past descriptor 1023 anything that still uses
`select()` breaks far from the cause: py4j's callback server, which runs Spark's
`foreachBatch`, cannot accept a connection, and a Spark test times out.

So after each test that had a `tmp_path`, every regular file opened during the test, still
open, and lying inside that directory is closed. Nothing outside the test's own directory
is touched (session and module brokers live elsewhere), and only descriptors that did not
exist before the test started. The summary names the modules that left files behind, for
whoever next tidies them.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

FD_DIR = "/proc/self/fd"
BEFORE = pytest.StashKey[dict]()


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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        item.stash[BEFORE] = _open_files()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem):
        yield                       # the test's fixtures are finalized by now
        tmp = getattr(item, "funcargs", {}).get("tmp_path")
        before = item.stash.get(BEFORE, {})
        if tmp is None:
            return
        inside = str(tmp).rstrip("/") + "/"
        closed = 0
        for fd, target in _open_files().items():
            if before.get(fd) == target or not target.startswith(inside):
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

"""`kgroup ARGV` run in this process through the console script's own `main`, for tests
that check what a tool prints and returns, not the process around it: a `kgroup` process
start costs ~0.5-1 s on a loaded 2-core machine, and some modules run dozens of tool
commands (or poll `groups describe` back to back). The script is `kgroup.cli.main:main`
(pyproject), so the status, stdout and stderr are the ones a process would give."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
from pathlib import Path

from kgroup.cli.main import main

__all__ = ["KGROUP", "kgroup_inprocess"]

KGROUP = str(Path(sys.executable).with_name("kgroup"))
# sys.stdin/stdout/stderr and os.environ are the process's: one command at a time (tests that
# poll from two threads, e.g. one scenario on each broker, take turns; a command is ~10-50 ms).
_ONE_AT_A_TIME = threading.Lock()


def kgroup_inprocess(argv: list[str], stdin: str | None = None,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`kgroup *argv` with `stdin` as its input and `env` added to the environment; the
    result as `subprocess.run` gives it."""
    with _ONE_AT_A_TIME:
        return _run(argv, stdin, env)


def _run(argv: list[str], stdin: str | None, env: dict[str, str] | None) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    saved_stdin, saved_env = sys.stdin, {k: os.environ.get(k) for k in env or {}}
    sys.stdin = io.StringIO(stdin or "")
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
    finally:
        sys.stdin = saved_stdin
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess([KGROUP, *argv], status, out.getvalue(), err.getvalue())

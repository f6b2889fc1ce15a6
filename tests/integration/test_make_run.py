"""`make run HOST=... PORT=... DATA=...` serves where it is told (the README's quick start),
and a PORT in the environment does not move it (the variables are the command line's)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from kgroup.testing.ports import free_port
from kgroup.testing.process import ChildProcess
from tests.integration.waits import wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_make_run_defaults_are_the_readmes():
    done = subprocess.run(["make", "--no-print-directory", "-n", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PORT": "1", "HOST": "0.0.0.0", "DATA": "/elsewhere"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith("kgroup serve --listen 127.0.0.1:9092 --data-dir ./kgroup-data")


def test_make_run_serves_on_the_port_and_data_dir_given(tmp_path):
    port, data = free_port(), tmp_path / "data"
    make = ChildProcess(["make", "--no-print-directory", "run", "HOST=127.0.0.1", f"PORT={port}", f"DATA={data}"],
                        name="make run", cwd=ROOT, env={**os.environ, "PORT": "1"}, new_session=True).start()
    try:
        wait_for(lambda: "listening on" in make.log() or not make.alive(), 60, what="make run to serve")
        assert re.search(rf"listening on .*127\.0\.0\.1:{port}\b", make.log()), make.log()
        assert data.is_dir() and any(data.iterdir()), "nothing in DATA"
    finally:
        # make does not pass SIGTERM on to the broker: stop the whole process group.
        if make.alive():
            os.killpg(make.pid, signal.SIGTERM)
        make.wait(30)

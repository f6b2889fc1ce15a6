"""`pip install kgroup` (no extras) is light and complete for serving: the wheel built from
this checkout, installed into a fresh venv, stays under 150 MB, brings no Spark, and that
venv's `kgroup` serves, produces and consumes, and its client reads through a group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.broker_process import free_port
from tests.integration.waits import wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
LIMIT_MB = 150


def _size_mb(path: Path) -> float:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = Path(dirpath, name)
            if not p.is_symlink():
                total += p.stat().st_size
    return total / 2**20


def _run(*cmd: str, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=600, **kw)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("light")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(ROOT))
    (wheel,) = (tmp / "dist").glob("kgroup-*.whl")
    _run(sys.executable, "-m", "venv", str(tmp / "venv"))
    _run(str(tmp / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel))
    return tmp / "venv"


def test_the_plain_install_is_under_150_mb_and_has_no_spark(light_venv):
    size = _size_mb(light_venv)
    assert size < LIMIT_MB, f"a plain install takes {size:.0f} MB"
    python = str(light_venv / "bin" / "python")
    missing = subprocess.run([python, "-c", "import pyspark"], capture_output=True, text=True)
    assert missing.returncode != 0
    _run(python, "-c", "import kgroup.broker.server, kgroup.client, kgroup.cli.main, kgroup.lab")


def test_the_plain_install_serves_produces_and_consumes(light_venv, tmp_path):
    kgroup = str(light_venv / "bin" / "kgroup")
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    log = open(tmp_path / "serve.log", "wb")
    broker = subprocess.Popen([kgroup, "serve", "--listen", bootstrap, "--data-dir", str(tmp_path / "data")],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        def loaded() -> bool:
            assert broker.poll() is None, (tmp_path / "serve.log").read_text()
            return b"coordinator loaded" in (tmp_path / "serve.log").read_bytes()
        wait_for(loaded, max(1.0, deadline - time.monotonic()), what="the light install's broker to load")
        env = dict(os.environ, KGROUP_BOOTSTRAP=bootstrap)
        _run(kgroup, "topics", "create", "light", "--partitions", "2", env=env)
        _run(kgroup, "produce", "light", input="".join(f"m{i}\n" for i in range(10)), env=env)
        out = _run(kgroup, "consume", "light", "--group", "light-g", "--from-beginning", "--max-messages", "10",
                   env=env)
        assert sorted(out.stdout.split()) == sorted(f"m{i}" for i in range(10))
        # The asyncio client of the plain install, in a group of its own.
        program = (
            "import asyncio\n"
            "from kgroup.client import Consumer\n"
            "async def main():\n"
            f"    async with Consumer({{'bootstrap.servers': '{bootstrap}', 'group.id': 'light-c',\n"
            "                          'auto.offset.reset': 'earliest'}) as c:\n"
            "        c.subscribe(['light'])\n"
            "        seen = []\n"
            "        async for record in c:\n"
            "            seen.append(record.value)\n"
            "            if len(seen) == 10:\n"
            "                break\n"
            "        print(len(seen))\n"
            "asyncio.run(main())\n")
        out = _run(str(light_venv / "bin" / "python"), "-c", program, env=env)
        assert out.stdout.strip() == "10"
    finally:
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(30) == 0
        log.close()

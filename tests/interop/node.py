"""Runs the Node clients' scripts of tests/interop/node (kafkajs, @platformatic/kafka, pinned
in package-lock.json and installed by `make test` with `npm ci`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.interop.toolchain import ROOT, unavailable

SCRIPTS = Path(__file__).with_name("node")


def node_available() -> None:
    """Skip (or fail, under KGROUP_REQUIRE_REFERENCE=1) without Node or the packages."""
    if shutil.which("node") is None:
        unavailable("the Node clients need Node.js, and `node` is not on PATH")
    for package in ("kafkajs", "@platformatic/kafka"):
        if not (ROOT / "node_modules" / package).is_dir():
            unavailable(f"{package} is not installed: run `npm ci` (make test does)")


def node(script: str, args: dict, timeout: float = 120) -> dict:
    done = subprocess.run(["node", str(SCRIPTS / script), json.dumps(args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])

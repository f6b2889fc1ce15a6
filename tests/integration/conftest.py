from __future__ import annotations

import pytest

from tests.integration.broker_process import BrokerProcess


@pytest.fixture
def broker(tmp_path):
    """A fresh `kgroup serve` on a free loopback port; stopped (and checked) after the test."""
    proc = BrokerProcess(tmp_path / "data").start()
    yield proc
    # Shown by pytest only when the test fails: what the broker said.
    print("---- broker log (tail) ----\n" + "\n".join(proc.log().splitlines()[-80:]))
    if proc.alive():
        status = proc.stop()
        assert status == 0, f"broker exited with {status}:\n{proc.log()}"
    assert "Traceback" not in proc.log(), proc.log()

from __future__ import annotations

import pytest

from tests.integration.broker_process import BrokerProcess


@pytest.fixture
def broker(tmp_path):
    """A fresh `kgroup serve` on a free loopback port; stopped (and checked) after the test."""
    proc = BrokerProcess(tmp_path / "data").start()
    yield proc
    proc.finish()

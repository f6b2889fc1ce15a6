"""Unit tests: what a test opened and dropped is closed after it (tests/unit/closing.py)."""

from __future__ import annotations

import pytest

from tests.unit.closing import close_all


@pytest.fixture(autouse=True)
def _close_what_the_test_dropped():
    yield
    close_all()

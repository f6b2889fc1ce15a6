"""docs/clients.md and docs/tools.md are what tests/interop/docs.py renders from the matrix and
the tools' table, and every test the matrix names exists."""

from __future__ import annotations

import subprocess
import sys

from tests.interop.docs import CLIENTS_MD, ROOT, TOOLS_MD, render_clients, render_tools
from tests.interop.matrix import CELLS, CLIENTS, FEATURES


def test_every_client_has_every_feature_cell():
    assert set(CELLS) == set(CLIENTS)
    for client, cells in CELLS.items():
        assert set(cells) == set(FEATURES), client
        for feature, cell in cells.items():
            assert cell.tests or cell.reason, f"{client} × {feature}: a test or a reason"
            assert not (cell.needs and cell.tests), f"{client} × {feature}: pending or shown, not both"


def test_every_named_test_exists():
    """Collected by pytest (parametrizations included), without running anything."""
    named = {t for cells in CELLS.values() for cell in cells.values() for t in cell.tests}
    files = sorted({t.split("::")[0] for t in named})
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    collected = set(done.stdout.split())
    # A parametrized test named without its parameters stands for all its cases.
    missing = sorted(t for t in named if t not in collected and not any(c.startswith(t + "[") for c in collected))
    assert not missing, f"not collected: {missing}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_docs_are_up_to_date():
    """Regenerate with `python -m tests.interop.docs` (or `make clients-doc`)."""
    assert CLIENTS_MD.read_text() == render_clients(), "docs/clients.md is stale: python -m tests.interop.docs"
    assert TOOLS_MD.read_text() == render_tools(), "docs/tools.md is stale: python -m tests.interop.docs"

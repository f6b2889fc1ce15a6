"""docs/clients.md and docs/tools.md are what tests/interop/docs.py renders from the matrix and
the tools' table, and every test the matrix names exists."""

from __future__ import annotations

import re

from tests.interop.docs import CLIENTS_MD, ROOT, TOOLS_MD, render_clients, render_tools
from tests.interop.matrix import CELLS, CLIENTS, FEATURES, node_ids


def test_every_client_has_every_feature_cell():
    assert set(CELLS) == set(CLIENTS)
    for client, cells in CELLS.items():
        assert set(cells) == set(FEATURES), client
        for feature, cell in cells.items():
            assert cell.tests or cell.reason, f"{client} × {feature}: a test or a reason"
            assert not (cell.needs and cell.tests), f"{client} × {feature}: pending or shown, not both"


def test_every_named_test_exists():
    """Each named test function is defined in its file (cheaply, by reading the files; `make
    clients-doc` runs them, and marks a case that did not run "?")."""
    missing = []
    for node_id in node_ids():
        path, _, name = node_id.partition("::")
        function = name.partition("[")[0]
        source = (ROOT / path).read_text() if (ROOT / path).exists() else ""
        if not re.search(rf"^(async )?def {re.escape(function)}\(", source, re.M):
            missing.append(node_id)
    assert not missing, missing


def test_docs_are_up_to_date():
    """Regenerate with `python -m tests.interop.docs` (or `make clients-doc`)."""
    assert CLIENTS_MD.read_text() == render_clients(), "docs/clients.md is stale: python -m tests.interop.docs"
    assert TOOLS_MD.read_text() == render_tools(), "docs/tools.md is stale: python -m tests.interop.docs"

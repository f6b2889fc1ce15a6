"""How commands print results: aligned text tables, or one JSON document (``--format json``).

JSON output is one document per command run, an object with one list (``topics`` or
``groups``) whose entries have the same keys every time (values may be null), so scripts can
rely on the shape; README.md documents it.
"""

from __future__ import annotations

import json
from typing import Any, TextIO


def table(rows: list[list[str]], out: TextIO) -> None:
    """Rows (the first is the header) as columns two spaces apart."""
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def emit_json(document: dict[str, Any], out: TextIO) -> None:
    """One JSON document on one line."""
    out.write(json.dumps(document, separators=(",", ":"), sort_keys=False) + "\n")


def cell(value: object) -> str:
    """A table cell: ``-`` for a missing value."""
    return "-" if value is None else str(value)

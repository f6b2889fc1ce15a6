"""package.json's `engines.node` is what the pinned packages of package-lock.json need: the
oldest Node every one of them accepts (their own `engines`), neither older nor newer."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOWER = re.compile(r">=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def oldest(spec: str) -> tuple[int, int, int]:
    """The oldest Node version a range of the `>=A || >=B` forms npm packages use accepts."""
    bounds = []
    for alternative in spec.split("||"):
        m = LOWER.fullmatch(alternative.strip())
        assert m, f"an engines range this test cannot read: {spec!r} (teach oldest() its form)"
        bounds.append(tuple(int(part or 0) for part in m.groups()))
    return min(bounds)


def test_package_json_declares_the_node_the_pinned_dependencies_need():
    declared = json.loads((ROOT / "package.json").read_text())["engines"]["node"]
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert lock[""]["engines"]["node"] == declared, "package-lock.json's root engines differs from package.json"
    needs = {name: oldest(entry["engines"]["node"]) for name, entry in lock.items()
             if name and "node" in entry.get("engines", {})}
    strictest = max(needs.values())
    assert oldest(declared) == strictest, (
        f"package.json says node {declared}; the pinned packages need >={'.'.join(map(str, strictest))} "
        f"({', '.join(sorted(n for n, v in needs.items() if v == strictest))})")


def test_the_oldest_version_of_a_range():
    assert oldest(">= 22.22.0 || >= 24.6.0") == (22, 22, 0)
    assert oldest(">=0.11") == (0, 11, 0)
    assert oldest(">= 20.19.4 || >= 22.18.0 || >= 24.6.0") == (20, 19, 4)

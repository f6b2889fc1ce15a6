"""Every ``examples/lab/*.yaml`` run in process, reduced to a summary kept in the repository.

A scenario file runs as ``kgroup lab run`` runs it (its own seed, ownership timeline
recorded); a sweep file is expanded as ``kgroup lab sweep`` expands it and every group is
simulated as the Spark task simulates it (the first group of each variant with its timeline,
as the sweep's report example). Per group the summary keeps the summary row as it is and a
SHA-256 of each other thing the lab measured (the disruption windows, per-member stop times,
the ownership timeline, the generations: when each rebalance's generation or group epoch
began) — so a changed figure names itself, and a changed detail still
fails. Nothing here depends on the machine or the clock: the same tree gives the same file.

    .venv/bin/python tests/lab/lab_examples.py --write    # regenerate after an intended change
    .venv/bin/python tests/lab/lab_examples.py            # compare this tree with the file
    PYTHONPATH=OTHER/src .venv/bin/python tests/lab/lab_examples.py   # another tree's src

The last line compares another checkout's lab (a tree before a refactor, say) with the
stored results; exit status 1 and the differences printed when they differ.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from kgroup.lab.results import GroupResult, simulate
from kgroup.lab.scenario import parse_scenario, scenario_from_dict
from kgroup.lab.sweep import parse_sweep

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lab"
EXPECTED = Path(__file__).resolve().parent / "expected" / "examples.json"
SWEEP_KEYS = {"scenario", "base", "variants"}


DETAILS = ("windows", "stop_s", "timeline", "generations")


def _sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _row(result: GroupResult) -> dict[str, Any]:
    return {"summary": result.summary,
            "sha256": {name: _sha256(getattr(result, name)) for name in DETAILS}}


def run_example(path: Path) -> list[dict[str, Any]]:
    """One example file's groups, each as its summary row and the digest of the rest."""
    text = path.read_text()
    data = yaml.safe_load(text)
    if isinstance(data, dict) and SWEEP_KEYS & set(data):
        sweep = parse_sweep(text, source=str(path), read=lambda p: (path.parent / p).read_text())
        rows, timed = [], set()
        for g in sweep.groups:
            sc = scenario_from_dict(dict(g.scenario), source=g.group)
            rows.append(_row(simulate(sc, group=g.group, variant=g.variant,
                                      record_timeline=g.variant not in timed)))
            timed.add(g.variant)
        return rows
    sc = parse_scenario(text, source=str(path))
    return [_row(simulate(sc, group=f"{sc.name}/seed={sc.seed}", variant=sc.name, record_timeline=True))]


def examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


def expected() -> dict[str, list[dict[str, Any]]]:
    return json.loads(EXPECTED.read_text())


def differences(name: str, got: list[dict[str, Any]], want: list[dict[str, Any]] | None) -> list[str]:
    """What differs between one example's runs and its stored rows, one line each."""
    if want is None:
        return [f"{name}: no stored results (regenerate with tests/lab/lab_examples.py --write)"]
    if len(got) != len(want):
        return [f"{name}: {len(got)} groups, {len(want)} stored"]
    out = []
    for g, w in zip(got, want):
        group = g["summary"].get("group")
        for key in sorted(set(g["summary"]) | set(w["summary"])):
            if g["summary"].get(key) != w["summary"].get(key):
                out.append(f"{name} {group}: {key} {g['summary'].get(key)!r}, stored {w['summary'].get(key)!r}")
        out += [f"{name} {group}: {part} differs" for part in DETAILS if g["sha256"][part] != w["sha256"].get(part)]
    return out


def main(argv: list[str]) -> int:
    results = {p.name: run_example(p) for p in examples()}
    if "--write" in argv:
        EXPECTED.parent.mkdir(exist_ok=True)
        EXPECTED.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        print(f"wrote {EXPECTED} ({len(results)} examples)")
        return 0
    stored = expected()
    lines = [line for name, got in results.items() for line in differences(name, got, stored.get(name))]
    lines += [f"{name}: stored, but no such example" for name in sorted(set(stored) - set(results))]
    print("\n".join(lines) if lines else f"identical: {len(results)} examples")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

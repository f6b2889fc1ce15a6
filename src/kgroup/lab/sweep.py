"""Sweeps: one base scenario crossed with variants, a parameter grid and seeds.

    name: bounce-comparison
    scenario: rolling-bounce.yaml      # a scenario file (relative to this one) ...
    # base: {...}                      # ... or the scenario inline
    variants:                          # each a label and overrides of the scenario
      - {label: dynamic-eager, members: {protocol: classic, assignor: range}}
      - {label: static, members: {static: true}}
    vary:                              # optional grid, crossed with the variants
      members.count: [10, 50]
    seeds: 3                           # a count (seeds 1..n) or a list
    groups: 1                          # groups per variant, grid cell and seed

``expand`` turns that into one ``SweepGroup`` per simulated group, each carrying the full
scenario data, so a Spark task needs nothing but the spec to run its groups. Pure: reading
the files is the caller's business (``read`` is handed in).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from typing import Any, Callable

import yaml

from kgroup.lab.scenario import ScenarioError, scenario_from_dict


@dataclass(frozen=True, slots=True)
class SweepGroup:
    """One group of a sweep: its id, its variant label, and its scenario data."""

    group: str
    variant: str
    scenario: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Sweep:
    name: str
    groups: tuple[SweepGroup, ...]

    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.variant for g in self.groups))


def parse_sweep(text: str, *, source: str = "sweep", read: Callable[[str], str] | None = None) -> Sweep:
    """A Sweep from YAML text; ``read(path)`` returns the text of a referenced scenario file."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping with scenario or base, variants, seeds")
    known = {"name", "scenario", "base", "variants", "vary", "seeds", "groups"}
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise ScenarioError(f"{source}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    if ("scenario" in data) == ("base" in data):
        raise ScenarioError(f"{source}: give exactly one of scenario (a file) or base (inline)")
    if "scenario" in data:
        if read is None:
            raise ScenarioError(f"{source}: scenario files cannot be read here; inline it as base")
        path = str(data["scenario"])
        try:
            base = yaml.safe_load(read(path)) or {}
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{path}: not valid YAML ({exc})") from None
    else:
        base = data["base"] or {}
    if not isinstance(base, dict):
        raise ScenarioError(f"{source}: the base scenario must be a mapping")
    variants = data.get("variants") or [{"label": str(base.get("name", "base"))}]
    if not isinstance(variants, list) or not all(isinstance(v, dict) for v in variants):
        raise ScenarioError(f"{source}: variants must be a list of mappings, each with a label")
    vary = data.get("vary") or {}
    if not isinstance(vary, dict) or not all(isinstance(v, list) and v for v in vary.values()):
        raise ScenarioError(f"{source}: vary must map dotted field paths to non-empty lists")
    seeds = _seeds(data.get("seeds", 1), source)
    per = data.get("groups", 1)
    if not isinstance(per, int) or isinstance(per, bool) or per < 1:
        raise ScenarioError(f"{source}: groups must be a positive integer")
    groups = []
    labels = set()
    for v in variants:
        v = dict(v)
        label = str(v.pop("label", "")) or f"variant-{len(labels)}"
        if label in labels:
            raise ScenarioError(f"{source}: variant label {label!r} is used twice")
        labels.add(label)
        for cell in itertools.product(*vary.values()) if vary else [()]:
            scenario = _merge(copy.deepcopy(base), v)
            suffix = []
            for path, value in zip(vary, cell):
                _set(scenario, str(path), value, source)
                suffix.append(f"{str(path).rsplit('.', 1)[-1]}={value}")
            name = label + (f" {' '.join(suffix)}" if suffix else "")
            for seed in seeds:
                for i in range(per):
                    sc = dict(scenario, seed=seed * 100_003 + i if per > 1 else seed, name=name)
                    groups.append(SweepGroup(f"{name}/seed={seed}/{i}", name, sc))
    # Validate each distinct scenario once, so a mistake names its variant.
    checked: set[str] = set()
    for g in groups:
        if g.variant not in checked:
            checked.add(g.variant)
            scenario_from_dict(dict(g.scenario), source=f"{source}: variant {g.variant!r}")
    return Sweep(str(data.get("name", "sweep")), tuple(groups))


def _seeds(raw: Any, source: str) -> list[int]:
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1:
        return list(range(1, raw + 1))
    if isinstance(raw, list) and raw and all(isinstance(s, int) and not isinstance(s, bool) for s in raw):
        return list(raw)
    raise ScenarioError(f"{source}: seeds must be a count >= 1 or a list of integers")


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _set(data: dict[str, Any], path: str, value: Any, source: str) -> None:
    parts = path.split(".")
    node = data
    for part in parts[:-1]:
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ScenarioError(f"{source}: vary path {path!r} goes through {part!r}, which is not a mapping")
        node = nxt
    node[parts[-1]] = copy.deepcopy(value)

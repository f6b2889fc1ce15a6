"""Helpers for lab tests: build a scenario from a few overrides and run it."""

from __future__ import annotations

import copy
from typing import Any

from kgroup.lab.results import GroupResult, simulate
from kgroup.lab.scenario import scenario_from_dict

BASE: dict[str, Any] = {
    "name": "t", "seed": 1, "duration_s": 400, "topics": {"orders": 24},
    "members": {"count": 6, "protocol": "classic", "assignor": "range", "static": False,
                "session_timeout_ms": 10_000, "heartbeat_interval_ms": 3_000},
}


def scenario(**overrides: Any) -> dict[str, Any]:
    """BASE with overrides; ``members`` and ``coordinator`` merge into BASE's."""
    data = copy.deepcopy(BASE)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


def run(data: dict[str, Any], **kwargs: Any) -> GroupResult:
    return simulate(scenario_from_dict(copy.deepcopy(data)), **kwargs)

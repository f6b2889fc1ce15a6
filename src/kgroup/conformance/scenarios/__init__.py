"""The differential scenarios, registered by area.

A scenario is written once, as an `async def name(t: Target)`, and registered with
`@scenario(area, title, rule=...)`: the rule is what Kafka does that the scenario pins
down, in a sentence (the report lists it). `clients` names the real clients it drives
("raw" is our own kio-built requests, exact sequences); `pair` the brokers it runs on
("secured": SASL/SCRAM, an authorizer, an initial rebalance delay and a group size limit). `SCENARIOS` holds them all, in
the order the modules register them; `load()` imports every module of this package.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from kgroup.conformance.target import SCENARIO_TIMEOUT, ScenarioFn

AREAS = ("classic", "consumer", "offsets", "share", "streams", "transactions", "data", "admin", "security")


@dataclass(frozen=True)
class DifferentialScenario:
    id: str
    area: str
    title: str
    rule: str
    clients: tuple[str, ...]
    fn: ScenarioFn
    timeout: float = SCENARIO_TIMEOUT
    pair: str = "plain"          # "secured": the pair with SASL, an authorizer, users


SCENARIOS: dict[str, DifferentialScenario] = {}


def scenario(area: str, title: str, *, rule: str, clients: tuple[str, ...] = ("raw",),
             timeout: float = SCENARIO_TIMEOUT, name: str | None = None, pair: str = "plain"):
    """Register the decorated `async def (t: Target)` (under `name`, else its own name)."""
    if area not in AREAS:
        raise ValueError(f"unknown area {area!r}")

    def register(fn: ScenarioFn) -> ScenarioFn:
        sid = name or fn.__name__
        if sid in SCENARIOS:
            raise ValueError(f"scenario {sid} registered twice")
        SCENARIOS[sid] = DifferentialScenario(sid, area, title, rule, clients, fn, timeout, pair)
        return fn
    return register


def load() -> dict[str, DifferentialScenario]:
    """Import every scenario module; returns the registry."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return SCENARIOS

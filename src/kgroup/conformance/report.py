"""The conformance report: every differential scenario and every advertised API version, run
against Apache Kafka 4.4 and kgroup, written to docs/conformance.md.

How this works: `run_report` starts the plain pair and the secured pair (kgroup.conformance.
sides), runs each registered scenario on its pair, runs the wire checks (kgroup.conformance.
wire) on the plain pair, and `render` writes the markdown: the normalizations applied, per
area the scenarios (agree / explained divergence / diverge), per API every version either
broker advertises (compared and agreeing, compared with an explained divergence, served by
one broker only with the reason), and every divergence with what differs and why. An
unexplained divergence is listed as such and makes the command exit 1.

    .venv/bin/python -m kgroup.conformance            # writes docs/conformance.md
    .venv/bin/python -m kgroup.conformance --only classic_join --no-wire -o /tmp/c.md
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kgroup.conformance.divergences import SCENARIO_DIVERGENCES, Divergence
from kgroup.conformance.messages import api_name
from kgroup.conformance.scenarios import AREAS, DifferentialScenario, load
from kgroup.conformance.transcript import NORMALIZATIONS

KAFKA_VERSION = "4.4.0"


@dataclass
class ScenarioResult:
    scenario: DifferentialScenario
    status: str                     # agree | explained | diverge | stale | failed
    detail: str = ""
    seconds: float = 0.0
    divergence: Divergence | None = None


@dataclass
class Report:
    scenarios: list[ScenarioResult] = field(default_factory=list)
    wire: list[Any] = field(default_factory=list)          # wire.VersionResult
    advertised: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    wire_normalizations: dict[str, str] = field(default_factory=dict)

    @property
    def unexplained(self) -> list[str]:
        out = [f"scenario {r.scenario.id}: {r.status}" for r in self.scenarios
               if r.status in ("diverge", "stale", "failed")]
        out += [f"{r.name} v{r.version}: {r.status}" for r in self.wire if r.unexplained]
        return out


def scenario_result(scenario: DifferentialScenario, outcome: Any) -> ScenarioResult:
    """What one run of `scenario` (a target.Outcome) says, against divergences.py."""
    known = SCENARIO_DIVERGENCES.get(scenario.id)
    if outcome.errors:
        status = "failed"
    elif not outcome.agree:
        status = "diverge"
    elif known is not None:
        status = "explained" if outcome.comparison.known_differs else "stale"
    else:
        status = "agree"
    return ScenarioResult(scenario, status, "" if status in ("agree", "explained") else outcome.explain()[:3000],
                          outcome.seconds, known)


def run_scenarios(pairs: dict[str, Any], scenarios: Iterable[DifferentialScenario],
                  progress: Callable[[ScenarioResult], None] | None = None) -> list[ScenarioResult]:
    results = []
    for s in scenarios:
        known = SCENARIO_DIVERGENCES.get(s.id)
        outcome = pairs[s.pair].run_scenario(s.id, s.fn, s.timeout, known=known.labels if known else ())
        results.append(scenario_result(s, outcome))
        if progress is not None:
            progress(results[-1])
    return results


def run_report(only: set[str] | None = None, wire_checks: bool = True,
               progress: Callable[[str], None] = print) -> Report:
    """Start both pairs, run everything, stop them; the report's data."""
    from kgroup.conformance import sides  # noqa: PLC0415 (starts processes: imported when run)
    from kgroup.conformance import wire  # noqa: PLC0415

    chosen = [s for s in load().values() if only is None or s.id in only or s.area in only]
    report = Report(wire_normalizations=dict(wire.WIRE_NORMALIZATIONS))
    plain = sides.start_pair()
    secured = None
    try:
        if any(s.pair == "secured" for s in chosen):
            secured = sides.start_secured_pair()
        report.advertised = plain.advertised
        report.scenarios = run_scenarios({"plain": plain, "secured": secured}, chosen,
                                         lambda r: progress(f"{r.scenario.id}: {r.status} ({r.seconds:.1f} s)"))
        if wire_checks:
            report.wire = wire.run_wire_checks(
                plain.kafka.direct, plain.kgroup.direct, plain.advertised, plain.run,
                progress=lambda r: progress(f"{r.name} v{r.version}: {r.status}"))
    finally:
        if secured is not None:
            sides.close_pair(secured)
        sides.close_pair(plain)
    return report


# ---- markdown ------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _ranges(values: list[int]) -> str:
    """1, 2, 3, 5 -> "1–3, 5"."""
    out: list[str] = []
    for v in sorted(values):
        if out and out[-1].split("–")[-1] == str(v - 1):
            out[-1] = f"{out[-1].split('–')[0]}–{v}"
        else:
            out.append(str(v))
    return ", ".join(out)


def render(report: Report, generated: str | None = None) -> str:
    when = generated or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Conformance: kgroup against Apache Kafka " + KAFKA_VERSION,
        "",
        f"Generated by `.venv/bin/python -m kgroup.conformance` on {when} (do not edit by hand; run it again).",
        "The same scenarios, with the same clients, run on a single-node KRaft Apache Kafka "
        f"{KAFKA_VERSION} and on kgroup at once; what a client can observe (per request the API, version and "
        "answer; group states, generations and epochs; assignments; committed offsets; records delivered; "
        "describe and list outputs) is recorded by a proxy in front of each broker and compared after the "
        "named normalizations below only. The same comparison runs in `make test` "
        "(tests/reference/test_differential_scenarios.py, tests/reference/test_differential_wire.py, "
        "tests/reference/test_differential_can_fail.py); the README's \"Tests and benchmarks\" says how to run "
        "a part of it.",
        "",
    ]
    scen = report.scenarios
    counts = {k: sum(1 for r in scen if r.status == k) for k in ("agree", "explained")}
    wire_compared = [r for r in report.wire if r.version >= 0 and r.status in ("agree", "explained", "open", "diverge")
                     and r.lines]
    unexplained = report.unexplained
    lines += [
        "## Summary",
        "",
        "| | count |",
        "|---|---|",
        f"| scenarios | {len(scen)} |",
        f"| scenarios agreeing | {counts['agree']} |",
        f"| scenarios with an explained divergence | {counts['explained']} |",
        f"| API versions advertised by either broker | {sum(1 for r in report.wire if r.version >= 0)} |",
        f"| API versions compared on the wire | {len(wire_compared)} |",
        f"| of them agreeing | {sum(1 for r in wire_compared if r.status == 'agree')} |",
        f"| of them with an explained divergence | {sum(1 for r in wire_compared if r.status == 'explained')} |",
        f"| of them with an open finding (found, not closed yet) | "
        f"{sum(1 for r in wire_compared if r.status == 'open')} |",
        f"| **unexplained divergences** | **{len(unexplained)}** |",
        "",
    ]
    if unexplained:
        lines += ["Unexplained:", ""] + [f"- {_cell(u)}" for u in unexplained] + [""]
    lines += ["## Normalizations", "", "Nothing else is rewritten before comparing.", "",
              "| name | why |", "|---|---|"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in {**NORMALIZATIONS, **report.wire_normalizations}.items()]
    lines.append("")

    lines += ["## Scenarios", ""]
    for area in AREAS:
        rows = [r for r in scen if r.scenario.area == area]
        if not rows:
            continue
        lines += [f"### {area} ({len(rows)})", "", "| scenario | clients | result | rule |", "|---|---|---|---|"]
        for r in rows:
            s = r.scenario
            result = r.status if r.divergence is None else f"{r.status}: {r.divergence.kind}"
            lines.append(f"| `{s.id}` {_cell(s.title)} | {', '.join(s.clients)} | {_cell(result)} | {_cell(s.rule)} |")
        lines.append("")

    lines += ["## API versions", "",
              "Every (API, version) either broker advertises in ApiVersions. *Compared*: hypothesis-generated "
              "well-formed requests (null and empty arrays, null strings, optional and tagged fields set and "
              "unset, unknown groups and topics), the first also with bytes after its body and with an unknown "
              "tagged field, sent to both brokers and the answers compared field by field. A last row per API "
              "asks both for a version neither serves.", "",
              "| API | key | agree | explained | open finding | diverge | not served by kgroup | not comparable |",
              "|---|---|---|---|---|---|---|---|"]
    by_key: dict[int, list[Any]] = {}
    for r in report.wire:
        by_key.setdefault(r.api_key, []).append(r)
    for key in sorted(by_key):
        rs = [r for r in by_key[key] if r.version >= 0]

        def of(status: str) -> str:
            return _ranges([r.version for r in rs if r.status == status])
        lines.append(f"| {api_name(key)} | {key} | {of('agree')} | {of('explained')} | {of('open')} | {of('diverge')} | "
                     f"{of('not served')} | {of('not comparable')} |")
    lines.append("")

    lines += ["## Divergences", "",
              "Each difference that remains, with why it remains. *kind*: `single host` — what a one-node broker "
              "cannot do as a cluster does; `open: issue N` — a feature of a later issue; `kafka defect` — a "
              "failure of Kafka's own; `not client-facing` — requests only brokers send; `open: found, to close` — "
              "a difference in behaviour the wire checks found that kgroup has not closed yet (a bug to fix, not a "
              "reason).",
              "", "### In scenarios", "", "| scenario | kind | what differs | why |", "|---|---|---|---|"]
    for r in scen:
        if r.divergence is not None:
            d = r.divergence
            lines.append(f"| `{r.scenario.id}` | {_cell(d.kind)} | {_cell(d.what)} | {_cell(d.why)} |")
    lines += ["", "### On the wire", "", "| API | versions | kind | what differs | why |", "|---|---|---|---|---|"]
    grouped: dict[tuple[int, str, str, str], list[int]] = {}
    for r in report.wire:
        if r.divergence is not None and r.version >= 0:
            d = r.divergence
            grouped.setdefault((r.api_key, d.kind, d.what, d.why), []).append(r.version)
    for (key, kind, what, why), versions in sorted(grouped.items(), key=lambda kv: (kv[0][0], min(kv[1]))):
        lines.append(f"| {api_name(key)} | {_ranges(versions)} | {_cell(kind)} | {_cell(what)} | {_cell(why)} |")
    lines.append("")
    failing = [r for r in scen if r.status in ("diverge", "stale", "failed")] + [r for r in report.wire
                                                                                  if r.unexplained]
    if failing:
        lines += ["## Unexplained divergences in detail", ""]
        for r in failing:
            name = f"scenario {r.scenario.id}" if isinstance(r, ScenarioResult) else f"{r.name} v{r.version}"
            lines += [f"### {name}", "", "```text", r.detail[:3000], "```", ""]
    return "\n".join(lines)

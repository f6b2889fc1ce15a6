"""`python -m kgroup.conformance`: run the differential scenarios and the wire checks against
Apache Kafka 4.4 and write docs/conformance.md (kgroup.conformance.report). Needs Java 17 and
`make reference`. Exit status 1 when a divergence is unexplained."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kgroup.conformance.report import render, run_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgroup.conformance", description=__doc__)
    parser.add_argument("-o", "--output", default="docs/conformance.md", help="where to write the report")
    parser.add_argument("--only", action="append", default=None,
                        help="a scenario id or area to run (repeatable; default: all)")
    parser.add_argument("--no-wire", action="store_true", help="skip the wire checks")
    args = parser.parse_args(argv)
    report = run_report(set(args.only) if args.only else None, wire_checks=not args.no_wire,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(render(report) + "\n")
    bad = report.unexplained
    print(f"{args.output}: {len(report.scenarios)} scenarios, "
          f"{sum(1 for r in report.wire if r.version >= 0)} API versions, {len(bad)} unexplained divergences")
    for line in bad:
        print("  unexplained:", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Bring in Apache Kafka's JSON message specs for the versions kio lacks or has differently.

kio (our Kafka codec library) ships one frozen dataclass per message version, generated from
an older Kafka than the 4.4 we serve and test against: it lacks some versions (ApiVersions
v5, TxnOffsetCommit v6, ...) and whole APIs (93, 94). ``kgroup.wire.spec_classes`` builds,
at run time, kio-format classes from Kafka's JSON specs; this script decides which versions
need one and copies their specs, as Kafka ships them, from kafka-clients' jar into
``src/kgroup/wire/specs/`` (committed package data, so serving needs no Java and no jar),
with the index ``kgroup.wire.schemas`` reads (``specs/index.json``).

Which versions: every (message, version) of a request/response spec that kio has no class
for ("missing"), or whose kio class differs on the wire from what ``spec_classes.build``
makes of Kafka 4.4's spec ("differs"). A kio class that differs in names only ("renamed":
Kafka renamed a field after kio was generated) stays kio's. ``build`` reproduces every other
kio class exactly (``spec_classes.shape``), which is how its rules were checked.

Usage: ``python tools/kiogen.py [--jar JAR] [--out DIR]`` (``make schema``); ``--check``
compares instead of writing and exits 1 on a difference; ``--report`` prints, per message,
which versions kio lacks or has differently, and why.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kgroup.wire.spec_classes import Versions, build, message_module, parse_spec, shape, wire_signature

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "src" / "kgroup" / "wire" / "specs"
KAFKA_PATH = "common/message/"


@dataclasses.dataclass(frozen=True)
class Spec:
    file: str                 # e.g. "TxnOffsetCommitRequest.json"
    text: str                 # as Kafka ships it, comments and all
    spec: dict[str, Any]


def read_specs(jar: Path) -> dict[str, Spec]:
    """``{file name: Spec}`` for every ``common/message/*.json`` in Kafka's clients jar."""
    specs = {}
    with zipfile.ZipFile(jar) as z:
        for name in sorted(z.namelist()):
            if name.startswith(KAFKA_PATH) and name.endswith(".json"):
                text = z.read(name).decode()
                file = name.rsplit("/", 1)[1]
                specs[file] = Spec(file, text, parse_spec(text))
    return specs


def kio_class(spec: dict[str, Any], version: int) -> type | None:
    """kio's class of (spec, version), or None if kio has none."""
    module = f"kio.schema.{message_module(spec)}.v{version}.{spec['type']}"
    try:
        return getattr(importlib.import_module(module), spec["name"])
    except ModuleNotFoundError:
        return None


@dataclasses.dataclass(frozen=True)
class Plan:
    module: str       # kio module name, e.g. "txn_offset_commit"
    version: int
    kind: str         # "request" / "response" (/ "data" / "header" in the report)
    api_key: int
    class_name: str
    reason: str       # "missing" / "differs" / "renamed"
    file: str         # the spec's file name


def plan(specs: dict[str, Spec]) -> Iterator[Plan]:
    """Every message version kio lacks or has differently. Headers and data types
    (ConsumerProtocolSubscription, ...) are compared too, for the report; kio lacks only
    AbortedTxn (a log index entry, not written) and none differs."""
    for file, s in specs.items():
        spec = s.spec
        if spec["type"] not in ("request", "response", "data", "header"):
            continue
        for version in Versions.parse(spec["validVersions"]).each():
            ours = build(spec, version)
            theirs = kio_class(spec, version)
            if theirs is None:
                reason = "missing"
            elif shape(theirs) == shape(ours):
                continue
            elif wire_signature(theirs) != wire_signature(ours):
                reason = "differs"
            else:
                reason = "renamed"      # same bytes, other names: kio's class stays
            yield Plan(message_module(spec), version, spec["type"], spec.get("apiKey", -1),
                       spec["name"], reason, file)


INDEX = "index.json"


def render_index(plans: list[Plan]) -> str:
    """The index kgroup.wire.schemas reads: one entry per built (api, version, kind)."""
    about = ("Which message versions kgroup builds from the specs here, and why: \"missing\" "
             "(kio 0.6.5 has no class) or \"differs\" (kio's class disagrees with Kafka 4.4's "
             "spec on the wire). Written by tools/kiogen.py (make schema).")
    rows = [json.dumps({"api_key": p.api_key, "version": p.version, "kind": p.kind, "api": p.module,
                        "spec": p.file, "why": p.reason})
            for p in sorted(plans, key=lambda p: (p.api_key, p.version, p.kind))]
    return "{\n" + f'  "about": {json.dumps(about)},\n' + '  "schemas": [\n    ' + \
        ",\n    ".join(rows) + "\n  ]\n}\n"


def files(specs: dict[str, Spec]) -> dict[str, str]:
    """File name -> text of every file the script owns in the specs directory: the index and
    the spec of each version kio lacks or has differently (a spec holds every version)."""
    plans = [p for p in plan(specs) if p.reason != "renamed" and p.kind in ("request", "response")]
    out = {INDEX: render_index(plans)}
    for p in plans:
        out[p.file] = specs[p.file].text
    return out


def owned(out: Path) -> dict[str, str]:
    """What the specs directory holds of the script's files (the index, the specs)."""
    if not out.exists():
        return {}
    return {p.name: p.read_text() for p in sorted(out.iterdir())
            if p.suffix == ".json"}


def default_jar() -> Path | None:
    """Kafka's clients jar in the reference lib (``make reference``, or $KGROUP_REFERENCE_LIB)."""
    from kgroup.testing.reference import KAFKA_VERSION, reference_lib

    lib = reference_lib()
    jar = lib / f"kafka-clients-{KAFKA_VERSION}.jar" if lib is not None else None
    return jar if jar is not None and jar.exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", type=Path, default=None, help="default: the reference lib's clients jar")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare, write nothing; exit 1 on a difference")
    ap.add_argument("--report", action="store_true", help="list the versions kio lacks or has differently")
    args = ap.parse_args(argv)
    jar = args.jar or default_jar()
    if jar is None:
        ap.error("no Kafka clients jar: run `make reference` or pass --jar")
    specs = read_specs(jar)
    if args.report:
        for p in sorted(plan(specs), key=lambda p: (p.api_key, p.version, p.kind)):
            print(f"{p.api_key:3d} {p.class_name:48s} v{p.version:<3d} {p.reason}")
        return 0
    wanted = files(specs)
    existing = owned(args.out)
    if args.check:
        stale = sorted(k for k in wanted.keys() | existing.keys() if wanted.get(k) != existing.get(k))
        for k in stale:
            print(f"out of date: {args.out / k} (run `make schema`)", file=sys.stderr)
        return 1 if stale else 0
    for name in existing.keys() - wanted.keys():
        (args.out / name).unlink()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in wanted.items():
        if existing.get(name) != text:
            (args.out / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

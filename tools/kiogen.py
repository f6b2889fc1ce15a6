"""Generate kio-format schema classes from Apache Kafka's JSON message specs.

kio (our Kafka codec library) ships one frozen dataclass per message version, generated from
Kafka's ``common/message/*.json``; its readers and writers introspect those classes (field
order, the ``kafka_type`` and ``tag`` in each field's metadata, the type hints, the
defaults), so a class written in the same shape is read and written by kio like its own.
kio 0.6.5 was generated from an older Kafka than the 4.4 we serve and test against: it lacks
some versions (ApiVersions v5, TxnOffsetCommit v6, ...), whole APIs (93, 94), and a few of
its classes differ from Kafka 4.4's specs. This script writes, for exactly those versions,
classes in kio's format into ``src/kgroup/wire/schema/`` (committed, so serving needs no Java
and no jar), plus an index the registry (``kgroup.wire.schemas``) reads.

Which versions: every (message, version) of a request/response spec that kio has no class
for, or whose kio class is not what this generator makes of Kafka 4.4's spec (compared
ignoring the module docstring — the generator reproduces kio's own classes for every other
version byte for byte, which is how its conventions below were checked).

kio's conventions, as observed in its classes:
- field names in snake_case; an ``...Ms`` int32 field is a ``timedelta_i32`` duration, an
  ``...Ms`` int64 one a ``timedelta_i64`` duration unless it names a point in time
  (``...TimestampMs``, ``...AppendTimeMs``, ``...StartTimeMs``: ``datetime_i64``), and the
  name loses its ``_ms``; an int16 ``...ErrorCode`` is an ``ErrorCode``;
- ``entityType`` becomes kio's phantom type (GroupId, TopicName, BrokerId, ...);
- nested structs are module-level classes named for their type, written before their user;
- defaults: the spec's default where it gives one; primitive arrays default to ``()``;
  tagged fields always carry a default (the spec's or Kafka's implicit one);
- black's layout at 88 columns, isort's single-line imports.

Usage: ``python tools/kiogen.py [--jar JAR] [--out DIR]`` (``make schema``); ``--check``
compares instead of writing and exits 1 on a difference; ``--report`` prints, per message,
which versions are written and why.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import keyword
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "src" / "kgroup" / "wire" / "schema"
PACKAGE = "kgroup.wire.schema"
LINE = 88

# ---- reading the specs --------------------------------------------------------------------


def strip_comments(text: str) -> str:
    """Kafka's spec files are JSON with ``//`` line comments (never inside strings)."""
    out = []
    for line in text.splitlines():
        in_string = False
        cut = len(line)
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\" and in_string:
                i += 2
                continue
            if c == '"':
                in_string = not in_string
            elif c == "/" and not in_string and line[i + 1 : i + 2] == "/":
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def read_specs(jar: Path) -> dict[str, dict[str, Any]]:
    """``{file name: spec}`` for every ``common/message/*.json`` in Kafka's clients jar."""
    specs = {}
    with zipfile.ZipFile(jar) as z:
        for name in sorted(z.namelist()):
            if name.startswith("common/message/") and name.endswith(".json"):
                specs[name.rsplit("/", 1)[1]] = json.loads(strip_comments(z.read(name).decode()))
    return specs


@dataclasses.dataclass(frozen=True)
class Versions:
    """A spec's version range: ``"0+"``, ``"1-3"``, ``"5"`` or ``"none"``."""

    low: int
    high: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)  # empty
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            a, b = text.split("-")
            return cls(int(a), int(b))
        return cls(int(text), int(text))

    def __contains__(self, v: int) -> bool:
        return self.low <= v and (self.high is None or v <= self.high)

    def each(self) -> range:
        return range(self.low, (self.high if self.high is not None else self.low - 1) + 1)


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def message_module(spec: dict[str, Any]) -> str:
    """kio's module name of a message: ``HeartbeatRequest`` → ``heartbeat``."""
    name = spec["name"]
    for suffix in ("Request", "Response"):
        if spec["type"] == suffix.lower() and name.endswith(suffix):
            name = name[: -len(suffix)]
    return snake(name)


# ---- one message version as classes --------------------------------------------------------

PRIMITIVES = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "uint16": "u16",
    "int32": "i32",
    "uint32": "u32",
    "int64": "i64",
    "float64": "f64",
    "string": "str",
    "bytes": "bytes",
    "records": "Records",
    "uuid": "uuid.UUID",
}
ENTITY_TYPES = {
    "groupId": "GroupId",
    "topicName": "TopicName",
    "brokerId": "BrokerId",
    "transactionalId": "TransactionalId",
    "producerId": "ProducerId",
}
PRIMITIVE_MODULE = "kio.static.primitive"
POINT_IN_TIME = ("TimestampMs", "AppendTimeMs", "StartTimeMs")
ERROR_CODES = frozenset({"ErrorCode", "PartitionErrorCode"})
RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins))
# Fields Kafka renamed after kio was generated, same bytes on the wire: versions kio lacks keep
# kio's name so one handler reads every version (spec name -> kio's name, per message).
KIO_NAMES = {
    ("TxnOffsetCommitRequest", "GenerationIdOrMemberEpoch"): "generation_id",
}


def kafka_type(field: dict[str, Any], base: str) -> str:
    name = field["name"]
    if name.endswith("Ms") and base == "int32":
        return "timedelta_i32"
    if name.endswith("Ms") and base == "int64":
        return "datetime_i64" if name.endswith(POINT_IN_TIME) else "timedelta_i64"
    if base == "int16" and name in ERROR_CODES:
        return "error_code"
    return base


def python_name(msg: Message, field: dict[str, Any], ktype: str | None = None) -> str:
    name = KIO_NAMES.get((msg.spec["name"], field["name"])) or snake(field["name"])
    if name in RESERVED:
        name += "_"
    if ktype in ("timedelta_i32", "timedelta_i64", "datetime_i64"):
        name = name.removesuffix("_ms")
    return name


PYTHON_OF_KTYPE = {
    "timedelta_i32": "i32Timedelta",
    "timedelta_i64": "i64Timedelta",
    "datetime_i64": "TZAware",
    "error_code": "ErrorCode",
}


class Module:
    """The source text of one generated module, and the names it must import."""

    def __init__(self) -> None:
        self.plain: set[str] = set()                  # import x
        self.froms: set[tuple[str, str]] = set()      # from m import n
        self.classes: list[str] = []
        self.done: set[str] = set()
        self.defaultable: dict[str, bool] = {}   # struct -> constructible with no arguments

    def need(self, python_type: str) -> None:
        if python_type.startswith("uuid."):
            self.plain.add("uuid")
        elif python_type in ENTITY_TYPES.values():
            self.froms.add(("kio.schema.types", python_type))
        elif python_type == "ErrorCode":
            self.froms.add(("kio.schema.errors", "ErrorCode"))
        elif python_type not in ("bool", "str", "bytes"):
            self.froms.add((PRIMITIVE_MODULE, python_type))


@dataclasses.dataclass
class Message:
    spec: dict[str, Any]
    version: int

    @property
    def kind(self) -> str:
        return self.spec["type"]

    @property
    def flexible(self) -> bool:
        return self.version in Versions.parse(self.spec.get("flexibleVersions"))

    def header(self) -> tuple[str, str]:
        """(module, class) of the header schema."""
        if self.kind == "request":
            v = 2 if self.flexible else 1
            return f"kio.schema.request_header.v{v}.header", "RequestHeader"
        v = 1 if self.flexible and self.spec["apiKey"] != 18 else 0
        return f"kio.schema.response_header.v{v}.header", "ResponseHeader"

    def common(self, name: str) -> dict[str, Any] | None:
        for s in self.spec.get("commonStructs", ()):
            if s["name"] == name:
                return s
        return None


def present(field: dict[str, Any], version: int) -> bool:
    return version in Versions.parse(field["versions"])


def render_default(python_type: str, ktype: str, raw: Any) -> str:
    if isinstance(raw, str) and raw == "null":
        return "None"
    if ktype == "bool":
        return "True" if str(raw).lower() == "true" else "False"
    if ktype == "string":
        return json.dumps(raw)
    if ktype in ("timedelta_i32", "timedelta_i64"):
        return f"{python_type}.parse(datetime.timedelta(milliseconds={int(str(raw), 0)}))"
    if ktype == "error_code":
        return f"ErrorCode({int(str(raw), 0)})"
    if ktype in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return f"{python_type}({int(str(raw), 0)})"
    if ktype == "float64":
        return f"f64({float(raw)})"
    raise ValueError(f"no default rendering for {ktype} {raw!r}")


def implicit_default(python_type: str, ktype: str) -> str:
    """Kafka's default for a tagged field the spec gives none."""
    return {
        "bool": "False",
        "string": '""',
        "bytes": 'b""',
        "uuid": "None",
        "error_code": "ErrorCode(0)",
        "timedelta_i32": f"{python_type}.parse(datetime.timedelta(milliseconds=0))",
        "timedelta_i64": f"{python_type}.parse(datetime.timedelta(milliseconds=0))",
    }.get(ktype, f"{python_type}(0)")


def render_field(mod: Module, msg: Message, field: dict[str, Any]) -> tuple[list[str], bool]:
    v = msg.version
    ftype: str = field["type"]
    array = ftype.startswith("[]")
    base = ftype[2:] if array else ftype
    nullable = v in Versions.parse(field.get("nullableVersions"))
    tagged = v in Versions.parse(field.get("taggedVersions")) and "tag" in field
    raw_default = field.get("default")
    args: list[str] = []
    if base in PRIMITIVES:
        ktype = kafka_type(field, base)
        name = python_name(msg, field, ktype)
        python_type = PYTHON_OF_KTYPE.get(ktype) or ENTITY_TYPES.get(
            field.get("entityType", ""), PRIMITIVES[base]
        )
        mod.need(python_type)
        if ktype in ("timedelta_i32", "timedelta_i64") and (raw_default is not None or tagged):
            if raw_default != "null":
                mod.plain.add("datetime")
        element = python_type + (" | None" if base == "uuid" else "")
        if array:
            annotation = f"tuple[{element}, ...]"
        else:
            annotation = element
        if ktype == "datetime_i64" and raw_default is not None and int(str(raw_default)) == -1:
            nullable, raw_default = True, "null"   # kio reads -1 as no time
        if nullable and not annotation.endswith("| None"):
            annotation += " | None"
        metadata = {"kafka_type": ktype}
        if tagged:
            metadata["tag"] = field["tag"]
        args.append("metadata=" + _dict(metadata))
        if array:
            if raw_default == "null" or (nullable and tagged and raw_default is None):
                args.append("default=None")
            else:
                args.append("default=()")
        elif raw_default is not None and not (raw_default == "" and ktype == "bytes"):
            args.append("default=" + render_default(python_type, ktype, raw_default))
        elif tagged:
            if nullable:
                args.append("default=None")
            else:
                args.append("default=" + implicit_default(python_type, ktype))
    else:
        struct = field if "fields" in field else msg.common(base)
        if struct is None:
            raise ValueError(f"{msg.spec['name']}: no struct {base}")
        render_struct(mod, msg, base, struct["fields"])
        name = python_name(msg, field)
        annotation = f"tuple[{base}, ...]" if array else base
        if nullable:
            annotation += " | None"
        if tagged:
            args.append("metadata=" + _dict({"tag": field["tag"]}))
            if nullable:
                args.append("default=None")
            else:
                if array:
                    args.append("default=()")
                elif mod.defaultable[base]:
                    args.append(f"default={base}()")
        elif not array and raw_default == "null":
            args.append("default=None")
    lines = _assignment(name, annotation, args)
    if field.get("about"):
        lines.append(f"    {_docstring(field['about'])}")
    return lines, any(a.startswith("default=") for a in args)


def _dict(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in d.items()) + "}"


def _assignment(name: str, annotation: str, args: list[str]) -> list[str]:
    """``name: annotation = field(args)`` laid out as black lays it out."""
    if not args:
        return [f"    {name}: {annotation}"]
    one = f"    {name}: {annotation} = field({', '.join(args)})"
    if len(one) <= LINE:
        return [one]
    inner = f"        {', '.join(args)}"
    if len(inner) <= LINE:
        return [f"    {name}: {annotation} = field(", inner, "    )"]
    return [f"    {name}: {annotation} = field(", *(f"        {a}," for a in args), "    )"]


def _docstring(text: str) -> str:
    text = text.replace("\\", "\\\\")
    if text.endswith('"'):
        text += " "
    return f'"""{text}"""'


def render_struct(mod: Module, msg: Message, name: str, fields: list[dict[str, Any]],
                  top: bool = False) -> None:
    if name in mod.done:
        return
    mod.done.add(name)
    body: list[str] = []
    defaults = []
    for field in fields:
        if present(field, msg.version):
            lines, has_default = render_field(mod, msg, field)
            body.extend(lines)
            defaults.append(has_default)
    mod.defaultable[name] = all(defaults)
    entity = msg.kind if top else "nested"
    lines = [
        "@dataclass(frozen=True, slots=True, kw_only=True)",
        f"class {name}:",
        f"    __type__: ClassVar = EntityType.{entity}",
        f"    __version__: ClassVar[i16] = i16({msg.version})",
        f"    __flexible__: ClassVar[bool] = {msg.flexible}",
    ]
    if msg.kind not in ("data", "header"):   # a data type or a header has neither
        header_class = msg.header()[1]
        lines += [f"    __api_key__: ClassVar[i16] = i16({msg.spec['apiKey']})",
                  f"    __header_schema__: ClassVar[type[{header_class}]] = {header_class}"]
    lines += body
    mod.classes.append("\n".join(lines))


def render_message(spec: dict[str, Any], version: int, source: str) -> str:
    """The module text of one request, response or data type version."""
    msg = Message(spec, version)
    mod = Module()
    mod.froms.update({("dataclasses", "dataclass"), ("typing", "ClassVar"),
                      ("kio.static.constants", "EntityType"), (PRIMITIVE_MODULE, "i16")})
    if msg.kind not in ("data", "header"):
        mod.froms.add(msg.header())
    render_struct(mod, msg, spec["name"], spec["fields"], top=True)
    if any("= field(" in c or "= field(\n" in c for c in mod.classes):
        mod.froms.add(("dataclasses", "field"))
    return "\n".join([
        '"""',
        source,
        '"""',
        "",
        _imports(mod),
        "",
        "",
        "\n\n\n".join(mod.classes),
        "",
    ])


def _natural(s: str) -> list[Any]:
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", s)]


def _name_key(name: str) -> tuple[int, list[Any]]:
    """isort's order_by_type: CONSTANTS, then Classes, then the rest; natural order within."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[0].isupper() else 2
    return kind, _natural(name)


def _imports(mod: Module) -> str:
    stdlib_plain = sorted(mod.plain)
    stdlib_from = sorted((m, n) for m, n in mod.froms if not m.startswith("kio"))
    kio_from = sorted(((m, n) for m, n in mod.froms if m.startswith("kio")),
                      key=lambda mn: (_natural(mn[0]), _name_key(mn[1])))
    stdlib_from.sort(key=lambda mn: (_natural(mn[0]), _name_key(mn[1])))
    blocks = []
    if stdlib_plain:
        blocks.append("\n".join(f"import {m}" for m in stdlib_plain))
    blocks.append("\n".join(f"from {m} import {n}" for m, n in stdlib_from))
    blocks.append("\n".join(f"from {m} import {n}" for m, n in kio_from))
    return "\n\n".join(blocks)


def render_init(names: list[str]) -> str:
    imports = "\n".join(f"from .{kind} import {name}" for kind, name in names)
    listed = "".join(f'    "{name}",\n' for _, name in names)
    return f"{imports}\n\n__all__ = (\n{listed})\n"


# ---- what to write ----------------------------------------------------------------------------


def kio_source(spec_file: str) -> str:
    return f"Generated from ``clients/src/main/resources/common/message/{spec_file}``."


def our_source(spec_file: str) -> str:
    return (f"Generated by tools/kiogen.py from Kafka 4.4.0's ``common/message/{spec_file}``"
            "\nin kio's format (see kgroup.wire.schemas).")


def kio_text(module: str, version: int, kind: str) -> str | None:
    """kio's own module text for (module, version, kind), or None if kio has no such class."""
    import importlib.util

    spec = importlib.util.find_spec("kio")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "schema" / module / f"v{version}" / f"{kind}.py"
    return path.read_text() if path.exists() else None


def _body(text: str) -> str:
    """A module's text without its docstring (kio's names the spec file by its repo path)."""
    return text.split('"""', 2)[2] if text.startswith('"""') else text


def load_text(text: str, name: str) -> Any:
    """Execute a generated module's text; return its class ``name``."""
    import types

    module = types.ModuleType(f"_kiogen_{name}_{len(_LOADED)}")
    _LOADED.append(module)
    sys.modules[module.__name__] = module      # dataclasses and get_type_hints look it up
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    return getattr(module, name)


_LOADED: list[Any] = []


def wire_signature(cls: Any) -> tuple[Any, ...]:
    """What decides a class's bytes: per field, in order, its kafka type (or its struct's
    signature), tag, arrayness, nullability, and a tagged field's default (a tagged field at
    its default is not written). Names and docs are left out."""
    import typing

    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint)
        nullable = type(None) in args
        inner = next((a for a in args if a is not type(None)), hint) if nullable else hint
        array = typing.get_origin(inner) is tuple
        element = typing.get_args(inner)[0] if array else inner
        nested = (typing.get_args(element)[0] if typing.get_origin(element) is not None
                  and dataclasses.is_dataclass(typing.get_args(element)[0]) else element)
        kind = (wire_signature(nested) if dataclasses.is_dataclass(nested)
                else f.metadata.get("kafka_type"))
        tag = f.metadata.get("tag")
        default = repr(f.default) if tag is not None else None
        out.append((kind, tag, array, nullable, default))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Plan:
    module: str       # kio module name, e.g. "txn_offset_commit"
    version: int
    kind: str         # "request" / "response"
    api_key: int
    class_name: str
    reason: str       # "missing" / "differs"
    text: str         # module text to write


def plan(specs: dict[str, dict[str, Any]]) -> Iterator[Plan]:
    """Every message version kio lacks or has differently, with the module text for it.
    Headers and data types (ConsumerProtocolSubscription, ...) are compared too, for the
    report; kio lacks only AbortedTxn (a log index entry, not written) and none differs."""
    for spec_file, spec in specs.items():
        if spec["type"] not in ("request", "response", "data", "header"):
            continue
        module = message_module(spec)
        for version in Versions.parse(spec["validVersions"]).each():
            ours = render_message(spec, version, our_source(spec_file))
            theirs = kio_text(module, version, spec["type"])
            if theirs is None:
                reason = "missing"
            elif _body(theirs) == _body(ours):
                continue
            elif wire_signature(load_text(theirs, spec["name"])) != wire_signature(
                    load_text(ours, spec["name"])):
                reason = "differs"
            else:
                reason = "renamed"      # same bytes, other names or docs: kio's class stays
            yield Plan(module, version, spec["type"], spec.get("apiKey", -1), spec["name"], reason, ours)


def render_index(plans: list[Plan]) -> str:
    lines = [
        '"""Which message versions this package holds: (api_key, version) -> class paths.',
        "",
        "Generated by tools/kiogen.py; kgroup.wire.schemas reads it. Each entry is a version",
        "kio 0.6.5 lacks (missing) or has differently from Kafka 4.4's spec (differs).",
        '"""',
        "",
        "API_NAMES = {",
    ]
    names = sorted({(p.api_key, p.module) for p in plans})
    lines += [f'    {k}: "{m}",' for k, m in names]
    lines += ["}", "", "SCHEMAS = {"]
    by_key: dict[tuple[int, int], dict[str, Plan]] = {}
    for p in plans:
        by_key.setdefault((p.api_key, p.version), {})[p.kind] = p
    for (k, v), kinds in sorted(by_key.items()):
        lines.append(f"    ({k}, {v}): {{")
        for kind in ("request", "response"):
            if kind in kinds:
                p = kinds[kind]
                lines.append(f'        "{kind}": ("{PACKAGE}.{p.module}.v{v}.{kind}:{p.class_name}",'
                             f' "{p.reason}"),')
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def files(specs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Relative path -> text of every file the generator owns under the output directory."""
    plans = [p for p in plan(specs) if p.reason != "renamed" and p.kind in ("request", "response")]
    out: dict[str, str] = {}
    out["__init__.py"] = ('"""Kafka 4.4 message classes kio 0.6.5 lacks or has differently '
                          '(generated by tools/kiogen.py)."""\n')
    out["index.py"] = render_index(plans)
    modules = sorted({p.module for p in plans})
    for m in modules:
        out[f"{m}/__init__.py"] = ""
    versions: dict[tuple[str, int], list[Plan]] = {}
    for p in plans:
        out[f"{p.module}/v{p.version}/{p.kind}.py"] = p.text
        versions.setdefault((p.module, p.version), []).append(p)
    for (m, v), ps in versions.items():
        ps.sort(key=lambda p: p.kind)
        out[f"{m}/v{v}/__init__.py"] = render_init([(p.kind, p.class_name) for p in ps])
    return out


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
    ap.add_argument("--report", action="store_true", help="list the versions written and why")
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
    existing = {str(p.relative_to(args.out)): p.read_text() for p in args.out.rglob("*.py")} \
        if args.out.exists() else {}
    if args.check:
        stale = sorted(k for k in wanted.keys() | existing.keys() if wanted.get(k) != existing.get(k))
        for k in stale:
            print(f"out of date: {args.out / k}", file=sys.stderr)
        return 1 if stale else 0
    for rel in existing.keys() - wanted.keys():
        (args.out / rel).unlink()
    for rel, text in wanted.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if existing.get(rel) != text:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

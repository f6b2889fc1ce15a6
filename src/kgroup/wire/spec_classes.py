"""Message classes in kio's format, built from Apache Kafka's JSON message specs.

kio (our Kafka codec library) ships one frozen dataclass per message version, generated from
Kafka's ``common/message/*.json``; its readers and writers introspect those classes (field
order, the ``kafka_type`` and ``tag`` in each field's metadata, the field types, the
defaults, the ClassVars ``__flexible__``, ``__header_schema__``, ...). kio 0.6.5 was
generated from an older Kafka than the 4.4 we serve: it lacks some versions. For those,
``build(spec, version)`` makes, from Kafka 4.4's spec, the class kio's generator would have
written, and kio reads and writes it like its own. ``kgroup.wire.schemas`` calls it for the
versions ``kgroup/wire/specs/index.json`` lists (on first use of each); ``tools/kiogen.py``
(``make schema``) uses the same rules to decide which versions those are (the ones where
kio has no class, or one that is not what ``build`` makes of Kafka 4.4's spec) and copies
their specs into ``kgroup/wire/specs/``.

kio's conventions, as observed in its classes (``build`` reproduces every kio class of a
spec it does not replace: ``shape(build(spec, v)) == shape(kio's class)``):
- field names in snake_case; an ``...Ms`` int32 field is a ``timedelta_i32`` duration, an
  ``...Ms`` int64 one a ``timedelta_i64`` duration unless it names a point in time
  (``...TimestampMs``, ``...AppendTimeMs``, ``...StartTimeMs``: ``datetime_i64``), and the
  name loses its ``_ms``; an int16 ``...ErrorCode`` is an ``ErrorCode``;
- ``entityType`` becomes kio's phantom type (GroupId, TopicName, BrokerId, ...);
- nested structs are classes named for their type, one per name within a message version;
- defaults: the spec's default where it gives one; primitive arrays default to ``()``;
  tagged fields always carry a default (the spec's or Kafka's implicit one).
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime
import importlib
import json
import keyword
import re
import typing
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, GroupId, ProducerId, TopicName, TransactionalId
from kio.static.constants import EntityType
from kio.static.primitive import (
    TZAware,
    Records,
    f64,
    i8,
    i16,
    i32,
    i32Timedelta,
    i64,
    i64Timedelta,
    u16,
    u32,
)

__all__ = ["Versions", "build", "message_module", "parse_spec", "shape", "wire_signature"]

# ---- reading a spec --------------------------------------------------------------------------


def strip_comments(text: str) -> str:
    """Kafka's spec files are JSON with ``//`` line comments (never inside strings)."""
    out = []
    for line in text.splitlines():
        if "//" not in line:
            out.append(line)
            continue
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


def parse_spec(text: str) -> dict[str, Any]:
    """One spec file's text (Kafka's JSON with comments) as a dict."""
    return json.loads(strip_comments(text))


@dataclass(frozen=True)
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


# ---- kio's conventions -----------------------------------------------------------------------

PRIMITIVES: dict[str, type] = {
    "bool": bool,
    "int8": i8,
    "int16": i16,
    "uint16": u16,
    "int32": i32,
    "uint32": u32,
    "int64": i64,
    "float64": f64,
    "string": str,
    "bytes": bytes,
    "records": Records,
    "uuid": uuid.UUID,
}
ENTITY_TYPES: dict[str, type] = {
    "groupId": GroupId,
    "topicName": TopicName,
    "brokerId": BrokerId,
    "transactionalId": TransactionalId,
    "producerId": ProducerId,
}
PYTHON_OF_KTYPE: dict[str, type] = {
    "timedelta_i32": i32Timedelta,
    "timedelta_i64": i64Timedelta,
    "datetime_i64": TZAware,
    "error_code": ErrorCode,
}
DURATIONS = ("timedelta_i32", "timedelta_i64")
INTEGERS = ("int8", "int16", "uint16", "int32", "uint32", "int64")
POINT_IN_TIME = ("TimestampMs", "AppendTimeMs", "StartTimeMs")
ERROR_CODES = frozenset({"ErrorCode", "PartitionErrorCode"})
RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins))
# Fields Kafka renamed after kio was generated, same bytes on the wire: versions kio lacks keep
# kio's name so one handler reads every version (spec name -> kio's name, per message).
KIO_NAMES = {
    ("TxnOffsetCommitRequest", "GenerationIdOrMemberEpoch"): "generation_id",
}
# The module every built class names as its own (it is where they are made).
MODULE = __name__


def kafka_type(field: dict[str, Any], base: str) -> str:
    name = field["name"]
    if name.endswith("Ms") and base == "int32":
        return "timedelta_i32"
    if name.endswith("Ms") and base == "int64":
        return "datetime_i64" if name.endswith(POINT_IN_TIME) else "timedelta_i64"
    if base == "int16" and name in ERROR_CODES:
        return "error_code"
    return base


def python_name(message: str, field: dict[str, Any], ktype: str | None = None) -> str:
    name = KIO_NAMES.get((message, field["name"])) or snake(field["name"])
    if name in RESERVED:
        name += "_"
    if ktype in ("timedelta_i32", "timedelta_i64", "datetime_i64"):
        name = name.removesuffix("_ms")
    return name


def header_class(kind: str, flexible: bool, api_key: int) -> type:
    """The header schema of a request or response (ApiVersions' response header is always v0)."""
    if kind == "request":
        module = f"kio.schema.request_header.v{2 if flexible else 1}.header"
        return importlib.import_module(module).RequestHeader
    v = 1 if flexible and api_key != 18 else 0
    return importlib.import_module(f"kio.schema.response_header.v{v}.header").ResponseHeader


def _default(python_type: type, ktype: str, raw: Any) -> Any:
    """The spec's default of a primitive field, as kio's classes hold it."""
    if isinstance(raw, str) and raw == "null":
        return None
    if ktype == "bool":
        return str(raw).lower() == "true"
    if ktype == "string":
        return raw
    if ktype in DURATIONS:
        duration = datetime.timedelta(milliseconds=int(str(raw), 0))
        return python_type.parse(duration)  # type: ignore[attr-defined]
    if ktype == "error_code":
        return ErrorCode(int(str(raw), 0))
    if ktype in INTEGERS:
        return python_type(int(str(raw), 0))
    if ktype == "float64":
        return f64(float(raw))
    raise ValueError(f"no default for {ktype} {raw!r}")


def _implicit_default(python_type: type, ktype: str) -> Any:
    """Kafka's default for a tagged field the spec gives none."""
    if ktype == "bool":
        return False
    if ktype == "string":
        return ""
    if ktype == "bytes":
        return b""
    if ktype == "uuid":
        return None
    if ktype == "error_code":
        return ErrorCode(0)
    if ktype in DURATIONS:
        return python_type.parse(datetime.timedelta(milliseconds=0))  # type: ignore[attr-defined]
    return python_type(0)


# ---- building one message version ------------------------------------------------------------


@dataclass
class _Build:
    """One message version being built: its spec, version, and the structs made so far."""

    spec: dict[str, Any]
    version: int
    structs: dict[str, type] = dataclasses.field(default_factory=dict)
    defaultable: dict[str, bool] = dataclasses.field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.spec["type"]

    @property
    def flexible(self) -> bool:
        return self.version in Versions.parse(self.spec.get("flexibleVersions"))

    def common(self, name: str) -> dict[str, Any] | None:
        return next((s for s in self.spec.get("commonStructs", ()) if s["name"] == name), None)

    def field(self, field: dict[str, Any]) -> tuple[str, Any, dataclasses.Field[Any]]:
        """(name, type, dataclasses.field) of one spec field at this version."""
        v = self.version
        ftype: str = field["type"]
        array = ftype.startswith("[]")
        base = ftype[2:] if array else ftype
        nullable = v in Versions.parse(field.get("nullableVersions"))
        tagged = v in Versions.parse(field.get("taggedVersions")) and "tag" in field
        raw = field.get("default")
        args: dict[str, Any] = {}
        if base in PRIMITIVES:
            ktype = kafka_type(field, base)
            name = python_name(self.spec["name"], field, ktype)
            python_type = PYTHON_OF_KTYPE.get(ktype) or ENTITY_TYPES.get(
                field.get("entityType", ""), PRIMITIVES[base])
            element: Any = python_type | None if base == "uuid" else python_type
            annotation: Any = tuple[element, ...] if array else element
            if ktype == "datetime_i64" and raw is not None and int(str(raw)) == -1:
                nullable, raw = True, "null"  # kio reads -1 as no time
            if nullable and not (base == "uuid" and not array):
                annotation = annotation | None
            metadata: dict[str, Any] = {"kafka_type": ktype}
            if tagged:
                metadata["tag"] = field["tag"]
            args["metadata"] = metadata
            if array:
                args["default"] = None if raw == "null" or (nullable and tagged and raw is None) else ()
            elif raw is not None and not (raw == "" and ktype == "bytes"):
                args["default"] = _default(python_type, ktype, raw)
            elif tagged:
                args["default"] = None if nullable else _implicit_default(python_type, ktype)
        else:
            struct = field if "fields" in field else self.common(base)
            if struct is None:
                raise ValueError(f"{self.spec['name']}: no struct {base}")
            cls = self.struct(base, struct["fields"])
            name = python_name(self.spec["name"], field)
            annotation = tuple[cls, ...] if array else cls
            if nullable:
                annotation = annotation | None
            if tagged:
                args["metadata"] = {"tag": field["tag"]}
                if nullable:
                    args["default"] = None
                elif array:
                    args["default"] = ()
                elif self.defaultable[base]:
                    args["default"] = cls()
            elif not array and raw == "null":
                args["default"] = None
        return name, annotation, dataclasses.field(**args)

    def struct(self, name: str, fields: list[dict[str, Any]], top: bool = False) -> type:
        """The class of a struct (the message itself when ``top``), made once per name."""
        if name in self.structs:
            return self.structs[name]
        members = [self.field(f) for f in fields if self.version in Versions.parse(f["versions"])]
        self.defaultable[name] = all(f.default is not dataclasses.MISSING for _, _, f in members)
        annotations: dict[str, Any] = {
            "__type__": ClassVar,
            "__version__": ClassVar[i16],
            "__flexible__": ClassVar[bool],
        }
        namespace: dict[str, Any] = {
            "__module__": MODULE,
            "__qualname__": name,
            "__annotations__": annotations,
            "__type__": getattr(EntityType, self.kind if top else "nested"),
            "__version__": i16(self.version),
            "__flexible__": self.flexible,
        }
        if self.kind not in ("data", "header"):  # a data type or a header has neither
            header = header_class(self.kind, self.flexible, self.spec["apiKey"])
            annotations["__api_key__"] = ClassVar[i16]
            annotations["__header_schema__"] = ClassVar[type[header]]  # type: ignore[valid-type]
            namespace["__api_key__"] = i16(self.spec["apiKey"])
            namespace["__header_schema__"] = header
        for field_name, annotation, field in members:
            annotations[field_name] = annotation
            namespace[field_name] = field
        cls = dataclass(frozen=True, slots=True, kw_only=True)(type(name, (), namespace))
        self.structs[name] = cls
        return cls


def build(spec: dict[str, Any], version: int) -> type:
    """The class of ``spec`` (a request, response, header or data type) at ``version``, as
    kio's generator writes it; its nested structs are built with it."""
    if version not in Versions.parse(spec["validVersions"]):
        raise ValueError(f"{spec['name']} has no version {version}")
    return _Build(spec, version).struct(spec["name"], spec["fields"], top=True)


# ---- comparing classes -----------------------------------------------------------------------

CLASS_VARS = ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__")


def shape(cls: type) -> tuple[Any, ...]:
    """Everything kio's readers and writers (and our handlers) see of a class: its name, its
    ClassVars, and per field in order its name, type (a nested class by its shape), metadata,
    default and keyword-only flag. Two classes of equal shape are the same class to kio."""
    fields = tuple(
        (f.name, _type_shape(f.type), dict(f.metadata), _value_shape(f.default),
         f.default_factory is dataclasses.MISSING, f.kw_only)
        for f in dataclasses.fields(cls)
    )
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    return (cls.__name__, tuple((n, getattr(cls, n, None)) for n in CLASS_VARS),
            params.frozen, "__slots__" in cls.__dict__, fields)


def _type_shape(t: Any) -> Any:
    if dataclasses.is_dataclass(t):
        return shape(t)  # type: ignore[arg-type]
    origin = typing.get_origin(t)
    if origin is None:
        return t
    return (origin, tuple(_type_shape(a) for a in typing.get_args(t)))


def _value_shape(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (shape(type(v)), tuple(_value_shape(getattr(v, f.name)) for f in dataclasses.fields(v)))
    return (type(v), v)


def wire_signature(cls: type) -> tuple[Any, ...]:
    """What decides a class's bytes: per field, in order, its kafka type (or its struct's
    signature), tag, arrayness, nullability, and a tagged field's default (a tagged field at
    its default is not written). Names and docs are left out."""
    out = []
    for f in dataclasses.fields(cls):
        hint = f.type
        args = typing.get_args(hint)
        nullable = type(None) in args
        inner = next((a for a in args if a is not type(None)), hint) if nullable else hint
        array = typing.get_origin(inner) is tuple
        element = typing.get_args(inner)[0] if array else inner
        nested = (typing.get_args(element)[0] if typing.get_origin(element) is not None
                  and dataclasses.is_dataclass(typing.get_args(element)[0]) else element)
        kind = wire_signature(nested) if dataclasses.is_dataclass(nested) else f.metadata.get("kafka_type")
        tag = f.metadata.get("tag")
        default = repr(f.default) if tag is not None else None
        out.append((kind, tag, array, nullable, default))
    return tuple(out)

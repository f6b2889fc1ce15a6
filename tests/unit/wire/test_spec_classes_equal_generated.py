"""Once, before the generated modules of kgroup/wire/schema/ go: the classes
kgroup.wire.spec_classes builds from the vendored specs (kgroup/wire/specs/) are the
generated classes, for every (api, version, kind) of the generated index — same class names,
ClassVars, fields in order with their types (nested classes compared alike), metadata,
defaults — and the vendored index lists the same versions for the same reasons."""

from __future__ import annotations

import dataclasses
import typing
from importlib.resources import files
from pkgutil import resolve_name

import pytest

from kgroup.wire.schema.index import API_NAMES as GENERATED_NAMES
from kgroup.wire.schema.index import SCHEMAS as GENERATED
from kgroup.wire.spec_classes import build, parse_spec, shape
from kgroup.wire.specs.index import API_NAMES, SCHEMAS

CASES = sorted((k, v, kind) for (k, v), kinds in GENERATED.items() for kind in kinds)


def test_the_vendored_index_lists_what_was_generated():
    assert API_NAMES == GENERATED_NAMES
    assert {key: {kind: why for kind, (_, why) in kinds.items()} for key, kinds in SCHEMAS.items()} == {
        key: {kind: why for kind, (_, why) in kinds.items()} for key, kinds in GENERATED.items()}


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_built_class_is_the_generated_class(api_key, version, kind):
    generated = resolve_name(GENERATED[(api_key, version)][kind][0])
    spec = parse_spec((files("kgroup.wire.specs") / SCHEMAS[(api_key, version)][kind][0]).read_text())
    built = build(spec, version)
    assert shape(built) == shape(generated)
    # Spelled out as well, for what shape() folds together.
    for ours, theirs in zip(_walk(built), _walk(generated), strict=True):
        assert ours.__name__ == theirs.__name__
        assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
        for a, b in zip(dataclasses.fields(ours), dataclasses.fields(theirs), strict=True):
            assert dict(a.metadata) == dict(b.metadata) and a.kw_only == b.kw_only
            if not dataclasses.is_dataclass(a.default):
                assert a.default == b.default and type(a.default) is type(b.default)
        for name in ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__"):
            assert getattr(ours, name) == getattr(theirs, name)
        hints_ours, hints_theirs = typing.get_type_hints(ours), typing.get_type_hints(theirs)
        assert hints_ours.keys() == hints_theirs.keys()
        assert {n: str(h) for n, h in hints_ours.items() if "ClassVar" in str(h)} == {
            n: str(h) for n, h in hints_theirs.items() if "ClassVar" in str(h)}


def _walk(cls: type) -> list[type]:
    """The class and its nested classes, depth first, in field order."""
    out = [cls]
    for f in dataclasses.fields(cls):
        for arg in [f.type, *typing.get_args(f.type)]:
            for inner in [arg, *typing.get_args(arg)]:
                if dataclasses.is_dataclass(inner) and inner not in out:
                    out += [c for c in _walk(inner) if c not in out]
    return out

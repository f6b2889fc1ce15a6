"""Every key of the broker's TOML file has a type and a range, is refused out of range with
the key as the user wrote it, and is documented in the README: generated from the config
dataclasses and the key table of broker/config.py (KEYS), so a new key without a range check
(or without a line in the README) fails here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from kgroup.broker.config import (
    FIELDS_BEHIND_KEYS,
    KEYS,
    RELATIONS,
    TABLES,
    AuthConfig,
    BrokerConfig,
    ConfigError,
    Key,
    ListenerConfig,
    LoggingConfig,
    keys_of,
    load_config,
    toml_text,
)
from kgroup.core.config import GroupConfig
from kgroup.core.transactions.config import TransactionConfig

ROOT = Path(__file__).resolve().parents[3]
CLASSES = {"": BrokerConfig, "group": GroupConfig, "log": LoggingConfig, "transactions": TransactionConfig,
           "auth": AuthConfig, "listeners": ListenerConfig}
LISTENER = {"name": "L", "address": "127.0.0.1:9093"}


def test_every_field_of_the_config_classes_is_a_key_or_set_by_one():
    for table, cls in CLASSES.items():
        for f in dataclasses.fields(cls):
            assert (table, f.name) in KEYS or (table, f.name) in FIELDS_BEHIND_KEYS, (
                f"{cls.__name__}.{f.name} has no TOML key in the key table of broker/config.py: add one with its range")
    fields = {(table, f.name) for table, cls in CLASSES.items() for f in dataclasses.fields(cls)}
    for table, name in KEYS:
        assert (table, name) in fields or name in FIELDS_BEHIND_KEYS.values() or name == "cluster", (table, name)


@pytest.mark.parametrize("key", KEYS.values(), ids=lambda k: k.where)
def test_every_key_has_a_range(key: Key):
    if key.kind == "int":
        assert key.low is not None and key.high is not None, f"{key.where}: an int key needs low and high"
    elif key.kind == "choice":
        assert key.choices
    else:
        assert key.kind in ("bool", "str", "names", "address", "fsync", "cluster"), key.kind


def _file(key: Key, value: Any) -> str:
    """A TOML file setting `key` to `value` (a listener gets a name and an address)."""
    line = f"{key.name} = {toml_text(value)}\n"
    if not key.table:
        return line
    if key.table == "listeners":
        others = "".join(f"{k} = {toml_text(v)}\n" for k, v in LISTENER.items() if k != key.name)
        return f"[[listeners]]\n{line}{others}"
    return f"[{key.table}]\n{line}"


def _bad_values(key: Key) -> list[tuple[Any, str]]:
    """(value, what the message says after the key) for each way `key` can be wrong."""
    kind = key.kind
    if kind == "int":
        return [("x", "must be a whole number"), (key.low - 1, f"must be >= {key.low}"),
                (key.high + 1, f"must be <= {key.high}")]
    if kind == "bool":
        return [("yes", "must be true or false")]
    if kind == "choice":
        return [("nonsense", f"must be one of {', '.join(key.choices)}"), (1, "must be a string")]
    if kind == "names":
        bad = [("x", "must be a list of names")]
        if key.low:
            bad.append(([], f"must name at least {key.low}"))
        if key.choices or key.pattern:
            bad.append((["nonsense"], "'nonsense' "))
        return bad
    if kind == "str":
        return [(1, "must be a string")] + ([("", "must not be empty")] if key.low else [])
    if kind == "address":
        return [("nowhere", "must look like HOST:PORT"), ("127.0.0.1:70000", "must look like HOST:PORT")]
    if kind == "fsync":
        return [("sometimes", 'must be "always", "never" or "interval:MS"'), ("interval:0", "must be")]
    assert kind == "cluster"
    return [("nonsense", "must look like")]


CASES = [pytest.param(key, value, says, id=f"{key.where} = {toml_text(value)}")
         for key in KEYS.values() for value, says in _bad_values(key)]


@pytest.mark.parametrize("key, value, says", CASES)
def test_a_bad_value_of_every_key_is_refused_with_the_key_as_written(tmp_path, key, value, says):
    path = tmp_path / "kgroup.toml"
    path.write_text(_file(key, value))
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    if key.kind == "cluster":
        assert str(err.value).startswith(f"{path}: cluster") and says in str(err.value), err.value
        return
    where = key.where if key.table != "listeners" or key.name == "name" else f"[[listeners]] 'L' {key.name}"
    assert str(err.value).startswith(f"{path}: {where} = {toml_text(value)}: {says}"), err.value


def _default(table: str, name: str) -> Any:
    return next(f.default for f in dataclasses.fields(CLASSES[table]) if f.name == name)


@pytest.mark.parametrize("rel", RELATIONS, ids=lambda r: f"{r.low}{'<' if r.strict else '<='}{r.high}")
def test_every_ordering_between_keys_blames_the_key_given(tmp_path, rel):
    path = tmp_path / "kgroup.toml"
    low, high = _default(rel.table, rel.low), _default(rel.table, rel.high)
    # The upper key alone, below the lower one's default ...
    below = low if rel.strict else low - 1
    path.write_text(f"[{rel.table}]\n{rel.high} = {below}\n")
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value).startswith(f"{path}: [{rel.table}] {rel.high} = {below}: must be >"), err.value
    # ... and the lower key alone, above the upper one's default.
    above = high if rel.strict else high + 1
    path.write_text(f"[{rel.table}]\n{rel.low} = {above}\n")
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value).startswith(f"{path}: [{rel.table}] {rel.low} = {above}: must be <"), err.value


def _documented() -> set[tuple[str, str]]:
    """(table, key) of every row of the README's Configuration table."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Configuration"):readme.index("\n## ", readme.index("## Configuration") + 1)]
    keys = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        table = re.match(r"\s*`\[\[?([\w.<> ]+)\]\]?\s", cell)
        for name in re.findall(r"`(?:\[\[?[\w.<> ]+\]\]?\s+)?(\w+)`", cell):
            keys.add((table.group(1) if table else "", name))
    return keys


def test_the_readme_documents_every_key_and_no_other():
    documented = _documented()
    missing = sorted(k for k in KEYS if k not in documented)
    assert not missing, f"keys the README's Configuration table does not document: {missing}"
    unknown = sorted(k for k in documented if k not in KEYS and k[0] in ("", *TABLES))
    assert not unknown, f"the README documents keys the broker does not take: {unknown}"


@pytest.mark.parametrize("table", ["", *TABLES])
def test_an_unknown_key_lists_only_the_documented_keys_of_its_table(tmp_path, table):
    path = tmp_path / "kgroup.toml"
    path.write_text(_file(Key(table, "bogus", "int"), 1))
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    listed = str(err.value).split("known: ", 1)[1].split(", ")
    names = [n for n in listed if not n.startswith("[")]
    assert names == sorted(keys_of(table)) and set(names) <= {k for t, k in _documented() if t == table}


def test_the_settings_test_brokers_run_with_are_in_range(tmp_path):
    # The ranges must admit what the test broker and the differential pair write: KIP-1263's
    # assignment intervals at 0 (a target at every change) were once refused as "must be >= 1".
    from kgroup.testing.broker import TEST_GROUP_SETTINGS, TEST_SETTINGS
    from kgroup.testing.process import write_config
    from kgroup.testing.reference import COMPARABLE_GROUP_SETTINGS

    path = tmp_path / "kgroup.toml"
    write_config(path, dict(TEST_SETTINGS), {**TEST_GROUP_SETTINGS, **COMPARABLE_GROUP_SETTINGS})
    group = load_config(str(path)).group
    assert group.consumer_assignment_interval_ms == 0 and group.share_assignment_interval_ms == 0

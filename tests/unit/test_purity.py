"""The pure layers (core, member, assignors) must not do I/O, read the clock, sleep or load
plug-ins.

docs/architecture.md: they take `now_ms` and return results, so the same code runs in the broker, in a
test with a manual clock, and in a Spark task. This test parses every module's imports (not
just greps) so an aliased or nested import is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kgroup"
PURE_LAYERS = ("core", "member", "assignors")
FORBIDDEN = {
    "asyncio", "socket", "time", "threading", "selectors", "subprocess", "multiprocessing",
    "os", "io", "shutil", "tempfile", "signal", "random", "secrets", "datetime", "pathlib",
    "uvloop", "concurrent",
    # Plug-ins are found at the edges (kgroup/plugins.py): entry points read the installed
    # packages and import their code.
    "importlib", "pkg_resources", "pkgutil", "runpy", "zipimport",
}
# The pure layers may use each other and the standard library's pure modules, but not the
# I/O layers of kgroup itself.
FORBIDDEN_KGROUP = {"kgroup.storage", "kgroup.wire", "kgroup.broker", "kgroup.client",
                    "kgroup.lab", "kgroup.spark", "kgroup.cli"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            names.append("__import__")
        elif isinstance(node, ast.Call) and "import_module" in (
                getattr(node.func, "id", None), getattr(node.func, "attr", None)):
            # importlib.import_module("time") would slip past the import statements.
            names.append("__import__")
    return names


# Sans-I/O state machines outside the pure layers (the client needs them too, and the client
# may not import core): the SASL session and SCRAM. Their nonces and clock come from callers.
PURE_WIRE_MODULES = ("wire/sasl.py", "wire/scram.py")


def _pure_modules() -> list[Path]:
    return sorted([p for layer in PURE_LAYERS for p in (SRC / layer).rglob("*.py")]
                  + [SRC / name for name in PURE_WIRE_MODULES])


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_pure_layer_module_does_no_io(path: Path) -> None:
    bad = []
    for name in _imports(path):
        root = name.split(".")[0]
        if root in FORBIDDEN or name == "__import__":
            bad.append(name)
        if any(name == k or name.startswith(k + ".") for k in FORBIDDEN_KGROUP):
            bad.append(name)
    assert not bad, f"{path.relative_to(SRC)} imports {bad}: pure layers take now_ms and do no I/O"


def test_purity_check_catches_a_forbidden_import(tmp_path: Path) -> None:
    # The checker itself must be able to fail.
    sample = tmp_path / "bad.py"
    sample.write_text("import time as t\nfrom asyncio import sleep\n")
    assert _imports(sample) == ["time", "asyncio"]
    sample.write_text("import importlib\nclock = importlib.import_module('time')\n")
    assert "__import__" in _imports(sample)


def test_purity_check_catches_plugin_loading(tmp_path: Path) -> None:
    sample = tmp_path / "plugins.py"
    for source in ("import importlib.metadata\n", "from importlib.metadata import entry_points\n",
                   "from importlib import metadata\n", "import pkg_resources\n"):
        sample.write_text(source)
        assert any(n.split(".")[0] in FORBIDDEN for n in _imports(sample)), source


# docs/architecture.md's layers: dependencies point down only. Each layer may import these kgroup layers.
ALLOWED_LAYERS = {
    "assignors": {"assignors"},
    "core": {"core", "assignors"},
    "member": {"member", "assignors"},
    "wire": {"wire"},
    "storage": {"storage"},
    "broker": {"broker", "client", "core", "wire", "storage", "assignors", "plugins"},
    "client": {"client", "member", "wire", "assignors", "plugins"},
    "lab": {"lab", "core", "member", "assignors"},
    "spark": {"spark", "lab", "client", "plugins"},
}


# The leaves every layer may import: Kafka's error codes (kgroup/error_codes.py), its ACL
# vocabulary (kgroup/acl_bindings.py), the record batch header's layout (kgroup/batch_layout.py),
# the registry of group kinds (kgroup/group_types.py), TOML's spelling of a value
# (kgroup/toml_values.py), the offset-reset rule the CLI and the console share
# (kgroup/offset_reset.py), Kafka's Uuid text (kgroup/kafka_uuid.py: a pure layer may
# print a Uuid, and draws one only with randomness it is given) and Java's hash codes and
# HashMap order (kgroup/java_hash.py: where Kafka's JVM walks a hash map, kgroup must too).
LEAVES = {"error_codes", "acl_bindings", "batch_layout", "group_types", "toml_values", "offset_reset",
          "kafka_uuid", "java_hash"}


def test_leaf_modules_import_nothing_of_kgroup_and_do_no_io() -> None:
    for leaf in sorted(LEAVES):
        path = SRC / f"{leaf}.py"
        bad = [n for n in _imports(path)
               if n.startswith("kgroup") or n.split(".")[0] in FORBIDDEN or n == "__import__"]
        assert not bad, f"{leaf}.py imports {bad}: a leaf module imports no kgroup layer, no I/O"


def _layer_modules() -> list[Path]:
    return sorted(p for layer in ALLOWED_LAYERS for p in (SRC / layer).rglob("*.py"))


@pytest.mark.parametrize("path", _layer_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_layers_only_import_downwards(path: Path) -> None:
    layer = path.relative_to(SRC).parts[0]
    upward = [name for name in _imports(path)
              if name.startswith("kgroup.")
              and name.split(".")[1] not in ALLOWED_LAYERS[layer] | LEAVES]
    assert not upward, f"{path.relative_to(SRC)} ({layer}/) reaches up to {upward}"


# The rebalance lab runs the pure layers under virtual time: it may draw randomness only from
# generators seeded by the scenario (random.Random(seed)), and does no I/O and no clock, so
# the same scenario and seed give the same numbers in a test, a CLI run or a Spark task.
LAB_FORBIDDEN = FORBIDDEN - {"random"}


@pytest.mark.parametrize("path", sorted((SRC / "lab").rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_lab_module_is_deterministic(path: Path) -> None:
    bad = [n for n in _imports(path) if n.split(".")[0] in LAB_FORBIDDEN or n == "__import__"]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "random" and node.attr != "Random"):
            bad.append(f"random.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            bad += [f"random.{a.name}" for a in node.names if a.name != "Random"]
    assert not bad, f"{path.relative_to(SRC)} uses {bad}: the lab is seeded and clock-free"


def test_the_plugin_loader_stands_on_the_pure_layers_only() -> None:
    # kgroup/plugins.py is an edge of its own: it imports plug-ins and registers them with
    # the pure assignors registry, and reaches no other kgroup layer.
    names = [n for n in _imports(SRC / "plugins.py") if n.startswith("kgroup.")]
    assert names and all(n.split(".")[1] == "assignors" for n in names), names


# One name per thing: a class name means one class in the whole package (a reader who meets
# `Cluster` or `Membership` should not have to ask which layer's), and no module takes another
# module's private names (what one module needs from another is public there).


def _classes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    return found


def test_no_class_name_is_defined_twice() -> None:
    twice = {name: where for name, where in _classes().items() if len(where) > 1}
    assert not twice, f"class names defined in more than one module: {twice}"


def _private_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("kgroup")):
            names += [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return names


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_another_modules_private_names(path: Path) -> None:
    names = _private_imports(path)
    assert not names, f"{path.relative_to(SRC)} imports private names {names}: make them public where they live"


def test_the_name_checks_can_fail(tmp_path: Path) -> None:
    sample = tmp_path / "bad.py"
    sample.write_text("from .commands import _log_end, table\nfrom kgroup.x import _y as y\n")
    assert _private_imports(sample) == ["_log_end", "_y"]

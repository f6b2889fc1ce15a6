"""The broker's layout (docs/architecture.md, "The broker by concern"): a small ground at the
root, one sub-package per concern, imports between concerns only where allowed, the server
kept to the process and its connection loop, and no function too long to read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BROKER = Path(__file__).resolve().parents[3] / "src" / "kgroup" / "broker"

# The ground every concern may stand on, and the modules that put the concerns together.
GROUND = {"config", "internal_topics", "durability", "http_server", "apis"}
ASSEMBLY = {"concerns", "requests", "server", "connection"}
# Which concern may import which (each may import itself and the ground). What is not listed
# reaches sideways or up: a group kind's handlers never import the data path's internals, the
# data path never imports a group coordinator, and nothing imports the assembly.
CONCERNS = {
    "security": set(),
    "cluster": set(),
    "data": {"security"},
    "groups": {"security"},
    "txn": {"security", "data", "groups", "cluster"},
    "share": {"security", "data", "groups", "cluster"},
    "streams": {"security", "groups"},
    "admin": {"security", "data", "groups"},
    "observe": {"groups", "security"},
    "control": {"cluster", "groups"},
}
MAX_ROOT_MODULES = 10
MAX_SERVER_LINES = 400
MAX_FUNCTION_LINES = 80


def _broker_imports(path: Path) -> set[str]:
    """The broker parts a module imports: a concern's name, or a root module's."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["kgroup", "broker"] and len(parts) > 2:
                out.add(parts[2])
    return out


def _part(path: Path) -> str:
    rel = path.relative_to(BROKER)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_the_root_is_a_small_ground() -> None:
    root = sorted(p.stem for p in BROKER.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root
    assert set(root) <= GROUND | ASSEMBLY | {"__init__"}, set(root) - GROUND - ASSEMBLY
    packages = {p.name for p in BROKER.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(CONCERNS), packages ^ set(CONCERNS)


@pytest.mark.parametrize("path", sorted(BROKER.rglob("*.py")), ids=lambda p: str(p.relative_to(BROKER)))
def test_imports_between_concerns_follow_the_map(path: Path) -> None:
    part = _part(path)
    if part in ASSEMBLY or part == "__init__":
        return
    allowed = (GROUND if part in GROUND else GROUND | CONCERNS[part] | {part})
    wrong = sorted(_broker_imports(path) - allowed - {part})
    assert not wrong, f"{path.relative_to(BROKER)} ({part}) imports {wrong}; allowed: {sorted(allowed)}"


def test_the_map_catches_a_sideways_import(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("from kgroup.broker.share.share_fetch import X\nimport kgroup.broker.concerns\n")
    assert _broker_imports(sample) == {"share", "concerns"}


def test_the_server_keeps_the_process_and_the_connection_loop_only() -> None:
    lines = len((BROKER / "server.py").read_text().splitlines())
    assert lines <= MAX_SERVER_LINES, f"server.py has {lines} lines"


def _long_functions(source: str) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if node.end_lineno - start + 1 > MAX_FUNCTION_LINES:
                found.append((node.name, node.end_lineno - start + 1))
    return found


@pytest.mark.parametrize("path", sorted(BROKER.rglob("*.py")), ids=lambda p: str(p.relative_to(BROKER)))
def test_no_function_is_longer_than_a_screen(path: Path) -> None:
    found = _long_functions(path.read_text())
    assert not found, f"{path.relative_to(BROKER)}: {found} (split into named steps)"


def test_the_length_check_counts_a_long_function() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(f"def f():\n{body}") == [("f", MAX_FUNCTION_LINES + 1)]

"""One registry of group kinds (kgroup/group_types.py): the core binds every kind, the
coordinator routes every kind, and no code outside the registry compares a kind by name."""

from __future__ import annotations

import ast
from pathlib import Path

from kgroup.core.coordinator import TYPES, GroupCoordinatorShard, GroupKind
from kgroup.core.kinds import KINDS, find_group, live_groups
from kgroup.group_types import CLASSIC, GROUP_TYPES, OTHER_KAFKA_TYPES, group_type, state_names, type_names

from tests.unit.core.event_scenarios import CONFIG, EventScenario, apply_op

SRC = Path(__file__).resolve().parents[3] / "src" / "kgroup"
KIND_NAMES = {t.name for t in GROUP_TYPES} | set(OTHER_KAFKA_TYPES)


def test_the_core_binds_and_routes_every_kind_of_the_registry():
    assert tuple(KINDS) == GROUP_TYPES
    assert set(TYPES.values()) == set(GROUP_TYPES) and set(TYPES) == set(GroupKind) - {GroupKind.NONE}
    coord = GroupCoordinatorShard()
    for api, by_kind in coord.routes.items():
        assert set(by_kind) == set(GroupKind), api
    for operation, by_kind in coord.operations.items():
        assert set(by_kind) == set(GroupKind), operation
    for kind, binding in KINDS.items():
        assert binding.group_class.TYPE is kind
        assert binding.groups(coord.shard) is not None


def test_the_registry_answers_by_name_and_lists_kafkas_other_types_and_states():
    assert group_type("SHARE").name == "share" and group_type("Streams").name == "streams"
    assert group_type("kafka") is None and group_type(None) is None
    assert type_names()[:len(GROUP_TYPES)] == tuple(t.name for t in GROUP_TYPES)
    assert "Dead" in state_names() and all(s in state_names() for t in GROUP_TYPES for s in t.states)
    assert CLASSIC.generation_name == "generation" and all(t.generation_name == "group epoch"
                                                           for t in GROUP_TYPES if t.by_epoch)


def test_every_group_of_every_kind_is_found_and_listed():
    ctx = EventScenario(config=CONFIG)
    for op in (["c", "join", 0], ["k", "join", 0], ["s", "join", 0]):
        apply_op(ctx, op)
    listed = {g.group_id: g.TYPE for g in live_groups(ctx.coord.shard)}
    assert listed == {"g": GROUP_TYPES[0], "cg": GROUP_TYPES[1], "sg": GROUP_TYPES[2]}
    assert all(find_group(ctx.coord.shard, gid).TYPE is kind for gid, kind in listed.items())


def _kind_compares(path: Path) -> list[str]:
    """Comparisons (==, !=, in) of a value with a kind's name spelled out."""
    def names(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {v for e in node.elts for v in names(e)}
        return set()

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            spelled = set().union(*(names(n) for n in [node.left, *node.comparators])) & KIND_NAMES
            if spelled:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} compares with {sorted(spelled)}")
    return found


def test_no_kind_is_compared_by_its_name_outside_the_registry():
    found = [hit for path in sorted(SRC.rglob("*.py")) if path.name != "group_types.py"
             for hit in _kind_compares(path)]
    assert not found, "ask the registry (kgroup/group_types.py) what a kind is instead:\n" + "\n".join(found)


def test_the_name_check_can_fail(tmp_path):
    sample = tmp_path / "views.py"
    sample.write_text('if kind == "share" or protocol in ("classic", "consumer"):\n    pass\n')
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        assert len(_kind_compares(sample)) == 2
    finally:
        SRC = saved

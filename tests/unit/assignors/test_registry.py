"""Assignor registry: Kafka's names for the built-ins, and third-party assignors found through
the `kgroup.assignors` entry-point group (at the edge, kgroup.plugins) and registered."""

from __future__ import annotations

import importlib.metadata

import pytest

from kgroup.assignors import (
    ClientAssignor, GroupSpec, MemberSpec, ServerAssignor, UnknownAssignor,
    get_client_assignor, get_server_assignor, server_assignor_names,
)
from kgroup.assignors import registry
from kgroup.plugins import load_assignor_plugins


def test_builtin_names_are_kafkas() -> None:
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        a = get_client_assignor(name)
        assert a.name == name and isinstance(a, ClientAssignor)
    for name in ("uniform", "range"):
        a = get_server_assignor(name)
        assert a.name == name and isinstance(a, ServerAssignor)
    assert server_assignor_names()[:2] == ("uniform", "range")


def test_unknown_name_raises_a_key_error() -> None:
    with pytest.raises(UnknownAssignor):
        get_client_assignor("nope")
    with pytest.raises(KeyError):
        get_server_assignor("nope")


class EverythingToFirst:
    """A toy third-party server assignor."""

    name = "first"

    def assign(self, spec, topics):
        ids = sorted(spec.members)
        return {m: ({t: tuple(range(n)) for t, n in topics.items()} if m == ids[0] else {})
                for m in ids}


class EagerAll:
    name = "all-eager"
    supported_protocols = ("eager",)

    def assign(self, members, partitions_per_topic, partition_racks=None):
        return {}


def test_third_party_assignors_come_from_entry_points(monkeypatch) -> None:
    eps = [
        importlib.metadata.EntryPoint("first", f"{__name__}:EverythingToFirst",
                                      registry.ENTRY_POINT_GROUP),
        importlib.metadata.EntryPoint("eager", f"{__name__}:EagerAll",
                                      registry.ENTRY_POINT_GROUP),
        # A plug-in cannot replace a built-in.
        importlib.metadata.EntryPoint("shadow", f"{__name__}:Shadow",
                                      registry.ENTRY_POINT_GROUP),
    ]

    def entry_points(group=None):
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_PLUGIN_CLIENT", {})
    monkeypatch.setattr(registry, "_PLUGIN_SERVER", {})
    with pytest.raises(UnknownAssignor):
        get_server_assignor("first")        # not until the edge has loaded the plug-ins
    load_assignor_plugins(again=True)
    first = get_server_assignor("first")
    spec = GroupSpec({"b": MemberSpec("b", frozenset({"t"})), "a": MemberSpec("a", frozenset({"t"}))})
    assert first.assign(spec, {"t": 2}) == {"a": {"t": (0, 1)}, "b": {}}
    assert get_client_assignor("all-eager").name == "all-eager"
    assert "first" in server_assignor_names()
    assert type(get_server_assignor("uniform")).__name__ == "UniformAssignor"
    with pytest.raises(UnknownAssignor):
        get_client_assignor("first")  # a server-side plug-in is not a client-side one


class Shadow:
    name = "uniform"

    def assign(self, spec, topics):
        raise AssertionError("a plug-in must not shadow a built-in")


def test_register_refuses_non_assignors_and_taken_names(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_PLUGIN_SERVER", {})
    assert not registry.register(object())
    assert not registry.register(Shadow())                # a built-in's name
    assert registry.register(EverythingToFirst())
    assert not registry.register(EverythingToFirst())     # the first one stays
    assert get_server_assignor("first").name == "first"

"""Assignors by name: the built-ins, plus third-party ones found through entry points.

A third-party package registers an assignor class or instance under the
`kgroup.assignors` entry-point group; the entry point's name is only a label, the object's
`name` attribute is what members ask for. Client-side assignors have `supported_protocols`
(they run in a classic-group leader); server-side ones do not. Built-in names cannot be
overridden by a plug-in.
"""

from __future__ import annotations

import importlib.metadata

from kgroup.assignors.interface import ClientAssignor, ServerAssignor
from kgroup.assignors.range import RangeAssignor
from kgroup.assignors.roundrobin import RoundRobinAssignor
from kgroup.assignors.server_range import ServerRangeAssignor
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.uniform import UniformAssignor

ENTRY_POINT_GROUP = "kgroup.assignors"

_BUILTIN_CLIENT: dict[str, ClientAssignor] = {
    a.name: a for a in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(),
                        CooperativeStickyAssignor())
}
_BUILTIN_SERVER: dict[str, ServerAssignor] = {
    a.name: a for a in (UniformAssignor(), ServerRangeAssignor())
}


class UnknownAssignor(KeyError):
    """No assignor of that name (built in or registered through entry points)."""


def discover_plugins() -> tuple[dict[str, ClientAssignor], dict[str, ServerAssignor]]:
    """Third-party assignors from the `kgroup.assignors` entry-point group, by kind."""
    client: dict[str, ClientAssignor] = {}
    server: dict[str, ServerAssignor] = {}
    eps = sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                 key=lambda ep: (ep.name, ep.value))
    for ep in eps:
        obj = ep.load()
        if isinstance(obj, type):
            obj = obj()
        name = getattr(obj, "name", None)
        if not isinstance(name, str) or not callable(getattr(obj, "assign", None)):
            continue
        if hasattr(obj, "supported_protocols"):
            if name not in _BUILTIN_CLIENT:
                client.setdefault(name, obj)
        elif name not in _BUILTIN_SERVER:
            server.setdefault(name, obj)
    return client, server


def get_client_assignor(name: str) -> ClientAssignor:
    """The client-side assignor called `name` ("range", "roundrobin", "sticky", ...)."""
    found = _BUILTIN_CLIENT.get(name)
    if found is None:
        found = discover_plugins()[0].get(name)
    if found is None:
        raise UnknownAssignor(name)
    return found


def get_server_assignor(name: str) -> ServerAssignor:
    """The server-side assignor called `name` ("uniform", "range", ...)."""
    found = _BUILTIN_SERVER.get(name)
    if found is None:
        found = discover_plugins()[1].get(name)
    if found is None:
        raise UnknownAssignor(name)
    return found


def client_assignor_names() -> tuple[str, ...]:
    """Every client-side assignor name, built-ins first."""
    return tuple(_BUILTIN_CLIENT) + tuple(sorted(discover_plugins()[0]))


def server_assignor_names() -> tuple[str, ...]:
    """Every server-side assignor name, the default (`uniform`) first."""
    return tuple(_BUILTIN_SERVER) + tuple(sorted(discover_plugins()[1]))
